"""Periodic release of expired leases (scheduled by the beat entry in settings)."""

from __future__ import annotations

from celery import shared_task

from .services.assignment import slots_reclaim_expired


@shared_task(name="annotation.tasks.reclaim_expired_leases")
def reclaim_expired_leases() -> int:
    """Release every expired, uncompleted slot; returns how many were released.

    A maintenance sweep rather than a user's job, so it writes no Job row; it is idempotent, and
    claims take expired slots directly too, so a missed run only delays the release.
    """
    return slots_reclaim_expired()
