"""Background-job bookkeeping shared by every Celery task: create, enqueue, claim, progress, finish.

A start service creates the Job row and calls :func:`job_enqueue` inside its transaction; the
task calls :func:`job_execute` with the job id and a function doing the work; the Job row records
status, done/total, timing, the result or the error, and a page polls it with htmx.

Leases. A worker runs a job only after claiming it with one conditional UPDATE: a queued job, or
a running one whose ``heartbeat_at`` is older than ``JOB_LEASE_SECONDS`` (its worker died). The
claim adds one to ``attempts``; a job whose worker stopped ``max_attempts`` times is failed with
that said. While the work runs, a daemon thread refreshes the heartbeat every third of the lease,
and every progress write refreshes it too. Those writes go through a connection of their own
(autocommit), so pages see the progress even while the work's transaction is open, and a cancel
is seen by the next progress call, which raises :class:`JobCancelled` and rolls the work back.

Redelivery. Tasks are acknowledged late and rejected when their worker is lost (settings), so a
killed pool child's task comes back at once and a killed worker's after the broker's visibility
timeout; :func:`jobs_sweep` (a beat task) re-sends stale running jobs and long-queued ones sooner.

Publishing. :func:`job_enqueue` publishes before the row is committed, without retries, so an
unreachable broker raises :class:`JobQueueUnavailable` and the caller's transaction (the Job row)
rolls back and the stored uploads are deleted. A worker may see the message before the commit:
:func:`job_execute` then waits a few seconds for the row. In eager mode (no broker) the task runs
in-process after the commit, as before.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import DEFAULT_DB_ALIAS, OperationalError, connection, connections, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.db.models.sql import UpdateQuery
from django.db.models.sql.constants import ROW_COUNT
from django.dispatch import Signal
from django.utils import timezone

from .models import Job

logger = logging.getLogger(__name__)

#: Sent with ``job`` when a job ends without its work finishing: cancelled, or failed after its
#: worker stopped ``max_attempts`` times. Apps clean up what a dead attempt left (a version
#: stuck in ``building``, say).
job_abandoned = Signal()

#: How long a worker waits for the row of a job whose message arrived before the commit.
ROW_WAIT_SECONDS = 10.0


class JobCancelled(BaseException):
    """Raised inside a job's work when the job was cancelled; the work's transaction rolls back.

    A BaseException so the work's ``except Exception`` handlers let it through unchanged.
    """


class JobLeaseLost(BaseException):
    """Raised inside a job's work when another attempt has claimed the job; nothing is recorded."""


class JobQueueUnavailable(Exception):
    """The job queue (the broker) could not be reached; nothing was started."""

    def __init__(
        self, message: str = "The job queue is unavailable; try again in a moment."
    ) -> None:
        super().__init__(message)


def lease_seconds() -> float:
    """How long a running job's heartbeat stays valid (``JOB_LEASE_SECONDS``)."""
    return float(getattr(settings, "JOB_LEASE_SECONDS", 60))


def _max_attempts() -> int:
    return int(getattr(settings, "JOB_MAX_ATTEMPTS", 3))


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


def job_create(
    *,
    kind: str,
    project: Any = None,
    created_by: Any = None,
    total: int = 0,
    params: dict[str, Any] | None = None,
    message: str = "",
) -> Job:
    """Create a queued Job row (enqueue it with :func:`job_enqueue` in the same transaction)."""
    return Job.objects.create(
        kind=kind,
        project=project,
        created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
        total=total,
        params=params or {},
        message=message,
        max_attempts=_max_attempts(),
    )


# --- The job row, written beside the work -------------------------------------------------------


