"""/healthz and /readyz: each check's state, the status code, what the body never says, the
probes answered whatever the host and scheme; the dashboard's banner when no worker was seen.

In-process (tasks eager, a per-process cache) everything a broker would need reads "not used":
the embedded demo is ready. The broker tests use a private Redis on a free port.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from config import celery_app
from core.health import worker_heartbeat_record
from core.models import Job, WorkerHeartbeat
from tests.core.test_jobs_queue_down import PrivateRedis, broker_at

pytestmark = pytest.mark.django_db

EMBEDDED = {
    "database": {"state": "ok"},
    "cache": {"state": "not used", "detail": "per-process memory"},
    "broker": {"state": "not used", "detail": "tasks run in-process"},
    "media": {"state": "ok"},
    "worker": {"state": "not used", "detail": "tasks run in-process"},
}


def readyz(client) -> tuple[int, dict]:
    response = client.get("/readyz")
    assert response["Content-Type"] == "application/json"
    assert "no-store" in response["Cache-Control"]
    return response.status_code, json.loads(response.content)


@pytest.fixture
def with_a_broker() -> Iterator[None]:
    """Tasks go to a broker (not run in-process), as with CELERY_BROKER_URL set."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    yield
    celery_app.conf.task_always_eager = previous


def test_the_embedded_set_up_is_ready_and_alive(client):
    assert client.get("/healthz").json() == {"status": "alive"}
    assert readyz(client) == (200, {"status": "ready", "checks": EMBEDDED})
    assert client.post("/readyz").status_code == 405
    assert reverse("healthz") == "/healthz" and reverse("readyz") == "/readyz"


def test_probes_answer_any_host_over_plain_http(client, settings):
    """A container probe asks 127.0.0.1:8000 over HTTP: no HTTPS redirect, no host refused."""
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["studio.example.org"]
    assert client.get("/healthz", HTTP_HOST="127.0.0.1:8000").status_code == 200
    assert client.get("/readyz", HTTP_HOST="10.1.2.3:8000").status_code == 200
    assert client.get("/accounts/login/", HTTP_HOST="studio.example.org").status_code == 301
    # The probes set no cookie and read no session.
    assert not client.get("/readyz", HTTP_HOST="127.0.0.1").cookies


def test_unwritable_media_is_not_ready(client, settings, tmp_path):
    (tmp_path / "a-file").write_text("")
    settings.MEDIA_ROOT = tmp_path / "a-file" / "media"
    status, body = readyz(client)
    assert status == 503 and body["status"] == "not ready"
    assert body["checks"]["media"] == {"state": "down", "detail": "NotADirectoryError"}
    assert str(tmp_path) not in json.dumps(body)


def test_no_worker_seen_is_not_ready_until_one_beats(client, settings, with_a_broker):
    settings.WORKER_SEEN_SECONDS = 120
    assert readyz(client)[1]["checks"]["worker"] == {"state": "down", "detail": "never seen"}
    worker_heartbeat_record()
    assert readyz(client)[1]["checks"]["worker"] == {"state": "ok", "detail": "last seen 0 s ago"}
    WorkerHeartbeat.objects.update(seen_at=timezone.now() - timedelta(seconds=300))
    assert readyz(client)[1]["checks"]["worker"] == {
        "state": "down",
        "detail": "last seen 300 s ago",
    }
    # A busy worker (its heartbeat tasks wait behind the job) is seen by the job's lease.
    Job.objects.create(
        kind=Job.Kind.AGGREGATE,
        status=Job.Status.RUNNING,
        heartbeat_at=timezone.now() - timedelta(seconds=20),
    )
    assert readyz(client)[1]["checks"]["worker"] == {
        "state": "ok",
        "detail": "last seen 20 s ago",
    }
    worker_heartbeat_record()
    assert WorkerHeartbeat.objects.count() == 1  # one row, moved forward


@pytest.mark.slow
def test_the_broker_check_follows_the_broker(client, tmp_path, with_a_broker):
    server = PrivateRedis(tmp_path)
    server.start()
    worker_heartbeat_record()
    try:
        with broker_at(server.url):
            status, body = readyz(client)
            assert (status, body["checks"]["broker"]) == (200, {"state": "ok"})
            server.stop()
            status, body = readyz(client)
            assert status == 503
            assert body["checks"]["broker"] == {"state": "down", "detail": "OperationalError"}
            assert str(server.port) not in json.dumps(body)
            assert client.get("/healthz").status_code == 200
    finally:
        server.stop()


def test_the_dashboard_says_when_no_worker_was_seen(client, settings, lead, project):
    client.force_login(lead)
    url = reverse("dashboard", args=[project.slug])
    banner = "No background worker has been seen"
    assert banner not in client.get(url).content.decode()  # in-process: no worker to miss
    celery_app.conf.task_always_eager = False  # put back by the suite's autouse fixture
    settings.WORKER_SEEN_SECONDS = 120
    page = client.get(url).content.decode()
    assert f"{banner} yet:" in page
    WorkerHeartbeat.objects.create(seen_at=timezone.now() - timedelta(minutes=10))
    assert f"{banner} for 10\xa0minutes:" in client.get(url).content.decode()
    worker_heartbeat_record()
    assert banner not in client.get(url).content.decode()
