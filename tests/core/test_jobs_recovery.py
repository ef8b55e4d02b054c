"""Jobs after a dead worker, for real: SIGKILL a worker mid-job, start another, get the same result.

Slow tests (a few seconds each): real worker processes on Redis, a lease of 2 s and a test-only
delay at every progress call so the job is still running when the worker is killed. The sweep
(the jobs-sweep beat entry's function) is called by the test's polling loop, as a beat would.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.urls import reverse

from aggregation.models import CriterionLabel, DatasetVersion
from aggregation.services.aggregate import aggregation_start, project_aggregate
from aggregation.services.versions import version_build, version_build_start
from annotation.models import Sample
from annotation.services.projects import project_create
from core.jobs import job_create, jobs_sweep
from core.models import Job
from judging.models import Scorecard
from judging.services.scoring import predictions_upload_enqueue
from tests.aggregation.export_data import small_dataset
from tests.aggregation.votes import cast_all, criteria_of
from tests.annotation.import_data import sample_line
from tests.annotation.test_import_upload import zip_upload
from tests.celery_worker import Workers, wait_for, workers_on_queue
from tests.conftest import make_sample
from tests.judging.web_data import make_version, prediction_lines, predictions_file

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.celery_worker,
    pytest.mark.slow,
]

LEASE = 2.0


def worker_env(delay: float) -> dict[str, str]:
    """The workers' settings: a short lease and a test-only delay at every progress call."""
    return {"JOB_LEASE_SECONDS": str(LEASE), "JOB_TEST_DELAY_SECONDS": str(delay)}


@pytest.fixture(autouse=True)
def short_lease(settings):
    """This process (the sweep, the claims) uses the workers' lease."""
    settings.JOB_LEASE_SECONDS = LEASE


def running_with_progress(job: Job) -> bool:
    job.refresh_from_db()
    return job.status == Job.Status.RUNNING and job.done > 0


def finished_with_sweep(job: Job) -> bool:
    """One beat of the sweep, then whether the job has finished."""
    jobs_sweep()
    job.refresh_from_db()
    return job.is_finished


def kill_and_recover(workers: Workers, job: Job, *, pool_child: bool = False) -> float:
    """Kill the worker running ``job`` mid-run, start another; seconds from kill to finish."""
    wait_for(lambda: running_with_progress(job), timeout=60, interval=0.05)
    worker = workers.processes[-1]
    killed = time.monotonic()
    if pool_child:
        (child,) = workers.pool_children(worker)
        import os
        import signal

        os.kill(child, signal.SIGKILL)
    else:
        workers.kill(worker)
        job.refresh_from_db()
        assert job.status == Job.Status.RUNNING  # nothing else would ever change it
        workers.start()
    try:
        wait_for(lambda: finished_with_sweep(job), timeout=60, interval=0.25)
    except AssertionError:
        raise AssertionError(workers.logs()) from None
    elapsed = time.monotonic() - killed
    print(f"\n{job.get_kind_display()}: {elapsed:.1f} s from kill to {job.status}")
    return elapsed


def labels_of(project) -> dict:
    return {
        (label.sample_id, label.criterion_id): (label.outcome, label.preference)
        for label in CriterionLabel.objects.filter(sample__project=project)
    }


def test_aggregation_survives_a_killed_worker(tmp_path, lead, project, annotators):
    c = criteria_of(project)
    patterns = ["AAA", "BBt", "ABA", "ttA", "AA"]
    for i in range(6):
        sample = make_sample(project, f"s{i}")
        for j, criterion in enumerate(c):
            cast_all(sample, criterion, annotators[i % 3 : i % 3 + 3], patterns[(i + j) % 5])
    with workers_on_queue(tmp_path, worker_env(delay=1.0)) as workers:
        workers.start()
        job = aggregation_start(project=project, created_by=lead)
        kill_and_recover(workers, job)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.attempts == 2 and job.done == job.total
    recovered = labels_of(project)
    # An undisturbed run over the same votes finds every label as the recovered run left it.
    again = project_aggregate(project=project)
    assert again["splits"]["open_ended"]["updated"] == 0
    assert again["splits"]["open_ended"]["created"] == 0
    assert labels_of(project) == recovered and len(recovered) == 6 * len(c)
    assert again["summary"] == job.result["summary"]


def test_version_build_survives_a_killed_pool_child(tmp_path, lead, project, annotators):
    small_dataset(project, annotators)
    with workers_on_queue(tmp_path, worker_env(delay=2.0)) as workers:
        workers.start(pool="prefork")
        job = version_build_start(project=project, by=lead, include_votes=True)
        kill_and_recover(workers, job, pool_child=True)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.attempts == 2
    # The dead attempt's version was rebuilt under its number: no gap, no second record.
    version = DatasetVersion.objects.get(project=project)
    assert (version.number, version.status, job.result["version"]) == (1, "ready", 1)
    assert version.files.count() == len({f.kind for f in version.files.all()})
    folder = Path(version.files.first().file.path).parent
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        Path(f.file.name).name for f in version.files.all()
    )
    undisturbed = version_build(project=project, by=lead, include_votes=True)
    assert undisturbed.manifest["data_sha256"] == version.manifest["data_sha256"]
    assert undisturbed.row_count == version.row_count == job.result["rows"]


