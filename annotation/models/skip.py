"""Skips: an annotator puts one (sample, criterion) screen off for later, saying why."""

from django.conf import settings
from django.db import models

from .project import Criterion
from .sample import Sample


class Skip(models.Model):
    """One "skip for now" on a labeling screen. Append-only; the lead sees the count.

    A skipped item stays in the annotator's queue (their slot is kept) and is served again after
    every item they have not skipped; voting on it later does not remove the record.
    ``round`` is 0 for formal work and the calibration round for seed items, as on Vote.
    """

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="skips")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="skips"
    )
    round = models.PositiveSmallIntegerField(default=0)
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["annotator", "round"], name="skip_annotator_round")]

    def __str__(self) -> str:
        return f"{self.annotator_id} skipped {self.sample_id}/{self.criterion_id}"
