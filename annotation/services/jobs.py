"""Background-job bookkeeping shared by every Celery task: create, start, progress, finish.

A task calls :func:`job_execute` with the job id and a function doing the work; the Job row
records status, done/total, timing, the result or the error, and a page polls it with htmx.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from ..models import Job

logger = logging.getLogger(__name__)


def job_create(
    *,
    kind: str,
    project: Any = None,
    created_by: Any = None,
    total: int = 0,
    params: dict[str, Any] | None = None,
    message: str = "",
) -> Job:
    return Job.objects.create(
        kind=kind,
        project=project,
        created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
        total=total,
        params=params or {},
        message=message,
    )


class ProgressReporter:
    """Writes done/total to the Job row at most every ``interval`` seconds (and at the end)."""

    def __init__(self, job_id: int, *, interval: float = 0.5) -> None:
        self.job_id = job_id
        self.interval = interval
        self._last = 0.0

    def __call__(self, done: int, total: int | None = None, message: str | None = None) -> None:
        now = time.monotonic()
        if now - self._last < self.interval and (total is None or done < total):
            return
        self._last = now
        fields: dict[str, Any] = {"done": done}
        if total is not None:
            fields["total"] = total
        if message is not None:
            fields["message"] = message[:300]
        Job.objects.filter(pk=self.job_id).update(**fields)


def job_execute(job_id: int, work: Callable[[Job, ProgressReporter], dict[str, Any] | None]) -> Job:
    """Run ``work(job, progress)`` for a queued job and record the outcome.

    Safe to call twice: only a queued job is started (a conditional update claims it), so a
    redelivered task does nothing. ``work`` should do its writes in its own transaction so a
    failure leaves no partial data. Its exception is stored as the job's error and logged, not
    re-raised, so a failed job is a recorded fact rather than a retry loop.
    """
    claimed = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING, started_at=timezone.now()
    )
    job = Job.objects.get(pk=job_id)
    if not claimed:
        return job
    progress = ProgressReporter(job_id)
    try:
        result = work(job, progress) or {}
    except Exception as exc:  # the job records any failure; nothing is retried blindly
        logger.exception("job %s failed", job_id)
        message = str(exc) or exc.__class__.__name__
        Job.objects.filter(pk=job_id).update(
            status=Job.Status.FAILED,
            # Shown on the job card: the message only. The traceback (server paths, code) is
            # in the log written just above.
            error=message[:20000],
            message=message[:300],
            finished_at=timezone.now(),
        )
    else:
        job.refresh_from_db(fields=["total", "done"])
        Job.objects.filter(pk=job_id).update(
            status=Job.Status.SUCCEEDED,
            result=result,
            done=max(job.done, job.total),
            finished_at=timezone.now(),
        )
    job.refresh_from_db()
    return job


def job_enqueue(job: Job, task: Any, *args: Any) -> None:
    """Send ``task.delay(job.id, *args)`` once the surrounding transaction commits."""
    transaction.on_commit(lambda: task.delay(job.id, *args))
