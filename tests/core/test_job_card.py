"""The job progress card: percentages, duration, and who may poll it."""

import re
from datetime import timedelta

from django.utils import timezone

from aggregation.models import DatasetVersion
from core.jobs import job_create, job_execute
from core.models import Job
from tests.aggregation.export_data import small_dataset
from tests.judging.web_data import make_version, prediction_lines, predictions_upload


def test_job_execute_records_success_and_duration(db):
    job = job_create(kind=Job.Kind.AGGREGATE, total=4)

    def work(job, progress):
        progress(2, 4)
        return {"summary": "all good"}

    job = job_execute(job.pk, work)
    assert (job.status, job.done, job.percent, job.result) == (
        "succeeded",
        4,
        100,
        {"summary": "all good"},
    )
    assert job.duration_text.endswith(" s")
    # A second delivery of the same task does nothing.
    assert job_execute(job.pk, lambda j, p: {"summary": "again"}).result == {"summary": "all good"}


def test_job_execute_records_failure(db):
    job = job_create(kind=Job.Kind.IMPORT)

    def work(job, progress):
        raise ValueError("line 3, field split: unknown split 'x'")

    job = job_execute(job.pk, work)
    assert job.status == "failed"
    assert job.message == "line 3, field split: unknown split 'x'"
    # The card shows the message; the traceback goes to the log only.
    assert job.error == "line 3, field split: unknown split 'x'"
    assert "Traceback" not in job.error and ".py" not in job.error


def test_duration_text_formats_minutes(db):
    now = timezone.now()
    job = Job(kind="import", started_at=now, finished_at=now + timedelta(seconds=190))
    assert job.duration_text == "3 min 10 s"


def test_card_is_for_lead_or_creator(client, lead, annotator, outsider):
    job = job_create(kind=Job.Kind.IMPORT, created_by=annotator, total=10)
    client.force_login(outsider)
    assert client.get(f"/jobs/{job.pk}/").status_code == 403
    client.force_login(annotator)
    page = client.get(f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 1s"' in page and "0 / 10" in page
    assert "<html" not in page
    client.force_login(lead)
    assert client.get(f"/jobs/{job.pk}/").status_code == 200


# --- Captions: what was done, never a stale count or step ---------------------------------------

FRACTION = re.compile(r"\b\d[\d,]* / \d[\d,]*\b")


def _caption(html: str) -> str:
    found = re.search(r'<p class="muted job-caption">(.*?)</p>', html, re.S)
    assert found, html
    return found.group(1).strip()


def _card(client, job) -> str:
    return client.get(f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()


def test_a_running_job_shows_its_progress_and_step(client, lead):
    job = job_create(kind=Job.Kind.IMPORT, created_by=lead, total=1000)
    Job.objects.filter(pk=job.pk).update(status="running", done=350, message="Validating")
    client.force_login(lead)
    assert _caption(_card(client, job)) == "350 / 1,000 · Validating"


def test_a_scored_upload_says_how_many_predictions_were_stored(
    client, lead, project, django_capture_on_commit_callbacks
):
    version = make_version(project)
    lines = prediction_lines()[:7]  # 7 of the version's rows
    client.force_login(lead)
    url = f"/projects/{project.slug}/versions/{version.number}/predictions/upload/"
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"judge": "judge-x", "file": predictions_upload(lines)})
    job = Job.objects.get(kind=Job.Kind.SCORE_JUDGE)
    assert job.status == "succeeded"
    missing = version.row_count - 7
    summary = (
        f"Stored run 1 of judge-x: 7 predictions; {missing} dataset rows without a prediction "
        "count as wrong."
    )
    assert job.message == summary
    html = _card(client, job)
    assert _caption(html).startswith("Finished in ")
    assert summary in html
    assert not FRACTION.search(html), "no done / total count once the job has finished"


def test_a_refused_five_line_file_shows_no_count_of_the_dataset(
    client, lead, project, django_capture_on_commit_callbacks
):
    version = make_version(project)
    lines = [{"question_id": f"nope{i}", "prediction": "model_a"} for i in range(5)]
    client.force_login(lead)
    url = f"/projects/{project.slug}/versions/{version.number}/predictions/upload/"
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"judge": "judge-x", "file": predictions_upload(lines)})
    job = Job.objects.get(kind=Job.Kind.SCORE_JUDGE)
    assert job.status == "failed"
    html = _card(client, job)
    assert _caption(html).startswith("Failed after ")
    assert not FRACTION.search(html)
    page = client.get(f"{url}?job={job.pk}").content.decode()
    assert "predictions.jsonl was refused: 5 errors. Nothing was stored." in page


def test_a_finished_build_no_longer_says_what_it_was_writing(
    client, lead, project, annotators, django_capture_on_commit_callbacks
):
    small_dataset(project, annotators)
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/projects/{project.slug}/versions/build/", {})
    job = Job.objects.get(kind=Job.Kind.BUILD_VERSION)
    version = DatasetVersion.objects.get(project=project)
    assert job.status == "succeeded"
    assert job.message == f"Version 1 is ready: {version.row_count} rows."
    html = _card(client, job)
    assert "Writing" not in html and "zip" not in html
    assert _caption(html).startswith("Finished in ")
    page = client.get(f"/projects/{project.slug}/versions/").content.decode()
    assert "Writing the zip" not in page


def test_a_scoring_job_counts_the_lines_of_the_file(lead, project):
    """Progress is in the file's lines, so "n / N" is lines read of the file's lines."""
    from judging.services.scoring import judge_run_upload
    from tests.judging.web_data import predictions_file

    version = make_version(project)
    job = job_create(kind=Job.Kind.SCORE_JUDGE, project=project, created_by=lead)
    seen = []

    def work(job, progress):
        def record(done, total=None, message=None):
            seen.append((done, total, message))
            progress(done, total, message)

        lines = prediction_lines()[:5]
        judge_run_upload(
            version=version, judge="j", file=predictions_file(lines), by=lead, progress=record
        )
        return {"summary": "done"}

    job = job_execute(job.pk, work)
    assert seen[0] == (0, None, "Reading the predictions file")
    assert (5, 5, "Reading the predictions file") in seen
    assert seen[-1] == (5, 5, "Storing 5 predictions and scoring")
    assert (job.done, job.total) == (5, 5)
