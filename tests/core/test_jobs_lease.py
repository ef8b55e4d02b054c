"""The job lease in-process: one claim wins, a silent job keeps its lease, cancel, the card."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Sample
from core.jobs import _claim, job_cancel, job_create, job_execute, jobs_sweep
from core.models import Job
from tests.conftest import make_sample


@pytest.fixture(autouse=True)
def short_lease(settings):
    settings.JOB_LEASE_SECONDS = 0.6


@pytest.mark.django_db(transaction=True)
def test_one_claim_of_many_wins(project):
    job = job_create(kind=Job.Kind.AGGREGATE, project=project)
    wins: list[bool] = []

    def claim() -> None:
        from django.db import connection

        wins.append(_claim(job.pk))
        connection.close()

    threads = [threading.Thread(target=claim) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(wins) == [False] * 5 + [True]
    job.refresh_from_db()
    assert (job.status, job.attempts) == (Job.Status.RUNNING, 1) and job.claimed_by


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_keeps_a_silent_job_its_own(project):
    job = job_create(kind=Job.Kind.AGGREGATE, project=project)
    seen: dict[str, object] = {}

    def work(job: Job, progress) -> dict:
        claimed = Job.objects.get(pk=job.pk).heartbeat_at
        time.sleep(1.5)  # two and a half leases without a progress call
        seen["beat"] = Job.objects.get(pk=job.pk).heartbeat_at > claimed
        seen["stolen"] = _claim(job.pk)  # a redelivered task finds the job taken
        return {"summary": "done"}

    job = job_execute(job.pk, work)
    assert seen == {"beat": True, "stolen": False}
    assert (job.status, job.attempts) == (Job.Status.SUCCEEDED, 1)


def cancel_from_elsewhere(job_id: int) -> None:
    from django.db import connection

    job_cancel(Job.objects.get(pk=job_id))
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_cancel_stops_the_work_and_rolls_it_back(project):
    job = job_create(kind=Job.Kind.IMPORT, project=project)

    def work(job: Job, progress) -> dict:
        from django.db import transaction

        with transaction.atomic():
            make_sample(project, "kept-if-not-cancelled")
            progress(1, 3)
            cancel = threading.Thread(target=cancel_from_elsewhere, args=[job.pk])
            cancel.start()  # the lead's click, meanwhile, on another connection
            cancel.join()
            time.sleep(0.6)
            progress(2, 3)
        raise AssertionError("the progress call should have raised")

    job = job_execute(job.pk, work)
    assert job.status == Job.Status.CANCELLED
    assert job.message == "Cancelled while running; nothing of it was kept."
    assert not Sample.objects.filter(external_id="kept-if-not-cancelled").exists()


@pytest.mark.django_db(transaction=True)
def test_a_dead_workers_job_is_claimed_again_and_out_of_attempts_fails(project):
    job = job_create(kind=Job.Kind.AGGREGATE, project=project)
    Job.objects.filter(pk=job.pk).update(task="aggregation.aggregate_project")
    assert _claim(job.pk)
    assert not _claim(job.pk)  # its heartbeat is fresh
    time.sleep(0.7)  # the worker is gone: nobody beats
    assert _claim(job.pk) and _claim(job.pk) is False
    time.sleep(0.7)
    assert _claim(job.pk)
    time.sleep(0.7)
    assert not _claim(job.pk)  # three attempts used
    assert jobs_sweep()["failed"] == 1
    assert jobs_sweep() == {"failed": 0, "resent": 0}
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.attempts == 3
    assert job.error.startswith("The worker stopped 3 times while running this job; last seen ")


@pytest.mark.django_db
def test_card_actions_are_for_the_lead(client, lead, annotator, project):
    job = job_create(kind=Job.Kind.AGGREGATE, project=project, created_by=annotator)
    Job.objects.filter(pk=job.pk).update(task="aggregation.aggregate_project")
    url = reverse("job-status", args=[job.pk])
    client.force_login(annotator)
    assert reverse("job-cancel", args=[job.pk]) not in client.get(url).content.decode()
    assert client.post(reverse("job-cancel", args=[job.pk])).status_code == 403
    client.force_login(lead)
    page = client.get(url).content.decode()
    assert (
        f'action="{reverse("job-cancel", args=[job.pk])}"' in page and "csrfmiddlewaretoken" in page
    )
    assert "onclick" not in page and "<script>" not in page
    assert client.get(reverse("job-cancel", args=[job.pk])).status_code == 405
    # No JavaScript: a plain POST, then back to the page named in "next".
    response = client.post(reverse("job-cancel", args=[job.pk]), {"next": "/elsewhere/"})
    assert response.status_code == 302 and response["Location"] == "/elsewhere/"
    card = client.post(reverse("job-cancel", args=[job.pk]), headers={"HX-Request": "true"})
    assert card.status_code == 409 and card["X-Refusal-Message"] == "The job has already finished."
    card = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "Cancelled" in card and "Retry" in card and "hx-trigger" not in card


@pytest.mark.django_db
def test_retry_is_refused_for_a_running_job_or_a_lost_upload(client, lead, project):
    job = job_create(kind=Job.Kind.AGGREGATE, project=project)
    Job.objects.filter(pk=job.pk).update(task="aggregation.aggregate_project")
    client.force_login(lead)
    response = client.post(reverse("job-retry", args=[job.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 409
    gone = job_create(kind=Job.Kind.IMPORT, project=project, params={"path": "imports/x/gone.zip"})
    Job.objects.filter(pk=gone.pk).update(
        task="annotation.tasks.import_samples",
        status=Job.Status.FAILED,
        finished_at=timezone.now() - timedelta(seconds=5),
    )
    response = client.post(reverse("job-retry", args=[gone.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 409 and "upload it again" in response["X-Refusal-Message"]
