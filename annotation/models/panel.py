"""A judge panel's pre-label of one (sample, criterion), for judge-assisted routing."""

from django.db import models

from .choices import Choice
from .project import Criterion
from .sample import Sample


class PanelLabel(models.Model):
    """What the judge panel said about one (sample, criterion); never shown to annotators.

    ``choice`` is the panel's verdict in canonical A/B terms when every judge, asked in both
    orders, named the same side (blank otherwise); ``unanimous`` says the judges agreed with each
    other, ``consistent`` that each judge gave the same answer in both orders. ``routable`` (both,
    and an A or B verdict) is what the routing policy reads. ``verdicts`` keeps every judge's
    answer per order: ``{"<judge>": {"ab": "A", "ba": "A"}, ...}``.
    """

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="panel_labels")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+")
    choice = models.CharField(max_length=3, choices=Choice.choices, blank=True)
    unanimous = models.BooleanField(default=False)
    consistent = models.BooleanField(default=False)
    routable = models.BooleanField(default=False)
    verdicts = models.JSONField(default=dict)
    judges = models.JSONField(default=list, help_text="Names of the panel's judge configs.")
    job_id = models.BigIntegerField(null=True, blank=True, help_text="The panel job that wrote it.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["sample_id", "criterion_id"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "criterion"], name="panel_label_unique"),
            models.CheckConstraint(
                condition=~models.Q(routable=True)
                | (models.Q(unanimous=True, consistent=True) & models.Q(choice__in=["A", "B"])),
                name="panel_label_routable_is_unanimous_consistent",
            ),
        ]
        indexes = [
            models.Index(fields=["sample", "routable"], name="panel_label_sample_routable"),
        ]
