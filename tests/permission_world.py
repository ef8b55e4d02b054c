"""A small world for the permission matrix: two projects, every role, one of each object."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.utils import timezone
from django.utils.http import urlsafe_base64_encode

from aggregation.models import DatasetFile, DatasetVersion
from annotation.models import (
    ProblemReport,
    Project,
    ProjectMember,
    Slot,
)
from annotation.services.projects import member_add, project_create
from core.jobs import job_create
from core.models import ApiToken, Job
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP
from judging.models import JudgeConfig, JudgeRun
from judging.services import scoring as judging_services
from tests.annotation.work_data import make_formal
from tests.conftest import make_user
from tests.judging.web_data import make_token, make_version, predictions_upload

#: Roles of a browser session; ``None`` is an anonymous visitor.
SESSION_ROLES = ("anonymous", "annotator", "other_annotator", "no_role", "lead")
#: API tokens: whose, with which scope; ``revoked`` is the lead's revoked predictions token.
TOKEN_ROLES = ("tok_lead_read", "tok_lead_pred", "tok_ann_read", "tok_ann_pred", "tok_revoked")
JUDGE = "org/judge-x"


@dataclass
class PermissionWorld:
    """Project P (with everything) and Q (another annotator's), users and API keys."""

    p: Project
    q: Project
    users: dict[str, User | None]
    keys: dict[str, str]
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: The same keys naming nothing: ids no object has, a judge with no run, a file not there.
    missing: dict[str, Any] = field(default_factory=dict)


def build_world() -> PermissionWorld:
    """P: samples with slots, a ready version 1 with a JSONL file, a scorecard and a judge runner
    run, jobs, tokens."""
    lead = make_user("matrix-lead", LEAD_GROUP)
    annotator = make_user("matrix-ann", ANNOTATOR_GROUP)
    other = make_user("matrix-other", ANNOTATOR_GROUP)
    p = project_create(name="Project P", slug="proj-p")
    q = project_create(name="Project Q", slug="proj-q")
    member = member_add(project=p, user=annotator)
    member_add(project=q, user=other)
    samples = make_formal(p, 2)
    criterion = p.criteria.filter(split=samples[0].split).first()
    version = make_version(p)
    record = DatasetFile(version=version, kind=DatasetFile.Kind.JSONL, size=3, sha256="0" * 64)
    record.file.save("rows.jsonl", ContentFile(b"{}\n"), save=False)
    record.save()
    judging_services.judge_run_upload(
        version=version, judge=JUDGE, file=predictions_upload(), by=lead
    )
    run = JudgeRun.objects.filter(version=version).first()
    runner_run = JudgeRun.objects.create(
        version=version, judge="org/judge-runner", source=JudgeRun.Source.RUNNER
    )
    report = ProblemReport.objects.create(sample=samples[1], reporter=annotator, kind="other")
    import_job = job_create(kind=Job.Kind.IMPORT, project=p, created_by=lead)
    score_job = job_create(kind=Job.Kind.SCORE_JUDGE, project=p, created_by=lead)
    runner_job = job_create(
        kind=Job.Kind.SCORE_JUDGE, project=p, created_by=lead, params={"runner": True}
    )
    judge_config = JudgeConfig.objects.create(
        name="matrix-judge", base_url="http://127.0.0.1:9/v1", model="m"
    )
    curate_job = job_create(kind=Job.Kind.CURATE, project=p, created_by=lead)
    panel_job = job_create(kind=Job.Kind.PANEL, project=p, created_by=lead)
    keys = {
        "tok_lead_read": make_token(lead, scope="read"),
        "tok_lead_pred": make_token(lead, scope="predictions"),
        "tok_ann_read": make_token(annotator, scope="read"),
        "tok_ann_pred": make_token(annotator, scope="predictions"),
        "tok_revoked": make_token(lead, scope="predictions"),
    }
    ApiToken.objects.filter(prefix=keys["tok_revoked"][:8]).update(revoked_at=timezone.now())
    keys["tok_other_read"] = make_token(other, scope="read")
    spare_token = ApiToken.objects.get(prefix=keys["tok_other_read"][:8])
    image = f"samples/{p.pk}/web/{'a' * 32}.png"
    target = Path(settings.MEDIA_ROOT) / image
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"\x89PNG")
    kwargs = {
        "slug": p.slug,
        "number": version.number,
        "sample_id": samples[0].pk,
        "criterion_id": criterion.pk,
        "member_id": member.pk,
        "slot_id": Slot.objects.filter(sample__project=p).first().pk,
        "run_id": run.pk,
        "runner_run": runner_run.pk,
        "pk": spare_token.pk,
        "kind": DatasetFile.Kind.JSONL,
        "fmt": "csv",
        "judge": JUDGE,
        "split": "open_ended",
        "path": image,
        "import_job": import_job.pk,
        "score_job": score_job.pk,
        "runner_job": runner_job.pk,
        "config_id": judge_config.pk,
        "report_id": report.pk,
        "user_id": annotator.pk,
        "uidb64": urlsafe_base64_encode(str(annotator.pk).encode()),
        "token": "made-up-token",
        "curate_job": curate_job.pk,
        "panel_job": panel_job.pk,
    }
    assert DatasetVersion.objects.filter(pk=version.pk, status="ready").exists()
    assert ProjectMember.objects.filter(project=p, user=annotator, is_active=True).exists()
    users = {
        "anonymous": None,
        "annotator": annotator,
        "other_annotator": other,
        "no_role": make_user("matrix-nobody"),
        "lead": lead,
    }
    return PermissionWorld(
        p=p, q=q, users=users, keys=keys, kwargs=kwargs, missing=_missing(kwargs, p.pk)
    )


#: An id no object of the world has (inside every id field's range).
NO_ID = 987654321


def _missing(kwargs: dict[str, Any], project_id: int) -> dict[str, Any]:
    """``kwargs`` with every object id, judge, user and file replaced by one that names nothing."""
    missing = {key: NO_ID for key, value in kwargs.items() if isinstance(value, int)}
    return {
        **kwargs,
        **missing,
        "judge": "org/no-such-judge",
        "path": f"samples/{project_id}/web/{'b' * 32}.png",
        "uidb64": urlsafe_base64_encode(str(NO_ID).encode()),
    }