class _JobRow:
    """Writes to one attempt's job row; on PostgreSQL through a connection of its own.

    Outside a transaction on PostgreSQL (a worker), the writes use a separate autocommit
    connection shared by the heartbeat thread under a lock: they are visible at once and never
    wait for, or join, the work's transaction. Inside a transaction (a test, an eager run in a
    request) or on SQLite (one writer at a time) they use the work's connection, as before.
    """

    def __init__(self, job_id: int, attempt: int) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self._lock = threading.Lock()
        self._conn: Any = None
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            current = connections[DEFAULT_DB_ALIAS]
            settings_dict = dict(current.settings_dict)
            # Never wait long for the row: a write that would is skipped, not a stuck worker.
            options = dict(settings_dict.get("OPTIONS") or {})
            options["options"] = f"{options.get('options', '')} -c lock_timeout=2000".strip()
            settings_dict["OPTIONS"] = options
            self._conn = type(current)(settings_dict, current.alias)
            self._conn.inc_thread_sharing()

    @property
    def separate(self) -> bool:
        """True when the row is written through its own connection."""
        return self._conn is not None

    def _mine(self) -> Any:
        return Job.objects.filter(pk=self.job_id, status=Job.Status.RUNNING, attempts=self.attempt)

    def beat(self, **fields: Any) -> int:
        """Set ``fields`` and the heartbeat if this attempt still holds the job.

        Returns the rows updated (0: the job is no longer this attempt's), or -1 when the row
        was locked by someone else's open transaction and the write was skipped.
        """
        fields["heartbeat_at"] = timezone.now()
        if self._conn is None:
            return self._mine().update(**fields)
        query = self._mine().query.chain(UpdateQuery)
        query.add_update_values(fields)
        with self._lock:
            try:
                return query.get_compiler(connection=self._conn).execute_sql(ROW_COUNT)
            except OperationalError:
                logger.warning("job %s: its row is locked; write skipped", self.job_id)
                return -1

    def status(self) -> str | None:
        """The job's current status, read outside the work's transaction where possible."""
        if self._conn is None:
            return Job.objects.filter(pk=self.job_id).values_list("status", flat=True).first()
        with self._lock, self._conn.cursor() as cursor:
            cursor.execute(f"SELECT status FROM {Job._meta.db_table} WHERE id = %s", [self.job_id])
            row = cursor.fetchone()
        return row[0] if row else None

    def close(self) -> None:
        """Close the separate connection, if any."""
        if self._conn is not None:
            with self._lock:
                self._conn.close()


class _Heartbeat(threading.Thread):
    """Refreshes the lease every ``every`` seconds while the work runs, progress or not."""

    def __init__(self, row: _JobRow, every: float) -> None:
        super().__init__(name=f"job-{row.job_id}-heartbeat", daemon=True)
        self.row = row
        self.every = every
        self.lost = False
        self._stop_event = threading.Event()

    def run(self) -> None:
        """Beat until stopped or until the job is no longer this attempt's."""
        while not self._stop_event.wait(self.every):
            try:
                if self.row.beat() == 0:
                    self.lost = True
                    return
            except Exception:  # a database hiccup: the next beat tries again
                logger.warning("heartbeat of job %s failed", self.row.job_id, exc_info=True)

    def stop(self) -> None:
        """Stop beating and wait for the thread."""
        self._stop_event.set()
        self.join(timeout=10)


class ProgressReporter:
    """Writes done/total to the Job row at most every ``interval`` seconds (and at the end).

    Each write also refreshes the lease and checks the job is still this attempt's: a cancelled
    job raises :class:`JobCancelled`, a job claimed by another attempt :class:`JobLeaseLost`.
    ``JOB_TEST_DELAY_SECONDS`` (test-only, default 0) sleeps at every call so tests can stop a
    worker mid-job.
    """

    def __init__(
        self,
        job_id: int,
        *,
        interval: float = 0.5,
        row: _JobRow | None = None,
        heartbeat: _Heartbeat | None = None,
    ) -> None:
        self.job_id = job_id
        self.interval = interval
        self._row = row
        self._heartbeat = heartbeat
        self._delay = float(getattr(settings, "JOB_TEST_DELAY_SECONDS", 0) or 0)
        self._last = 0.0

    def __call__(self, done: int, total: int | None = None, message: str | None = None) -> None:
        """Record progress (throttled); raise if the job was cancelled or taken over."""
        if self._heartbeat is not None and self._heartbeat.lost:
            self._stopped()
        self._write(done, total, message)
        if self._delay:
            time.sleep(self._delay)

    def _write(self, done: int, total: int | None, message: str | None) -> None:
        now = time.monotonic()
        if now - self._last < self.interval and (total is None or done < total):
            return
        self._last = now
        fields: dict[str, Any] = {"done": done}
        if total is not None:
            fields["total"] = total
        if message is not None:
            fields["message"] = message[:300]
        if self._row is None:
            Job.objects.filter(pk=self.job_id).update(**fields)
        elif self._row.beat(**fields) == 0:
            self._stopped()

    def _stopped(self) -> None:
        status = self._row.status() if self._row else None
        if status == Job.Status.CANCELLED:
            raise JobCancelled(f"job {self.job_id} was cancelled")
        raise JobLeaseLost(f"job {self.job_id} is no longer this worker's (status {status})")


