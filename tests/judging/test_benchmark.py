"""The published benchmark as a ready version: import_benchmark, then scoring, API and exports."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from rest_framework.test import APIClient

from aggregation.models import DatasetFile, DatasetRow, DatasetVersion
from annotation.models import ReferenceLabel, Sample, Slot, Vote
from judging.models import Scorecard
from judging.services.scoring import judge_run_upload
from tests.conftest import make_sample
from tests.judging.test_published_scores import reference_scores
from tests.judging.web_data import make_token
from tests.published_data import critic_lines, published_rows, write_jsonl, write_parquet

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(tmp_path):
    """Two Parquet shards, one per split, as the release ships them; and their rows."""
    rows = published_rows(6, 7, seed=11)
    shards = [
        write_parquet([r for r in rows if r["split"] == s], tmp_path / f"{s}.parquet")
        for s in ("open_ended", "reasoning")
    ]
    return rows, shards


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_import_benchmark_builds_a_ready_version_of_the_published_labels(release, client, lead):
    rows, shards = release
    out = run("import_benchmark", "bench", *map(str, shards))
    assert "Version 1 (created)" in out and "score_judge bench:v1" in out
    version = DatasetVersion.objects.get(project__slug="bench")
    assert version.status == DatasetVersion.Status.READY
    assert version.row_count == len(rows)
    stored = {
        q: (p, s, c, pref)
        for q, p, s, c, pref in DatasetRow.objects.filter(version=version).values_list(
            "question_id", "prompt_id", "split", "criterion", "preference"
        )
    }
    assert stored == {
        r["question_id"]: (r["prompt_id"], r["split"], r["criterion"], r["preference"])
        for r in rows
    }
    # No annotation at all: no slots, no votes; the labels are the imported references.
    assert not Slot.objects.exists() and not Vote.objects.exists()
    assert ReferenceLabel.objects.count() == len(rows)
    labels = version.manifest["labels"]
    assert labels["provenance"] == "published"
    assert labels["source_files"] == ["open_ended.parquet", "reasoning.parquet"]
    assert labels["votes"] == 0 and labels["annotator_slots"] == 0
    assert labels["labels"] == len(rows)
    assert version.manifest["aggregation_rule"]["name"] == "published_preferences"
    assert version.manifest["agreement"] == {}
    assert set(DatasetFile.objects.filter(version=version).values_list("kind", flat=True)) == {
        "jsonl",
        "jsonl_zip",
        "parquet",
        "manifest",
    }
    parquet = DatasetFile.objects.get(version=version, kind="parquet")
    table = pq.read_table(parquet.file.path)
    assert sorted(table.column("question_id").to_pylist()) == sorted(stored)
    first = table.slice(0, 1).to_pylist()[0]
    assert first["image"]["bytes"]  # the images travel with the version

    # The version page says where the labels came from.
    client.force_login(lead)
    page = client.get(reverse("version-detail", args=["bench", 1])).content.decode()
    assert 'id="labels-provenance"' in page and "Published labels." in page
    assert "From open_ended.parquet, reasoning.parquet" in page and "0 votes" in page

    # Again, with the same files: nothing changes.
    again = run("import_benchmark", "bench", *map(str, shards))
    assert "Version 1 (already there, unchanged)" in again
    assert DatasetVersion.objects.count() == 1
    assert Sample.objects.count() == len({r["prompt_id"] for r in rows})


def test_scores_on_the_benchmark_version_equal_the_published_rule(release, tmp_path, lead):
    rows, shards = release
    run("import_benchmark", "bench", *map(str, shards))
    outputs = critic_lines(rows, seed=12, drop=2)
    path = write_jsonl(outputs, tmp_path / "judge.jsonl")
    out = io.StringIO()
    call_command(
        "score_judge",
        "bench:v1",
        str(path),
        "--format",
        "json",
        "--n-boot",
        "0",
        stdout=out,
        stderr=io.StringIO(),
    )
    scores = json.loads(out.getvalue())["judges"]["judge"]["scores"]
    ours = {
        split: {
            "per_criterion": {k: v["acc"] for k, v in s["per_criterion"].items()},
            **{key: s[key]["value"] for key in ("avg", "pacc", "cmr", "tos")},
        }
        for split, s in scores.items()
    }
    assert ours == reference_scores(rows, outputs)

    # The same outputs uploaded: the stored scorecard has the same figures, the board shows it.
    version = DatasetVersion.objects.get(project__slug="bench")
    with path.open("rb") as handle:
        judge_run_upload(version=version, judge="judge", file=handle, by=lead)
    card = Scorecard.objects.get(version=version, judge="judge", split="reasoning")
    assert card.pacc == ours["reasoning"]["pacc"] and card.avg == ours["reasoning"]["avg"]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(lead)}")
    rows_url = reverse("api-version-rows", args=["bench", 1])
    body = api.get(rows_url, {"split": "reasoning"}).json()
    listed = body["results"] if isinstance(body, dict) else body
    assert {r["question_id"] for r in listed} == {
        r["question_id"] for r in rows if r["split"] == "reasoning"
    }
    cards = api.get(reverse("api-scorecards", args=["bench", 1])).json()
    assert {c["judge"] for c in cards} == {"judge"}


def test_a_project_with_annotation_work_is_refused(release, project):
    _, shards = release
    sample = make_sample(project, "x1")
    Slot.objects.create(sample=sample, index=1)
    with pytest.raises(CommandError):
        call_command("import_benchmark", project.slug, *map(str, shards), stderr=io.StringIO())
    assert not DatasetVersion.objects.exists()
    assert not Sample.objects.exclude(external_id="x1").exists()