def test_import_survives_a_killed_worker(client, tmp_path, lead):
    project = project_create(name="Worker project", slug="worker-project")
    client.force_login(lead)
    path = zip_upload(tmp_path, [sample_line(f"w{i}") for i in range(8)])
    with workers_on_queue(tmp_path, worker_env(delay=0.3)) as workers:
        workers.start()
        with open(path, "rb") as handle:
            client.post(reverse("import-upload", args=[project.slug]), {"file": handle})
        job = Job.objects.get(kind=Job.Kind.IMPORT)
        kill_and_recover(workers, job)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert (job.attempts, job.result["created"], job.done) == (2, 8, 8)
    assert Sample.objects.filter(project=project).count() == 8


def figures(card: Scorecard) -> dict:
    """A scorecard's figures without what names the run or the time."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if not k.endswith(("_at", "_id"))}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return {"pacc": card.pacc, "cmr": card.cmr, "tos": card.tos, **strip(card.figures)}


def test_scoring_survives_a_killed_worker(tmp_path, lead, project):
    version = make_version(project)
    with workers_on_queue(tmp_path, worker_env(delay=0.5)) as workers:
        workers.start()
        job = predictions_upload_enqueue(
            version=version, judge="judge-x", file=predictions_file(prediction_lines()), by=lead
        )
        kill_and_recover(workers, job)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.attempts == 2
    card = Scorecard.objects.get(version=version, judge="judge-x", split="open_ended")
    # The same figures as an undisturbed run of the same file (test_scoring_job).
    undisturbed = predictions_upload_enqueue(
        version=version, judge="judge-y", file=predictions_file(prediction_lines()), by=lead
    )
    undisturbed.refresh_from_db()
    assert undisturbed.status == Job.Status.SUCCEEDED, undisturbed.error
    other = Scorecard.objects.get(version=version, judge="judge-y", split="open_ended")
    assert figures(card) == figures(other)


def test_out_of_attempts_fails_the_job_and_its_version_then_retry(
    client, tmp_path, settings, lead, project, annotators
):
    small_dataset(project, annotators)
    settings.JOB_MAX_ATTEMPTS = 1
    with workers_on_queue(tmp_path, worker_env(delay=2.0)) as workers:
        workers.start()
        job = version_build_start(project=project, by=lead)
        wait_for(lambda: running_with_progress(job), timeout=60, interval=0.05)
        workers.kill(workers.processes[-1])
        wait_for(lambda: finished_with_sweep(job), timeout=30, interval=0.25)
        assert job.status == Job.Status.FAILED
        assert job.error.startswith("The worker stopped once while running this job; last seen ")
        # The version it was building is failed, with the reason on the versions page.
        version = DatasetVersion.objects.get(project=project)
        assert version.status == "failed" and "The worker stopped once" in version.note
        client.force_login(lead)
        page = client.get(reverse("versions", args=[project.slug])).content.decode()
        assert "The worker stopped once while running this job" in page
        # Retry: the same job is queued again and builds the next number.
        card = client.post(reverse("job-retry", args=[job.pk]), headers={"HX-Request": "true"})
        assert card.status_code == 200 and "Queued" in card.content.decode()
        workers.start()
        wait_for(lambda: finished_with_sweep(job), timeout=60, interval=0.25)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert (job.attempts, job.result["version"]) == (1, 2)
    assert list(DatasetVersion.objects.values_list("number", "status").order_by("number")) == [
        (1, "failed"),
        (2, "ready"),
    ]


def test_cancel_of_a_running_import_rolls_it_back(client, tmp_path, lead):
    project = project_create(name="Cancel project", slug="cancel-project")
    client.force_login(lead)
    path = zip_upload(tmp_path, [sample_line(f"c{i}") for i in range(8)])
    with workers_on_queue(tmp_path, worker_env(delay=0.3)) as workers:
        workers.start()
        with open(path, "rb") as handle:
            client.post(reverse("import-upload", args=[project.slug]), {"file": handle})
        job = Job.objects.get(kind=Job.Kind.IMPORT)

        def writing() -> bool:
            job.refresh_from_db()
            return job.message == "Writing" and job.done > 1

        wait_for(writing, timeout=60, interval=0.05)
        response = client.post(reverse("job-cancel", args=[job.pk]), {"next": "/"})
        assert response.status_code == 302
        job.refresh_from_db()
        assert job.status == Job.Status.CANCELLED
        # The worker notices at its next progress write and rolls the import back.
        wait_for(lambda: Job.objects.get(pk=job.pk).message.startswith("Cancelled while"))
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED and job.attempts == 1
    assert Sample.objects.filter(project=project).count() == 0


def test_sweep_resends_a_lost_message_once(tmp_path, settings, lead, project):
    settings.JOB_QUEUED_RESEND_SECONDS = 1
    with workers_on_queue(tmp_path, worker_env(delay=0)) as workers:
        workers.start()
        # A job whose message never reached the broker (created, never published).
        job = job_create(kind=Job.Kind.AGGREGATE, project=project, created_by=lead)
        Job.objects.filter(pk=job.pk).update(task="aggregation.aggregate_project")
        assert jobs_sweep() == {"failed": 0, "resent": 0}  # never sent: nothing to re-send yet
        Job.objects.filter(pk=job.pk).update(enqueued_at=job.created_at)
        time.sleep(1.1)
        assert jobs_sweep() == {"failed": 0, "resent": 1}
        assert jobs_sweep() == {"failed": 0, "resent": 0}  # a second beat does not re-send it
        wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=30)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.attempts == 1
