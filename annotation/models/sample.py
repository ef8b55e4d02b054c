from django.conf import settings
from django.db import models

from .choices import Choice, PairType, Split
from .project import Criterion, Project


def sample_image_path(instance: "Sample", filename: str) -> str:
    return f"samples/{instance.project_id}/original/{filename}"


def sample_web_image_path(instance: "Sample", filename: str) -> str:
    return f"samples/{instance.project_id}/web/{filename}"


class SampleStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    RETIRED = "retired", "Retired"


class Sample(models.Model):
    """A multimodal prompt with two responses: one pair to be labeled under every criterion."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="samples")
    external_id = models.CharField(max_length=200)
    split = models.CharField(max_length=20, choices=Split.choices)
    question = models.TextField()
    image = models.ImageField(upload_to=sample_image_path, max_length=300, blank=True)
    image_web = models.ImageField(upload_to=sample_web_image_path, max_length=300, blank=True)
    image_width = models.PositiveIntegerField(null=True, blank=True)
    image_height = models.PositiveIntegerField(null=True, blank=True)
    image_sha256 = models.CharField(max_length=64, blank=True)
    response_a = models.TextField()
    response_b = models.TextField()
    model_a = models.CharField(max_length=200, blank=True)
    model_b = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=120, blank=True, help_text="Source dataset of the prompt.")
    pair_type = models.CharField(
        max_length=20, choices=PairType.choices, default=PairType.CROSS_MODEL
    )
    reference_answer = models.TextField(blank=True)
    is_seed = models.BooleanField(default=False)
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=20, choices=SampleStatus.choices, default=SampleStatus.ACTIVE
    )
    content_hash = models.CharField(
        max_length=64,
        blank=True,
        help_text="SHA-256 of the imported content, for idempotent re-import.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"], name="sample_unique_external_id"
            ),
        ]
        indexes = [
            models.Index(fields=["project", "split", "is_seed"], name="sample_project_split_seed"),
            # The few samples out of the active pool (the review queue takes them off its
            # stored figures).
            models.Index(
                fields=["project", "split"],
                condition=~models.Q(status="active"),
                name="sample_not_active",
            ),
        ]

    def __str__(self) -> str:
        return self.external_id


class ReferenceLabel(models.Model):
    """The expected preference for a (sample, criterion): imported, or set by the lead."""

    class Source(models.TextChoices):
        IMPORTED = "imported", "Imported"
        LEAD = "lead", "Set by the lead"

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="reference_labels")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+")
    preference = models.CharField(max_length=3, choices=Choice.choices)
    note = models.TextField(blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.IMPORTED)
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["sample", "criterion"], name="reference_unique"),
        ]
