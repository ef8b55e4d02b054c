"""Starting a job while the broker is down: a clear 503, and no Job row or upload left behind.

A private Redis server is started on a free port, the app's broker pointed at it, and stopped.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.urls import reverse

from config import celery_app
from core.models import Job
from tests.annotation.import_data import sample_line
from tests.annotation.test_import_upload import zip_upload
from tests.celery_worker import wait_for
from tests.judging.test_benchmark_page import shard_uploads
from tests.judging.web_data import make_version, predictions_file
from tests.published_data import published_rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

MESSAGE = "The job queue is unavailable; try again in a moment."


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A throwaway redis-server on a free port, without persistence."""

    def __init__(self, tmp_path: Path) -> None:
        self.port = _free_port()
        self.tmp_path = tmp_path
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """The broker URL of this server."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait until it answers."""
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--save", "", "--appendonly", "no"],
            cwd=self.tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        wait_for(lambda: _answers(client), timeout=10, interval=0.05)

    def stop(self) -> None:
        """Shut the server down (as an outage would) and wait for it to exit."""
        with contextlib.suppress(redis.ConnectionError):
            redis.Redis(port=self.port).shutdown(nosave=True)
        if self.process is not None:
            self.process.wait(timeout=10)

    def queued(self) -> int:
        """Messages waiting in the default queue."""
        return redis.Redis(port=self.port).llen(celery_app.conf.task_default_queue)


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


@contextlib.contextmanager
def broker_at(url: str) -> Iterator[None]:
    """Point this process's Celery app at ``url`` (not eager), and back afterwards.

    Jobs are published on a fresh connection each time, so no pooled connection needs closing.
    """
    conf = celery_app.conf
    previous = (conf.broker_url, conf.broker_write_url, conf.task_always_eager)

    conf.broker_url, conf.broker_write_url, conf.task_always_eager = url, url, False
    try:
        yield
    finally:
        conf.broker_url, conf.broker_write_url, conf.task_always_eager = previous


@pytest.fixture
def redis_down(tmp_path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    with broker_at(server.url):
        server.stop()
        yield server
    server.stop()


def stored_uploads() -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_every_start_says_the_queue_is_down_and_leaves_nothing(
    client, tmp_path, lead, project, redis_down
):
    version = make_version(project)
    before = stored_uploads()
    client.force_login(lead)
    htmx = {"HX-Request": "true"}
    started = time.monotonic()

    aggregate = client.post(reverse("aggregation-start", args=[project.slug]), headers=htmx)
    assert aggregate.status_code == 503 and aggregate["X-Refusal-Message"] == MESSAGE
    plain = client.post(reverse("aggregation-start", args=[project.slug]), follow=True)
    assert MESSAGE in plain.content.decode()

    build = client.post(reverse("version-build", args=[project.slug]), headers=htmx)
    assert build.status_code == 503 and build["X-Refusal-Message"] == MESSAGE

    path = zip_upload(tmp_path, [sample_line("q1")])
    with open(path, "rb") as handle:
        upload = client.post(reverse("import-upload", args=[project.slug]), {"file": handle})
    assert upload.status_code == 503 and MESSAGE in upload.content.decode()

    scores = client.post(
        reverse("predictions-upload", args=[project.slug, version.number]),
        {"judge": "judge-x", "file": predictions_file()},
    )
    assert scores.status_code == 503 and MESSAGE in scores.content.decode()

    rows = published_rows(2, 2, seed=3)
    bench = client.post(
        reverse("benchmark-import", args=[project.slug]),
        {"files": shard_uploads(tmp_path, rows)},
    )
    assert bench.status_code == 503 and MESSAGE in bench.content.decode()

    elapsed = time.monotonic() - started
    print(f"\n6 refused starts took {elapsed:.1f} s")
    assert Job.objects.count() == 0
    assert stored_uploads() == before  # the uploads were removed again


def test_retry_while_down_keeps_the_job_failed_then_works_when_back(
    client, lead, project, redis_down
):
    job = Job.objects.create(
        kind=Job.Kind.AGGREGATE,
        project=project,
        status=Job.Status.FAILED,
        task="aggregation.aggregate_project",
        error="boom",
    )
    client.force_login(lead)
    response = client.post(reverse("job-retry", args=[job.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 503 and response["X-Refusal-Message"] == MESSAGE
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.error == "boom"
    # The broker is back: the same requests start their jobs.
    redis_down.start()
    response = client.post(reverse("job-retry", args=[job.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 200
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED
    started = client.post(
        reverse("aggregation-start", args=[project.slug]), headers={"HX-Request": "true"}
    )
    assert started.status_code == 200
    assert Job.objects.filter(status=Job.Status.QUEUED).count() == 2
    assert redis_down.queued() == 2
