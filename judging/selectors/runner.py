"""Reads of the judge runner's pages: the run form's configs, a run's job."""

from __future__ import annotations

from typing import Any

from aggregation.models import DatasetVersion
from core.models import Job

from ..forms import JudgeRunForm
from ..models import JudgeConfig


def runner_job_get(*, version: DatasetVersion, job_id: int | None) -> Job | None:
    """The runner job ``job_id`` of this version's project, if there is one."""
    if job_id is None:
        return None
    return Job.objects.filter(
        pk=job_id, kind=Job.Kind.SCORE_JUDGE, project=version.project, params__runner=True
    ).first()


def run_form_context(
    *, version: DatasetVersion, form: JudgeRunForm, job: Job | None
) -> dict[str, Any]:
    """The run form with its config choices (one query), and the run's job card."""
    configs = list(JudgeConfig.objects.values_list("pk", "name"))
    form.fields["config"].choices = [("", form.fields["config"].empty_label), *configs]
    return {
        "project": version.project,
        "version": version,
        "run_form": form,
        "run_job": job,
        "has_configs": bool(configs),
    }
