"""Liveness and readiness: what ``/healthz`` and ``/readyz`` answer, and when a worker was seen.

``/healthz`` says the process answers, nothing more (a container's liveness: restarting the web
server does not bring a database or a broker back). ``/readyz`` runs each check below and names
its state: ``ok``, ``not used`` (nothing to check in this set-up: no broker in the embedded demo)
or ``down``, with a short detail that names no host, address or secret. It is ready (200) when
no check is down, else 503.

A worker is "seen" when it ran the ``worker-heartbeat`` beat entry (every
``WORKER_HEARTBEAT_SECONDS``) or when a running job's lease was refreshed (a busy worker, whose
heartbeat tasks wait behind its job), within ``WORKER_SEEN_SECONDS``. The beat task goes through
the broker, so a broker outage shows as no worker seen too: jobs cannot start either way.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import caches
from django.db import DatabaseError, connection
from django.db.models import Max
from django.utils import timezone

from .jobs import broker_connection, runs_in_process
from .models import Job, WorkerHeartbeat

logger = logging.getLogger(__name__)

OK, NOT_USED, DOWN = "ok", "not used", "down"


@dataclass(frozen=True)
class Check:
    """One dependency's state, and a detail safe to show anyone."""

    state: str
    detail: str = ""

    @property
    def ready(self) -> bool:
        """True unless the dependency is down."""
        return self.state != DOWN


def _failed(what: str, exc: BaseException) -> Check:
    """A check that raised: logged with its message, answered with the error's class only."""
    logger.warning("readiness: the %s check failed: %s", what, exc)
    return Check(DOWN, type(exc).__name__)


def check_database() -> Check:
    """One round trip to the database."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return _failed("database", exc)
    return Check(OK)


def check_cache() -> Check:
    """The shared cache answers (a per-process memory cache has nothing to reach)."""
    cache = caches["default"]
    ping = getattr(cache, "ping", None)
    if ping is None:
        return Check(NOT_USED, "per-process memory")
    if not ping():
        return Check(DOWN, "unreachable: pages read sessions from the database")
    return Check(OK)


def check_broker() -> Check:
    """A fresh connection to the broker, tried once (as starting a job does)."""
    if runs_in_process():
        return Check(NOT_USED, "tasks run in-process")
    try:
        with broker_connection():
            pass
    except Exception as exc:  # any broker error: refused, timeout, authentication
        return _failed("broker", exc)
    return Check(OK)


def check_media() -> Check:
    """A file can be created (and removed) in ``MEDIA_ROOT``."""
    root = settings.MEDIA_ROOT
    try:
        os.makedirs(root, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".ready-"):
            pass
    except OSError as exc:
        return _failed("media", exc)
    return Check(OK)


@dataclass(frozen=True)
class WorkerSeen:
    """When a worker was last seen (``at`` None: never) and how long ago."""

    at: datetime | None
    ago: timedelta | None

    @property
    def recent(self) -> bool:
        """Seen within ``WORKER_SEEN_SECONDS``."""
        return self.ago is not None and self.ago.total_seconds() <= settings.WORKER_SEEN_SECONDS


def worker_seen() -> WorkerSeen | None:
    """When a worker last ran the heartbeat task or refreshed a running job's lease.

    None when tasks run in-process (no worker to see).
    """
    if runs_in_process():
        return None
    beat = WorkerHeartbeat.objects.aggregate(at=Max("seen_at"))["at"]
    lease = Job.objects.filter(status=Job.Status.RUNNING).aggregate(at=Max("heartbeat_at"))["at"]
    last = max((at for at in (beat, lease) if at is not None), default=None)
    return WorkerSeen(last, timezone.now() - last if last is not None else None)


def check_worker() -> Check:
    """A worker was seen within ``WORKER_SEEN_SECONDS``."""
    try:
        seen = worker_seen()
    except DatabaseError as exc:
        return _failed("worker", exc)
    if seen is None:
        return Check(NOT_USED, "tasks run in-process")
    if seen.ago is None:
        return Check(DOWN, "never seen")
    ago = int(seen.ago.total_seconds())
    return Check(OK if seen.recent else DOWN, f"last seen {ago} s ago")


CHECKS: dict[str, Callable[[], Check]] = {
    "database": check_database,
    "cache": check_cache,
    "broker": check_broker,
    "media": check_media,
    "worker": check_worker,
}


def readiness() -> tuple[bool, dict[str, object]]:
    """Every check, run in order: (ready, the JSON body naming each check and its state)."""
    checks = {name: check() for name, check in CHECKS.items()}
    ready = all(c.ready for c in checks.values())
    body = {
        "status": "ready" if ready else "not ready",
        "checks": {name: {k: v for k, v in asdict(c).items() if v} for name, c in checks.items()},
    }
    return ready, body


def worker_heartbeat_record() -> None:
    """Note that a worker runs tasks now (the ``worker-heartbeat`` beat entry's task)."""
    now = timezone.now()
    if not WorkerHeartbeat.objects.update(seen_at=now):
        WorkerHeartbeat.objects.create(seen_at=now)
