"""The judge runner under a real worker: killed mid-run it resumes, cancelled it keeps answers.

Slow tests: real Celery worker processes on Redis (tests/celery_worker.py), a lease of 2 s, and
the local OpenAI-compatible server of tests/judging/fake_openai.py answering slowly so the run is
still going when the worker is killed or the job cancelled.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from core.jobs import job_cancel
from core.models import Job
from judging.models import JudgeCall, JudgeRun
from judging.runner.run import judge_run_execute
from judging.runner.start import judge_run_start
from tests.celery_worker import wait_for, workers_on_queue
from tests.core.test_jobs_recovery import LEASE, finished_with_sweep, worker_env
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.runner_data import judge_config, runner_version

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.celery_worker,
    pytest.mark.slow,
]

CONCURRENCY = 2
CALLS = 6 * 2 * 2  # rows x runs x orders


@pytest.fixture(autouse=True)
def short_lease(settings):
    settings.JOB_LEASE_SECONDS = LEASE


def request_counts(server: FakeOpenAI) -> Counter:
    """How often each distinct request body (but its model name) reached the server."""
    return Counter(
        json.dumps({**r.body, "model": None}, sort_keys=True) for r in server.requests
    )


def test_killed_worker_resumes_and_asks_at_most_the_calls_in_flight(tmp_path, lead, project):
    version = runner_version(project)
    with FakeOpenAI(delay=0.3) as server:
        config = judge_config(server.url, concurrency=CONCURRENCY, runs=2, orders="both")
        with workers_on_queue(tmp_path, worker_env(delay=0)) as workers:
            workers.start()
            job = judge_run_start(version=version, config=config, judge="resumed", by=lead)
            wait_for(lambda: JudgeCall.objects.count() >= 6, timeout=60, interval=0.05)
            workers.kill(workers.processes[-1])
            kept = JudgeCall.objects.count()
            assert kept < CALLS
            job.refresh_from_db()
            assert job.status == Job.Status.RUNNING
            workers.start()
            try:
                wait_for(lambda: finished_with_sweep(job), timeout=90, interval=0.25)
            except AssertionError:
                raise AssertionError(workers.logs()) from None
        assert job.status == Job.Status.SUCCEEDED, job.error
        assert job.attempts == 2
        assert JudgeCall.objects.count() == CALLS
        assert len(server.requests) <= CALLS + CONCURRENCY
        # The second attempt took every stored answer from the cache.
        assert job.result["cached"] >= kept and job.result["made"] == CALLS - job.result["cached"]
        got = request_counts(server)
    resumed = predictions_of("resumed")
    # The same run undisturbed, on another server under another model name (the cache keys a
    # call by the model, not the server: so nothing comes from the cache).
    with FakeOpenAI() as other:
        fresh = judge_config(
            other.url,
            name="fresh",
            model="fresh-model",
            concurrency=CONCURRENCY,
            runs=2,
            orders="both",
        )
        result = judge_run_execute(version=version, config=fresh, judge="undisturbed", by=lead)
        assert result.made == CALLS
        expected = request_counts(other)
    # Every request was made; only calls that were in flight at the kill were made twice.
    assert not expected - got
    assert sum((got - expected).values()) <= CONCURRENCY
    assert resumed == predictions_of("undisturbed") and len(resumed) == 2


def predictions_of(judge: str) -> dict:
    return {
        run.run_index: dict(run.predictions.values_list("question_id", "prediction"))
        for run in JudgeRun.objects.filter(judge=judge)
    }


def test_cancel_stops_the_run_and_keeps_the_answers(tmp_path, lead, project):
    version = runner_version(project)
    with FakeOpenAI(delay=0.3) as server:
        config = judge_config(server.url, concurrency=CONCURRENCY, runs=2, orders="both")
        with workers_on_queue(tmp_path, worker_env(delay=0)) as workers:
            workers.start()
            job = judge_run_start(version=version, config=config, by=lead)
            wait_for(lambda: JudgeCall.objects.count() >= 4, timeout=60, interval=0.05)
            assert job_cancel(Job.objects.get(pk=job.pk))
            wait_for(
                lambda: Job.objects.get(pk=job.pk).message.startswith("Cancelled while"),
                timeout=30,
            )
            stopped_at = len(server.requests)
        job.refresh_from_db()
        assert job.status == Job.Status.CANCELLED
        kept = JudgeCall.objects.count()
        assert 4 <= kept < CALLS
        assert not JudgeRun.objects.exists()  # nothing scored
        # Starting again asks only what is missing.
        result = judge_run_execute(version=version, config=config, by=lead)
        assert result.cached == kept and result.made == CALLS - kept
        assert len(server.requests) <= stopped_at + CALLS - kept + CONCURRENCY
