"""Periodic sweep of background jobs (scheduled by the jobs-sweep beat entry in settings)."""

from __future__ import annotations

from celery import shared_task

from .jobs import jobs_sweep


@shared_task(name="core.jobs_sweep")
def jobs_sweep_task() -> dict[str, int]:
    """Re-send jobs whose worker died or whose message was lost; fail those out of attempts."""
    return jobs_sweep()