# --- Claiming and running -----------------------------------------------------------------------


def _wait_for_row(job_id: int) -> bool:
    deadline = time.monotonic() + ROW_WAIT_SECONDS
    while True:
        if Job.objects.filter(pk=job_id).exists():
            return True
        if time.monotonic() > deadline or connection.in_atomic_block:
            return False
        time.sleep(0.2)


def _dead(stale: Any) -> Q:
    """Running jobs whose heartbeat is older than ``stale`` (or was never written)."""
    return Q(status=Job.Status.RUNNING) & (Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True))


def _claim(job_id: int) -> bool:
    """Claim a queued job, or a running one whose lease expired, in one conditional UPDATE."""
    now = timezone.now()
    stale = now - timedelta(seconds=lease_seconds())
    claimable = Q(status=Job.Status.QUEUED) | _dead(stale)
    return bool(
        Job.objects.filter(claimable, pk=job_id, attempts__lt=F("max_attempts")).update(
            status=Job.Status.RUNNING,
            attempts=F("attempts") + 1,
            heartbeat_at=now,
            started_at=Coalesce(F("started_at"), Value(now)),
            claimed_by=_worker_name(),
        )
    )


def _abandon_message(job: Job) -> str:
    seen = (
        timezone.localtime(job.heartbeat_at).strftime("%Y-%m-%d %H:%M:%S %Z")
        if job.heartbeat_at
        else "never"
    )
    times = "once" if job.attempts == 1 else f"{job.attempts} times"
    return (
        f"The worker stopped {times} while running this job; last seen {seen}"
        f"{f' on {job.claimed_by}' if job.claimed_by else ''}. Nothing of it was kept."
    )


def _fail_exhausted(job_id: int) -> bool:
    """Fail a running job whose lease expired after its last allowed attempt; True if failed."""
    stale = timezone.now() - timedelta(seconds=lease_seconds())
    mine = Job.objects.filter(_dead(stale), pk=job_id, attempts__gte=F("max_attempts"))
    job = mine.first()
    if job is None:
        return False
    message = _abandon_message(job)
    failed = mine.filter(attempts=job.attempts, heartbeat_at=job.heartbeat_at).update(
        status=Job.Status.FAILED, error=message, message=message[:300], finished_at=timezone.now()
    )
    if failed:
        logger.error("job %s failed: %s", job_id, message)
        job.refresh_from_db()
        job_abandoned.send(sender=Job, job=job)
    return bool(failed)


