"""The judge panel job under a real worker: killed mid-run, its next attempt resumes from the
runner's cache and writes the same panel labels as an undisturbed run.

Slow: real Celery worker processes on Redis (tests/celery_worker.py), a lease of 2 s, and the
local OpenAI-compatible server of tests/judging/fake_openai.py answering slowly.
"""

from __future__ import annotations

import pytest

from annotation.models import PanelLabel
from core.models import Job
from judging.models import JudgeCall
from judging.services.panel import panel_run_execute, panel_run_start
from tests.celery_worker import wait_for, workers_on_queue
from tests.conftest import make_sample
from tests.core.test_jobs_recovery import LEASE, finished_with_sweep, worker_env
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.runner_data import LONG, SHORT, judge_config

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.celery_worker,
    pytest.mark.slow,
]

CONCURRENCY = 2
CALLS = 3 * 5 * 2  # samples x open-ended criteria x orders


@pytest.fixture(autouse=True)
def short_lease(settings):
    settings.JOB_LEASE_SECONDS = LEASE


def panel_labels() -> dict:
    return {
        (p.sample.external_id, p.criterion.key): (p.choice, p.unanimous, p.consistent, p.routable)
        for p in PanelLabel.objects.select_related("sample", "criterion")
    }


def test_a_killed_panel_worker_resumes_from_the_cache(tmp_path, lead, project):
    make_sample(project, "s1", response_a=LONG, response_b=SHORT)
    make_sample(project, "s2", response_a=SHORT, response_b=LONG)
    make_sample(project, "s3", response_a=SHORT, response_b="A dog.")
    with FakeOpenAI(delay=0.3) as server:
        config = judge_config(server.url, name="slow-judge", concurrency=CONCURRENCY)
        with workers_on_queue(tmp_path, worker_env(delay=0)) as workers:
            workers.start()
            job = panel_run_start(project=project, configs=[config], by=lead)
            wait_for(lambda: JudgeCall.objects.count() >= 6, timeout=60, interval=0.05)
            workers.kill(workers.processes[-1])
            kept = JudgeCall.objects.count()
            assert kept < CALLS
            assert not PanelLabel.objects.exists()  # written only once every answer is in
            workers.start()
            try:
                wait_for(lambda: finished_with_sweep(job), timeout=90, interval=0.25)
            except AssertionError:
                raise AssertionError(workers.logs()) from None
        assert job.status == Job.Status.SUCCEEDED, job.error
        assert job.attempts == 2
        assert job.result["cached"] >= kept and job.result["made"] == CALLS - job.result["cached"]
        assert len(server.requests) <= CALLS + CONCURRENCY
    resumed = panel_labels()
    assert len(resumed) == 15 and sum(r[3] for r in resumed.values()) == 10
    assert set(PanelLabel.objects.values_list("job_id", flat=True)) == {job.pk}
    # The same panel undisturbed, on another server (nothing from the cache): the same labels.
    with FakeOpenAI() as other:
        fresh = judge_config(
            other.url, name="fresh-judge", model="fresh-model", concurrency=CONCURRENCY
        )
        assert panel_run_execute(project=project, configs=[fresh]).made == CALLS
    assert panel_labels() == resumed
