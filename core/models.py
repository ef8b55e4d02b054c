"""Shared plumbing records: background jobs and API tokens.

Both tables keep the names they had when they lived in ``annotation`` (``db_table``), so the move
to this app changed no data.
"""

from django.conf import settings
from django.db import models


class Job(models.Model):
    """A long-running background job whose progress a page polls."""

    class Kind(models.TextChoices):
        IMPORT = "import", "Import samples"
        AGGREGATE = "aggregate", "Aggregate votes"
        BUILD_VERSION = "build_version", "Build dataset version"
        SCORE_JUDGE = "score_judge", "Score a judge"
        CURATE = "curate", "Curate generations"
        PROMOTE = "promote", "Promote curated pairs"
        PANEL = "panel", "Judge panel pre-labels"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    project = models.ForeignKey(
        "annotation.Project", on_delete=models.CASCADE, null=True, blank=True, related_name="jobs"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    message = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The lease (core.jobs): the running attempt refreshes heartbeat_at; a running job whose
    # heartbeat is older than JOB_LEASE_SECONDS lost its worker and may be claimed again.
    task = models.CharField(max_length=100, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=3)
    claimed_by = models.CharField(max_length=200, blank=True)

    class Meta:
        db_table = "annotation_job"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["project", "kind", "-created_at"], name="job_recent"),
            models.Index(fields=["status", "heartbeat_at"], name="job_lease"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.status})"

    @property
    def percent(self) -> int:
        """Progress in percent (100 once succeeded)."""
        if self.status == self.Status.SUCCEEDED:
            return 100
        if not self.total:
            return 0
        return min(100, int(100 * self.done / self.total))

    @property
    def duration_text(self) -> str:
        """How long the job ran, e.g. "4.2 s" or "3 min 10 s"; empty until it has finished."""
        if not (self.started_at and self.finished_at):
            return ""
        seconds = max(0.0, (self.finished_at - self.started_at).total_seconds())
        if seconds < 60:
            return f"{seconds:.1f} s"
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest} s"

    @property
    def is_finished(self) -> bool:
        """True once the job will not change by itself (succeeded, failed or cancelled)."""
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED, self.Status.CANCELLED)

    @property
    def can_cancel(self) -> bool:
        """A queued or running job can be cancelled."""
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def can_retry(self) -> bool:
        """A failed or cancelled job with a known task can be queued again."""
        return bool(self.task) and self.status in (self.Status.FAILED, self.Status.CANCELLED)


class ApiToken(models.Model):
    """A read-only API key. Only its SHA-256 is stored; the key is shown once at creation."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="First characters, to recognise a key.")
    key_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=20, default="read")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "annotation_apitoken"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class WorkerHeartbeat(models.Model):
    """When a worker last ran the beat's heartbeat task: one row, read by ``/readyz`` and the
    lead's dashboard (see core.health)."""

    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"worker seen at {self.seen_at:%Y-%m-%d %H:%M:%S}"