def job_execute(
    job_id: int, work: Callable[[Job, ProgressReporter], dict[str, Any] | None]
) -> Job | None:
    """Claim the job, run ``work(job, progress)`` under a lease and record the outcome.

    Safe to deliver twice: only one claim wins, so a redelivered task for a job another worker
    is running does nothing. ``work`` should do its writes in its own transaction so a failure,
    a cancel or a killed worker leaves no partial data, and a re-run gives the same result. Its
    exception is stored as the job's error and logged, not re-raised: a failed job is a recorded
    fact rather than a retry loop (only a lost worker earns another attempt).
    """
    if not _wait_for_row(job_id):
        logger.warning("job %s does not exist (its transaction rolled back?)", job_id)
        return None
    if not _claim(job_id):
        _fail_exhausted(job_id)
        return Job.objects.get(pk=job_id)
    job = Job.objects.get(pk=job_id)
    row = _JobRow(job_id, job.attempts)
    heartbeat = _Heartbeat(row, every=max(0.2, lease_seconds() / 3)) if row.separate else None
    if heartbeat is not None:
        heartbeat.start()
    progress = ProgressReporter(job_id, row=row, heartbeat=heartbeat)
    outcome: dict[str, Any]
    try:
        result = work(job, progress) or {}
    except JobCancelled:
        logger.info("job %s was cancelled while running", job_id)
        outcome = {"message": "Cancelled while running; nothing of it was kept."}
        status = Job.Status.CANCELLED
    except JobLeaseLost:
        logger.warning("job %s: attempt %s lost its lease; stopping", job_id, job.attempts)
        return Job.objects.get(pk=job_id)
    except Exception as exc:  # the job records any failure; nothing is retried blindly
        logger.exception("job %s failed", job_id)
        message = str(exc) or exc.__class__.__name__
        # Shown on the job card: the message only. The traceback (server paths, code) is in
        # the log written just above.
        outcome = {"error": message[:20000], "message": message[:300]}
        status = Job.Status.FAILED
    else:
        current = Job.objects.filter(pk=job_id).values("done", "total").first() or {}
        outcome = {
            "result": result,
            "done": max(current.get("done", 0), current.get("total", 0)),
            # The last progress step ("Writing the zip") no longer holds: say what was done.
            "message": str(result.get("summary") or "Done")[:300],
        }
        status = Job.Status.SUCCEEDED
    finally:
        if heartbeat is not None:
            heartbeat.stop()
        row.close()
    ours = Job.objects.filter(pk=job_id, attempts=job.attempts)
    if status == Job.Status.SUCCEEDED:
        # A cancel that came after the work committed does not undo it: the job succeeded.
        ours.filter(status__in=[Job.Status.RUNNING, Job.Status.CANCELLED]).update(
            status=status, finished_at=timezone.now(), **outcome
        )
    elif not ours.filter(status=Job.Status.RUNNING).update(
        status=status, finished_at=timezone.now(), **outcome
    ):
        # Cancelled meanwhile: whatever the work raised on its way out, the cancel stands.
        status = Job.Status.CANCELLED
        ours.filter(status=status).update(
            message="Cancelled while running; nothing of it was kept.", finished_at=timezone.now()
        )
    job.refresh_from_db()
    if status == Job.Status.CANCELLED and job.status == Job.Status.CANCELLED:
        # Only this attempt's cancel: a job taken over by another attempt is left to it.
        job_abandoned.send(sender=Job, job=job)
    return job


# --- Publishing ---------------------------------------------------------------------------------


@contextlib.contextmanager
def broker_connection() -> Iterator[Any]:
    """A fresh connection to the broker, tried once: a broker outage raises at once."""
    from celery import current_app

    with current_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=3)
        yield conn


def _publish(job: Job) -> None:
    """Send the job's task once, on a fresh connection tried once: a broker outage fails fast."""
    from celery import current_app

    with broker_connection() as conn:
        current_app.send_task(job.task, args=[job.pk], retry=False, connection=conn)


def _stored_uploads(job: Job) -> list[str]:
    params = job.params or {}
    paths = [params["path"]] if params.get("path") else []
    return paths + list(params.get("paths") or [])


def _discard(paths: Iterable[str]) -> None:
    for path in paths:
        try:
            default_storage.delete(path)
        except OSError:
            logger.exception("could not remove the upload %s", path)


def job_enqueue(job: Job, task: Any, *args: Any) -> None:
    """Publish ``task(job.id)`` for a job created in the current transaction.

    With a broker the message is sent at once, without retries: if the broker is unreachable the
    job's stored uploads (``params["path"]``/``["paths"]``) are deleted and
    :class:`JobQueueUnavailable` is raised, so the caller's transaction drops the row. The
    worker waits for the commit (see :func:`job_execute`). Eager mode runs the task after the
    commit, in-process.
    """
    if args:
        raise TypeError("job tasks take the job id only; put the rest in job.params")
    from celery import current_app

    Job.objects.filter(pk=job.pk).update(task=task.name, enqueued_at=timezone.now())
    job.task = task.name
    if current_app.conf.task_always_eager:
        transaction.on_commit(lambda: task.delay(job.pk))
        return
    try:
        _publish(job)
    except Exception as exc:  # any broker error: connection refused, timeout, auth
        logger.warning("could not queue job %s: %s", job.pk, exc)
        _discard(_stored_uploads(job))
        raise JobQueueUnavailable() from exc


# --- Cancel, retry, sweep -----------------------------------------------------------------------


