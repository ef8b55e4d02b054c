"""The job progress card: percentages, duration, and who may poll it."""

from datetime import timedelta

from django.utils import timezone

from core.jobs import job_create, job_execute
from core.models import Job


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
