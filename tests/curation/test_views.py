"""The lead's curation page: run, funnel, pair browser, CSV, promotion, job card."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.urls import reverse

from annotation.models import Sample
from core.models import Job
from curation.models import CandidatePair
from tests.annotation.import_data import png_bytes

from .data import open_prompt, reasoning_prompt

pytestmark = pytest.mark.django_db

RIGHT_WRONG = {"model-a": "12", "model-b": "13", "model-c": "12"}


def zip_upload(tmp_path, prompts, name="gen.zip"):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("gen.jsonl", "".join(json.dumps(p) + "\n" for p in prompts))
        archive.writestr("images/red.png", png_bytes())
    return path


PROMPTS = [open_prompt(f"o{i}") for i in range(3)] + [
    reasoning_prompt(f"r{i}", RIGHT_WRONG) for i in range(3)
]
RUN = {
    "pairs_per_prompt": "2",
    "length_unit": "words",
    "seed": "0",
    "filters": ["length", "correctness"],
}


def _upload(client, project, tmp_path, capture, prompts=PROMPTS, **extra):
    path = zip_upload(tmp_path, prompts)
    with open(path, "rb") as handle, capture(execute=True):
        return client.post(
            reverse("curation", args=[project.slug]), {**RUN, **extra, "file": handle}
        )


def test_annotator_is_refused(client, project, annotator):
    client.force_login(annotator)
    assert client.get(reverse("curation", args=[project.slug])).status_code == 403
    assert client.get(reverse("curation-pairs", args=[project.slug])).status_code == 403
    assert client.get(reverse("curation-decisions-csv", args=[project.slug])).status_code == 403
    assert client.post(reverse("curation-promote", args=[project.slug]), {}).status_code == 403
    assert not Job.objects.exists()


def test_empty_page_says_what_to_do(client, project, lead):
    client.force_login(lead)
    text = client.get(reverse("curation", args=[project.slug])).content.decode()
    assert "No curation run yet: upload a generations file above." in text
    assert "0</span> prompts" in text


def test_upload_runs_the_job_and_the_page_shows_the_funnel(
    client, project, lead, tmp_path, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    response = _upload(client, project, tmp_path, django_capture_on_commit_callbacks)
    job = Job.objects.get(kind=Job.Kind.CURATE)
    assert response.status_code == 302 and f"?job={job.pk}" in response["Location"]
    assert job.status == "succeeded", job.error
    kept = CandidatePair.objects.filter(removed_by="").count()
    assert job.result["summary"] == f"12 pairs made, {kept} kept"
    assert job.result["generations"]["created"] == 6
    page = client.get(response["Location"]).content.decode()
    assert "Removed by length" in page and "Removed by correctness" in page
    assert "Reasoning · MathVista" in page and "Open-ended · WildVision" in page
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in page
    assert f"{12 - kept}</a>" in page  # the correctness count links to its pairs
    card = client.get(
        reverse("curation-job", args=[project.slug, job.pk]), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert 'id="cur-funnel" hx-swap-oob="true"' in card and "<html" not in card


def test_a_refused_file_lists_its_errors(
    client, project, lead, tmp_path, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    bad = open_prompt("o1")
    del bad["question"]
    response = _upload(
        client,
        project,
        tmp_path,
        django_capture_on_commit_callbacks,
        prompts=[open_prompt("o0"), bad],
    )
    job = Job.objects.get(kind=Job.Kind.CURATE)
    assert job.status == "failed"
    assert job.result["errors"] == [
        {"line": 2, "unit": "line", "field": "question", "message": "missing field"}
    ]
    page = client.get(response["Location"]).content.decode()
    assert "gen.zip was refused: 1 error. Nothing was changed." in page


def test_invalid_options_are_form_errors(client, project, lead):
    client.force_login(lead)
    response = client.post(
        reverse("curation", args=[project.slug]), {**RUN, "pairs_per_prompt": "-1"}
    )
    assert response.status_code == 400
    assert "Ensure this value is greater than or equal to 0." in response.content.decode()
    assert not Job.objects.exists()


def test_pair_browser_and_csv(client, project, lead, tmp_path, django_capture_on_commit_callbacks):
    client.force_login(lead)
    _upload(client, project, tmp_path, django_capture_on_commit_callbacks)
    removed = CandidatePair.objects.filter(removed_by="correctness").count()
    url = reverse("curation-pairs", args=[project.slug])
    page = client.get(url, {"status": "correctness"}).content.decode()
    assert f"{removed} pair{'s' if removed != 1 else ''}." in page
    assert "removed by correctness" in page and "correctness: removed" in page
    assert "by answer extractor" in page
    kept_page = client.get(url, {"status": "kept", "split": "open_ended"}).content.decode()
    assert "6 pairs." in kept_page and "removed by" not in kept_page
    response = client.get(reverse("curation-decisions-csv", args=[project.slug]))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    # One row per pair and filter that looked at it: 12 length rows, 6 correctness rows.
    assert len(rows) == 18
    assert {r["filter"] for r in rows} == {"length", "correctness"}
    failed = [r for r in rows if r["passed"] == "no"]
    assert len(failed) == removed and all(r["removed_by"] == "correctness" for r in failed)


def test_promotion_from_the_page(
    client, project, lead, tmp_path, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    _upload(client, project, tmp_path, django_capture_on_commit_callbacks)
    kept = CandidatePair.objects.filter(removed_by="").count()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("curation-promote", args=[project.slug]),
            {"count": "", "calibration_seeds": "0", "seed": "0"},
        )
    job = Job.objects.get(kind=Job.Kind.PROMOTE)
    assert response.status_code == 302 and job.status == "succeeded", job.error
    assert Sample.objects.filter(project=project).count() == kept
    page = client.get(response["Location"]).content.decode()
    assert f"{kept}</span> promoted" in page
    bad = client.post(
        reverse("curation-promote", args=[project.slug]),
        {"count": "0", "calibration_seeds": "0", "seed": "0"},
    )
    assert bad.status_code == 400
    assert "Ensure this value is greater than or equal to 1." in bad.content.decode()


def test_a_run_that_cannot_finish_says_why_and_keeps_the_generations(
    client, project, lead, tmp_path, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    _upload(
        client,
        project,
        tmp_path,
        django_capture_on_commit_callbacks,
        prompts=[open_prompt("o0")],
        filters=["length", "ensemble"],
    )
    job = Job.objects.get(kind=Job.Kind.CURATE)
    assert job.status == "failed"
    assert job.error.startswith(
        "The ensemble filter needs judge verdicts for every pair it checks; 2 pairs have none "
        "in the file (o0: "
    )
    assert job.error.endswith(
        "The generations file was stored (1 prompt with 3 responses read: 1 new, 0 updated, "
        "0 unchanged): run again without a file."
    )
    assert not CandidatePair.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("curation", args=[project.slug]), {**RUN, "filters": ["length"]})
    assert CandidatePair.objects.filter(project=project).count() == 2


def test_pair_browser_queries_do_not_grow_with_the_pairs(
    client,
    project,
    lead,
    tmp_path,
    django_capture_on_commit_callbacks,
    django_assert_max_num_queries,
):
    client.force_login(lead)
    _upload(client, project, tmp_path, django_capture_on_commit_callbacks)
    url = reverse("curation-pairs", args=[project.slug])
    with django_assert_max_num_queries(12):
        page = client.get(url).content.decode()
    assert page.count('class="card pair"') == 12


def test_ensemble_judges_chosen_on_the_page_run_through_the_judge_runner(
    client, project, lead, tmp_path, django_capture_on_commit_callbacks
):
    from tests.judging.fake_openai import FakeOpenAI
    from tests.judging.runner_data import judge_config

    client.force_login(lead)
    with FakeOpenAI() as server:
        for i in range(3):
            judge_config(server.url, name=f"judge-{i}", model=f"fake-vl-{i}")
        page = client.get(reverse("curation", args=[project.slug])).content.decode()
        assert 'value="judge-0"' in page and "Ensemble judges" in page
        response = _upload(
            client,
            project,
            tmp_path,
            django_capture_on_commit_callbacks,
            prompts=[open_prompt("o0")],
            filters=["ensemble"],
            judges=["judge-0", "judge-1", "judge-2"],
        )
        job = Job.objects.get(kind=Job.Kind.CURATE)
        assert job.status == "succeeded", job.error
        assert job.params["options"]["judges"] == ["judge-0", "judge-1", "judge-2"]
        pairs = CandidatePair.objects.count()
        assert len(server.requests) == 3 * pairs * 2  # each judge, each pair, both orders
    # The server's judge prefers the longer response: all three agree on pairs of unequal length.
    decisions = [p.decisions.get() for p in CandidatePair.objects.all()]
    assert all(d.figures["by"] == "judge runner" for d in decisions)
    assert response.status_code == 302
    unknown = client.post(reverse("curation", args=[project.slug]), {**RUN, "judges": ["nobody"]})
    assert unknown.status_code == 400 and "nobody" in unknown.content.decode()