def job_cancel(job: Job) -> bool:
    """Cancel a queued or running job; the running work stops at its next progress write."""
    stale = timezone.now() - timedelta(seconds=lease_seconds())
    worker_gone = (
        job.status == Job.Status.QUEUED or Job.objects.filter(_dead(stale), pk=job.pk).exists()
    )
    cancelled = Job.objects.filter(
        pk=job.pk, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]
    ).update(
        status=Job.Status.CANCELLED,
        message="Cancelled",
        finished_at=timezone.now(),
    )
    job.refresh_from_db()
    if cancelled and worker_gone:
        # No work will record the cancel: a queued job has none, a dead worker's never ends.
        # A live worker's work stops at its next progress write and job_execute sends it.
        job_abandoned.send(sender=Job, job=job)
    return bool(cancelled)


class JobNotRetriable(Exception):
    """The job cannot be queued again (not failed or cancelled, or its upload is gone)."""


def job_retry(job: Job) -> Job:
    """Queue a failed or cancelled job again, as the same job with fresh attempts.

    The job keeps its id (so the page the lead watches goes on), its params and its kind; the
    previous error is dropped from the card but logged. Raises :class:`JobNotRetriable` or
    :class:`JobQueueUnavailable`.
    """
    if not job.can_retry:
        raise JobNotRetriable("Only a failed or cancelled job can be retried.")
    missing = [p for p in _stored_uploads(job) if not default_storage.exists(p)]
    if missing:
        raise JobNotRetriable("The uploaded file of this job is no longer kept; upload it again.")
    logger.info("job %s retried after: %s", job.pk, job.error or job.message)
    with transaction.atomic():
        requeued = Job.objects.filter(
            pk=job.pk, status__in=[Job.Status.FAILED, Job.Status.CANCELLED]
        ).update(
            status=Job.Status.QUEUED,
            attempts=0,
            max_attempts=_max_attempts(),
            done=0,
            error="",
            result={},
            message="Queued again",
            started_at=None,
            finished_at=None,
            heartbeat_at=None,
            claimed_by="",
            enqueued_at=timezone.now(),
        )
        if not requeued:
            raise JobNotRetriable("The job changed meanwhile; reload the page.")
        job.refresh_from_db()
        if runs_in_process():
            transaction.on_commit(lambda: _publish_eager(job))
        else:
            try:
                _publish(job)
            except Exception as exc:
                logger.warning("could not queue job %s again: %s", job.pk, exc)
                raise JobQueueUnavailable() from exc
    return job


def runs_in_process() -> bool:
    """True when tasks run in the calling process (no broker configured: the embedded demo)."""
    from celery import current_app

    return bool(current_app.conf.task_always_eager)


def _publish_eager(job: Job) -> None:
    from celery import current_app

    current_app.tasks[job.task].delay(job.pk)


def jobs_sweep() -> dict[str, int]:
    """Re-send jobs whose worker died or whose message was lost; fail those out of attempts.

    Idempotent and safe with several beats: each re-send is claimed by a conditional UPDATE of
    ``enqueued_at``, and a duplicate message only finds the job already claimed.
    """
    now = timezone.now()
    lease = timedelta(seconds=lease_seconds())
    stale = now - lease
    resend_queued = now - timedelta(
        seconds=float(getattr(settings, "JOB_QUEUED_RESEND_SECONDS", 300))
    )
    failed = resent = 0
    dead = Job.objects.filter(_dead(stale))
    for job_id in dead.filter(attempts__gte=F("max_attempts")).values_list("pk", flat=True):
        failed += _fail_exhausted(job_id)
    if runs_in_process():
        return {"failed": failed, "resent": 0}  # nothing to re-send to: tasks run in-process
    # A re-send waits a lease after the previous one, so a busy queue is not flooded.
    not_recently_sent = Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=stale)
    candidates = Job.objects.filter(
        (_dead(stale) & Q(attempts__lt=F("max_attempts")) & not_recently_sent)
        | Q(status=Job.Status.QUEUED, enqueued_at__lt=resend_queued)
    ).exclude(task="")
    for job in candidates.only("pk", "task", "enqueued_at"):
        took = Job.objects.filter(pk=job.pk, enqueued_at=job.enqueued_at).update(enqueued_at=now)
        if not took:
            continue  # another beat re-sent it
        try:
            _publish(job)
        except Exception:
            logger.warning("sweep could not re-send job %s", job.pk, exc_info=True)
            continue
        resent += 1
        logger.warning("job %s re-sent (worker lost or message lost)", job.pk)
    return {"failed": failed, "resent": resent}
