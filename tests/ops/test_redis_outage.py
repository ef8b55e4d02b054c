"""Redis down, for real: pages keep answering, job buttons say the queue is down, a worker
survives and finishes its job once Redis is back, and nothing acknowledged is lost.

As an operator runs it: gunicorn (DEBUG off) with ``CACHE_URL`` on the broker's Redis (so
sessions are ``cached_db``), a Celery worker and beat started with the documented commands. The
Redis is a private server on a free port, without persistence, stopped and started again by the
test: a restart brings back an empty Redis, as a lost container would.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import redis
from django.utils import timezone

from aggregation.models import CriterionLabel
from aggregation.services.aggregate import aggregation_start, project_aggregate
from annotation.models import Vote
from annotation.services.projects import member_add
from core.health import check_worker
from core.models import Job, WorkerHeartbeat
from core.tokens import token_create
from tests.aggregation.votes import cast_all, criteria_of
from tests.annotation import work_data
from tests.celery_worker import wait_for
from tests.conftest import make_sample
from tests.core.test_jobs_queue_down import PrivateRedis, broker_at
from tests.ops.live import Annotator, Browser, Celery, gunicorn, logged_in, login_password

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.celery_worker,
    pytest.mark.slow,
]

QUEUE_DOWN = "The job queue is unavailable; try again in a moment."
OUTAGE_SECONDS = 10.0


@pytest.fixture
def private_redis(tmp_path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


# --- Pages while the cache (and broker) is down --------------------------------------------


def browse(annotator: Annotator, lead: Browser, api: Browser, slug: str, tally: Counter) -> None:
    """One round of what people do: two votes, the labeling page, the dashboard, an API read."""
    tally["vote", annotator.vote()] += 1
    tally["vote", annotator.vote()] += 1
    tally["label page", annotator.page()] += 1
    tally["dashboard", lead.get(f"/projects/{slug}/dashboard/").status] += 1
    tally["api", api.get("/api/projects/").status] += 1


def cached_sessions(server: PrivateRedis) -> int:
    client = redis.Redis(port=server.port, db=1)
    return len(client.keys("*django.contrib.sessions.cached_db*"))


def test_pages_answer_while_redis_is_down_and_no_acknowledged_vote_is_lost(
    tmp_path, project, lead, annotator, private_redis
):
    work_data.make_formal(project, 80)
    member_add(project=project, user=annotator)
    work_data.calibrate(project, annotator, lead)
    for user in (lead, annotator):
        login_password(user)
    key = token_create(user=lead, name="scripts", by=lead)[1]
    port = private_redis.port
    # The cache on the broker's Redis, as the README's production settings have it.
    env = {
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{port}/0",
        "CACHE_URL": f"redis://127.0.0.1:{port}/1",
    }
    with gunicorn(tmp_path, env) as server:
        ann = Annotator(logged_in(server.port, annotator.username), project.slug, annotator.pk)
        lead_browser = logged_in(server.port, lead.username)
        api = Browser(server.port, headers={"Authorization": f"Token {key}"})

        phases: dict[str, Counter] = {"before": Counter(), "down": Counter(), "after": Counter()}
        assert ann.page() == 200
        for _ in range(3):
            browse(ann, lead_browser, api, project.slug, phases["before"])
        assert cached_sessions(private_redis) == 2  # both sessions are read from Redis

        private_redis.stop()
        began = time.monotonic()
        while time.monotonic() - began < OUTAGE_SECONDS:
            browse(ann, lead_browser, api, project.slug, phases["down"])
        # Starting a job says the queue is down (htmx: the message in a header for the toast).
        start = lead_browser.post(
            f"/projects/{project.slug}/aggregate/", {}, **{"HX-Request": "true"}
        )
        assert (start.status, start.headers.get("X-Refusal-Message")) == (503, QUEUE_DOWN)
        # Someone logging in meanwhile gets a session kept in the database only.
        late = logged_in(server.port, annotator.username)
        assert late.get(f"/projects/{project.slug}/label/").status == 200
        live, ready = server.get("/healthz"), server.get("/readyz")
        assert live.status == 200 and ready.status == 503
        checks = json_checks(ready.text)
        assert checks["database"] == {"state": "ok"}
        assert checks["cache"]["state"] == "down" and checks["broker"]["state"] == "down"
        assert checks["broker"].get("detail") == "OperationalError"
        assert str(port) not in ready.text and "127.0.0.1" not in ready.text

        private_redis.start()  # empty: the sessions are read from the database again
        time.sleep(5.5)  # each web process tries Redis again after 5 s
        for _ in range(3):
            browse(ann, lead_browser, api, project.slug, phases["after"])
        assert late.get(f"/projects/{project.slug}/label/").status == 200
        assert cached_sessions(private_redis) == 3  # written back on their next read
        ready = server.get("/readyz")
        checks = json_checks(ready.text)
        assert checks["cache"] == {"state": "ok"} and checks["broker"] == {"state": "ok"}
        log = server.log()

    down = phases["down"]
    print(f"\nduring {OUTAGE_SECONDS:.0f} s with Redis down: {dict(sorted(down.items()))}")
    for phase, tally in phases.items():
        assert {status for _, status in tally} == {200}, (phase, tally)
    assert sum(down.values()) >= 25  # about 5 requests a round
    # Every acknowledged vote is stored, and nothing else was.
    stored = set(
        Vote.objects.filter(annotator=annotator).values_list(
            "sample_id", "criterion_id", "annotator_id"
        )
    )
    acked = sum(n for tally in phases.values() for (kind, _), n in tally.items() if kind == "vote")
    assert stored == ann.acked and len(stored) == acked
    # Each web process logged the outage once and its end once.
    assert 1 <= log.count("The shared cache cannot be reached (ConnectionError)") <= 2, log
    assert 1 <= log.count("The shared cache answers again after") <= 2, log
    assert "Internal Server Error" not in log


def json_checks(text: str) -> dict:
    return json.loads(text)["checks"]


# --- A worker through a broker outage mid-job ---------------------------------------------


def labels_of(project) -> dict:
    return {
        (label.sample_id, label.criterion_id): (label.outcome, label.preference)
        for label in CriterionLabel.objects.filter(sample__project=project)
    }


def test_a_worker_survives_a_broker_outage_mid_job_and_finishes_it(
    tmp_path, settings, lead, project, annotators, private_redis
):
    criteria = criteria_of(project)
    patterns = ["AAA", "BBt", "ABA", "ttA", "AA"]
    for i in range(6):
        sample = make_sample(project, f"s{i}")
        for j, criterion in enumerate(criteria):
            cast_all(sample, criterion, annotators[i % 3 : i % 3 + 3], patterns[(i + j) % 5])
    votes_before = Vote.objects.count()
    settings.WORKER_SEEN_SECONDS = 5
    celery = Celery(
        tmp_path,
        private_redis.url,
        {"JOB_TEST_DELAY_SECONDS": "3.0", "WORKER_HEARTBEAT_SECONDS": "1"},
    )
    try:
        # The README's commands: one worker (one job at a time, from the settings) and the beat.
        celery.start("worker", "worker", "-n", "w1@%h")
        celery.start("beat", "beat", "-s", str(tmp_path / "beat-schedule"))
        wait_for(lambda: "ready." in celery.log("worker"), timeout=60)
        with broker_at(private_redis.url):
            wait_for(lambda: check_worker().state == "ok", timeout=30)
            job = aggregation_start(project=project, created_by=lead)
            wait_for(lambda: running_with_progress(job), timeout=60, interval=0.05)

            private_redis.stop()
            time.sleep(OUTAGE_SECONDS)
            assert celery.alive("worker") and celery.alive("beat")
            job.refresh_from_db()
            assert job.status == Job.Status.RUNNING  # the work goes on: it needs the database
            private_redis.start()
            back = timezone.now()

            wait_for(lambda: finished(job), timeout=90, interval=0.25)
            assert job.status == Job.Status.SUCCEEDED, job.error
            assert job.attempts == 1  # never stopped, never run twice
            # The beat's heartbeat goes through Redis again, and the worker runs it.
            wait_for(lambda: WorkerHeartbeat.objects.filter(seen_at__gt=back).exists(), timeout=30)
            wait_for(lambda: check_worker().state == "ok", timeout=10)
            # The worker consumes again: a job started now runs to the end.
            again = aggregation_start(project=project, created_by=lead)
            wait_for(lambda: finished(again), timeout=90, interval=0.25)
            assert again.status == Job.Status.SUCCEEDED, again.error
        assert celery.alive("worker") and celery.alive("beat")
        worker_log = celery.log("worker")
    finally:
        celery.stop()
    assert "Connection to broker lost" in worker_log
    assert "Unrecoverable error" not in worker_log, worker_log[-5000:]
    # Nothing acknowledged was lost: the votes, and labels equal to an undisturbed run's.
    assert Vote.objects.count() == votes_before
    recovered = labels_of(project)
    undisturbed = project_aggregate(project=project)
    assert undisturbed["splits"]["open_ended"]["updated"] == 0
    assert labels_of(project) == recovered and len(recovered) == 6 * len(criteria)


def running_with_progress(job: Job) -> bool:
    job.refresh_from_db()
    return job.status == Job.Status.RUNNING and job.done > 0


def finished(job: Job) -> bool:
    job.refresh_from_db()
    return job.is_finished
