"""The contested split: every dropped label exported on request, and judges counted on it."""

from __future__ import annotations

import hashlib
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from aggregation.models import DatasetFile, DatasetRow
from aggregation.selectors.export import version_file_readable
from aggregation.services.versions import version_build
from core.models import Job
from judging.models import Prediction, Scorecard
from judging.services.scoring import judge_run_upload
from tests.aggregation.export_data import label_with_votes

pytestmark = pytest.mark.django_db


@pytest.fixture
def dropped(data, annotators):
    """Beside the small dataset's A/B split (p1 criterion 3): two ties, and a missing vote."""
    trio = annotators[:3]
    label_with_votes(data["samples"]["p2"], data["oe"][1], trio, "Btt")
    label_with_votes(data["samples"]["r1"], data["rs"][1], trio[:2], "AB")
    label_with_votes(data["samples"]["seed"], data["oe"][1], trio, "ABA")  # a seed: left out
    return data


def contested_rows(version) -> list[dict]:
    record = version.files.get(kind=DatasetFile.Kind.CONTESTED)
    with record.file.open("rb") as fh:
        raw = fh.read()
    assert hashlib.sha256(raw).hexdigest() == record.sha256
    return [json.loads(line) for line in raw.splitlines()]


def test_a_version_with_the_contested_split_keeps_every_dropped_label(project, lead, dropped):
    oe, rs = dropped["oe"], dropped["rs"]
    version = version_build(project=project, by=lead, include_contested=True)
    rows = contested_rows(version)
    assert [(r["question_id"], r["split"], r["drop_reason"]) for r in rows] == [
        (f"p1__{oe[2].key}", "open_ended", "dropped_split"),
        (f"p2__{oe[1].key}", "open_ended", "dropped_ties"),
        (f"r1__{rs[1].key}", "reasoning", "dropped_missing"),
    ]
    first = rows[0]
    assert first["preference"] is None and first["image_path"] == "images/p1.png"
    assert first["question"] == dropped["samples"]["p1"].question
    # Every counted vote with its rationale, the annotators by pseudonym only.
    assert [(v["annotator"], v["choice"]) for v in first["votes"]] == [
        ("annotator_01", "model_a"),
        ("annotator_02", "model_b"),
        ("annotator_03", "tie"),
    ]
    assert first["votes"][0]["rationale"] == f"ann1 reasons about {oe[2].key} on p1."
    assert "ann1" not in json.dumps([v["annotator"] for r in rows for v in r["votes"]])
    # The scored rows are the kept labels only, as without the option.
    assert DatasetRow.objects.filter(version=version).count() == 4
    manifest = version.manifest
    assert manifest["options"]["include_contested"] is True
    assert manifest["counts"]["contested"] == {
        "rows": 3,
        "per_split": {
            "open_ended": {"rows": 2, "per_reason": {"dropped_split": 1, "dropped_ties": 1}},
            "reasoning": {"rows": 1, "per_reason": {"dropped_missing": 1}},
        },
    }
    listed = {f["kind"]: f for f in manifest["files"]}
    record = version.files.get(kind="contested")
    assert listed["contested"]["sha256"] == record.sha256
    assert listed["contested"]["name"] == f"{project.slug}-v1-contested.jsonl"
    # Two builds from the same labels give the same contested bytes.
    again = version_build(project=project, by=lead, include_contested=True)
    assert again.files.get(kind="contested").sha256 == record.sha256


def test_without_the_option_there_is_no_contested_file(project, lead, dropped):
    version = version_build(project=project, by=lead)
    assert not version.files.filter(kind="contested").exists()
    assert version.manifest["options"]["include_contested"] is False
    assert "contested" not in version.manifest["counts"]


def test_the_contested_file_is_the_leads_alone(project, lead, annotators, dropped):
    annotator = annotators[0]  # a member of the project
    version = version_build(project=project, by=lead, include_contested=True)
    assert version_file_readable(user=lead, version=version, kind="contested")
    assert not version_file_readable(user=annotator, version=version, kind="contested")
    assert version_file_readable(user=annotator, version=version, kind="jsonl")


def test_the_build_form_and_the_command_take_the_option(
    client, project, lead, dropped, tmp_path, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    page = client.get(reverse("versions", args=[project.slug])).content.decode()
    assert 'name="include_contested"' in page
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("version-build", args=[project.slug]), {"include_contested": "on"})
    job = Job.objects.get(kind=Job.Kind.BUILD_VERSION)
    assert job.status == Job.Status.SUCCEEDED and job.params["include_contested"] is True
    assert DatasetFile.objects.filter(kind="contested", version__number=1).exists()
    listing = client.get(reverse("versions", args=[project.slug])).content.decode()
    assert ">contested</span>" in listing and ">contested</a>" in listing
    detail = client.get(reverse("version-detail", args=[project.slug, 1])).content.decode()
    assert "contested split: 3 dropped labels" in detail
    card = client.get(reverse("version-card", args=[project.slug, 1])).content.decode()
    assert "| Contested split (dropped labels, with votes) | 3 rows |" in card
    call_command(
        "export_dataset", project.slug, "--contested", "--out", str(tmp_path), stderr=io.StringIO()
    )
    written = (tmp_path / f"{project.slug}-v2-contested.jsonl").read_text().splitlines()
    assert len(written) == 3


def test_the_scorecard_counts_judges_on_the_contested_rows_without_scoring_them(
    client, project, lead, dropped
):
    oe, rs = dropped["oe"], dropped["rs"]
    version = version_build(project=project, by=lead, include_contested=True)
    kept = dict(DatasetRow.objects.filter(version=version).values_list("question_id", "preference"))
    lines = [{"question_id": q, "prediction": p} for q, p in kept.items()]
    contested_lines = [
        {"question_id": f"p1__{oe[2].key}", "prediction": "model_a"},
        {"question_id": f"p2__{oe[1].key}", "output": "I cannot decide."},
        {"prompt_id": "r1", "criterion": rs[1].key, "prediction": "B"},
    ]
    body = "\n".join(json.dumps(line) for line in lines + contested_lines).encode()
    handle = io.BytesIO(body)
    handle.name = "judge.jsonl"
    result = judge_run_upload(version=version, judge="judge-x", file=handle, by=lead)
    assert result.run.stats["predictions"] == 4
    assert result.run.stats["contested_predictions"] == 3
    assert Prediction.objects.count() == 7
    cards = {c.split: c for c in Scorecard.objects.filter(judge="judge-x")}
    open_card = cards["open_ended"]
    # Every kept row right: the contested verdicts count neither way.
    assert open_card.figures["overall"]["value"] == 100.0
    assert open_card.figures["counts"]["rows"] == 3
    assert open_card.figures["contested"] == {
        "rows": 2,
        "answered": 2,
        "counts": {"model_a": 1, "model_b": 0, "tie": 0, "missing": 0, "invalid": 1},
        "shares": {"model_a": 50.0, "model_b": 0.0, "tie": 0.0, "invalid": 50.0},
    }
    assert cards["reasoning"].figures["contested"]["counts"]["model_b"] == 1
    client.force_login(lead)
    page = client.get(
        reverse("scorecard", args=[project.slug, version.number, "judge-x"]) + "?split=open_ended"
    ).content.decode()
    assert "Contested rows" in page
    assert "never counted as right or wrong" in page
