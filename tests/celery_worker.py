"""A real Celery worker process for job tests (Redis broker, the test database).

Use the ``celery_worker`` fixture from a ``transaction=True`` test: the worker is a separate
process, so it only sees committed rows.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def _worker_env(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
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
            # The fake judge servers listen on 127.0.0.1 (tests/conftest.py allows it in-process).
            "OUTBOUND_ALLOW_PRIVATE": "1",
        }
    )
    env.update(extra or {})
    return env


class Workers:
    """Starts real worker processes on one private queue; a test may SIGKILL them and start more.

    Each worker is the leader of its own process group, so killing the group kills the worker
    with its pool children, as an OOM killer or a lost machine would.
    """

    def __init__(self, tmp_path: Path, env: dict[str, str] | None = None) -> None:
        self.tmp_path = tmp_path
        self.env = env or {}
        self.queue = f"test-{os.getpid()}-{time.monotonic_ns()}"
        self.processes: list[subprocess.Popen] = []
        self._logs: list[Any] = []

    def log_path(self, index: int) -> Path:
        """The log file of the ``index``-th worker started."""
        return self.tmp_path / f"worker-{index}.log"

    def start(self, *, pool: str = "solo") -> subprocess.Popen:
        """Start a worker (``pool`` solo or prefork, one slot) and wait until it is ready."""
        index = len(self.processes)
        log = open(self.log_path(index), "w")  # noqa: SIM115 - kept open for the process
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                f"--pool={pool}",
                "--concurrency=1",
                "-Q",
                self.queue,
                "-n",
                f"w{index}-{self.queue}@%h",
                "--without-heartbeat",
                "--without-gossip",
                "--without-mingle",
                "--loglevel=INFO",
            ],
            cwd=ROOT,
            env=_worker_env(self.tmp_path, self.env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes.append(process)
        self._logs.append(log)
        wait_for(lambda: "ready." in self.log_path(index).read_text(), timeout=60)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL the worker's whole process group (the worker and its pool children)."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)

    def pool_children(self, process: subprocess.Popen) -> list[int]:
        """The pids of a prefork worker's pool children."""
        path = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        return [int(pid) for pid in path.read_text().split()]

    def stop_all(self) -> None:
        """Stop every worker still running (TERM, then KILL) and close the logs."""
        for process in self.processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(timeout=20)
                except (subprocess.TimeoutExpired, ProcessLookupError):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=20)
        for log in self._logs:
            log.close()

    def logs(self) -> str:
        """Every worker's log, for a failure message."""
        return "\n".join(self.log_path(i).read_text() for i in range(len(self.processes)))


@contextlib.contextmanager
def workers_on_queue(tmp_path: Path, env: dict[str, str] | None = None) -> Iterator[Workers]:
    """Workers on a private queue, with this process publishing to it (not eagerly)."""
    workers = Workers(tmp_path, env)
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_default_queue)
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_default_queue = workers.queue
    try:
        yield workers
    finally:
        celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = previous
        workers.stop_all()


@pytest.fixture
def celery_worker(transactional_db, tmp_path) -> Iterator[subprocess.Popen]:
    """One real solo worker, started before the test."""
    with workers_on_queue(tmp_path) as workers:
        yield workers.start()
