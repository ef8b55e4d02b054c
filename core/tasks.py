"""Periodic tasks of the job machinery (scheduled by the beat entries in settings)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from .health import worker_heartbeat_record
from .jobs import jobs_sweep


@shared_task(name="core.jobs_sweep")
def jobs_sweep_task() -> dict[str, int]:
    """Re-send jobs whose worker died or whose message was lost; fail those out of attempts."""
    return jobs_sweep()


@shared_task(name="core.worker_heartbeat")
def worker_heartbeat_task() -> None:
    """Note that a worker runs tasks (the worker-heartbeat beat entry; see core.health)."""
    worker_heartbeat_record()


@worker_ready.connect
def _worker_ready(**kwargs: Any) -> None:
    """A worker that has just connected counts as seen, before its first heartbeat task."""
    worker_heartbeat_record()
