"""A real Celery worker process for job tests (Redis broker, the test database).

Use the ``celery_worker`` fixture from a ``transaction=True`` test: the worker is a separate
process, so it only sees committed rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from config import celery_app

ROOT = Path(__file__).resolve().parent.parent


def _test_database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the worker tests need PostgreSQL (set DATABASE_URL)")
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def wait_for(predicate, *, timeout: float = 60.0, interval: float = 0.2) -> None:
    """Poll ``predicate`` until it returns true or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


@pytest.fixture
def celery_worker(transactional_db, tmp_path) -> Iterator[subprocess.Popen]:
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if not broker.startswith("redis://"):
        pytest.skip("the worker tests need Redis (set CELERY_BROKER_URL)")
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": _test_database_url(),
            "CELERY_BROKER_URL": broker,
            "MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "VAR_DIR": str(tmp_path / "worker-var"),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    queue = f"test-{os.getpid()}-{time.monotonic_ns()}"
    log = open(tmp_path / "worker.log", "w")  # noqa: SIM115 - kept open for the process
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "-Q",
            queue,
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_default_queue)
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_default_queue = queue
    try:
        wait_for(lambda: "ready." in (tmp_path / "worker.log").read_text(), timeout=60)
        yield process
    finally:
        celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = previous
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        if process.returncode not in (0, -15, None):
            print((tmp_path / "worker.log").read_text())
