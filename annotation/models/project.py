from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from .choices import LabelScale, RevisionWindow, RoutingPolicy, Split, WorkOrder


class Project(models.Model):
    """One study: its samples, criteria, annotators and the settings of the protocol."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    annotators_per_sample = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(20)]
    )
    tie_cap = models.DecimalField(
        max_digits=4,
        decimal_places=3,
        default=Decimal("0.100"),
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("1"))],
        help_text="Ties must stay strictly below this share of an annotator's formal votes.",
    )
    rationale_min_chars = models.PositiveSmallIntegerField(default=15)
    lease_minutes = models.PositiveIntegerField(default=120)
    batch_size = models.PositiveSmallIntegerField(default=10, validators=[MinValueValidator(1)])
    work_order = models.CharField(
        max_length=20, choices=WorkOrder.choices, default=WorkOrder.CRITERION_MAJOR
    )
    shuffle_ab = models.BooleanField(
        default=False, help_text="Show A and B in a random order per annotator and sample."
    )
    export_includes_seeds = models.BooleanField(default=False)
    vote_revision_window = models.CharField(
        max_length=20,
        choices=RevisionWindow.choices,
        default=RevisionWindow.UNTIL_AGGREGATION,
        help_text="How long an annotator may revise a vote on a sample they have completed.",
    )
    guidelines = models.TextField(
        blank=True,
        help_text="Markdown: the annotation guidelines annotators read on the Guidelines page.",
    )
    calibration_threshold = models.PositiveSmallIntegerField(
        default=80,
        validators=[MaxValueValidator(100)],
        help_text=(
            "Agreement with the reference labels (percent) below which marking an annotator "
            "calibrated asks for confirmation."
        ),
    )
    label_scale = models.CharField(
        max_length=20,
        choices=LabelScale.choices,
        default=LabelScale.PAIRWISE,
        help_text="How annotators answer; fixed once formal annotation has started.",
    )
    early_stopping = models.BooleanField(
        default=False,
        help_text=(
            "Do not ask for the remaining votes of a (sample, criterion) whose votes so far "
            "can no longer make a kept label (audit samples always get every vote)."
        ),
    )
    routing_policy = models.CharField(
        max_length=20,
        choices=RoutingPolicy.choices,
        default=RoutingPolicy.OFF,
        help_text="Judge-assisted routing of items the judge panel agrees on.",
    )
    audit_share = models.DecimalField(
        max_digits=4,
        decimal_places=3,
        default=Decimal("0.200"),
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("1"))],
        help_text="Share of samples that always get the full protocol (drawn reproducibly).",
    )
    audit_seed = models.PositiveIntegerField(
        default=0, help_text="Seed of the audit draw (annotation/audit.py)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(annotators_per_sample__gte=1), name="project_k_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(tie_cap__gte=0) & models.Q(tie_cap__lte=1),
                name="project_tie_cap_range",
            ),
            models.CheckConstraint(
                condition=models.Q(audit_share__gte=0) & models.Q(audit_share__lte=1),
                name="project_audit_share_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class LiveCriteria(models.Manager):
    """The criteria in use: a removed criterion keeps its row (its votes point at it)."""

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().filter(removed_at__isnull=True)


class Criterion(models.Model):
    """One evaluation criterion of a split.

    Removing a criterion sets ``removed_at``: it leaves ``objects`` (labeling, aggregation,
    exports) while its votes and its history stay; ``all_objects`` still sees it.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="criteria")
    split = models.CharField(max_length=20, choices=Split.choices)
    key = models.SlugField(max_length=60)
    name = models.CharField(max_length=120)
    description = models.TextField(help_text="Markdown: what to reward and what to penalize.")
    order = models.PositiveSmallIntegerField(default=0)
    rubric = models.JSONField(
        default=dict,
        blank=True,
        help_text='Pointwise scale: what each score means, {"1": "...", ..., "5": "..."}.',
    )
    removed_at = models.DateTimeField(null=True, blank=True)

    objects = LiveCriteria()
    all_objects = models.Manager()  # noqa: DJ012 (a manager, taken for a field)

    class Meta:
        base_manager_name = "all_objects"
        ordering = ["project", "split", "order", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "split", "key"], name="criterion_unique_key"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_split_display()}: {self.name}"


class ProjectMember(models.Model):
    """An annotator's place in a project: active or removed, and their calibration state.

    ``calibration_round`` counts seed rounds (1 = first); ``calibrated_at`` set means the lead let
    the annotator start formal work.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    is_active = models.BooleanField(default=True)
    calibration_round = models.PositiveSmallIntegerField(default=1)
    calibrated_at = models.DateTimeField(null=True, blank=True)
    calibrated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    joined_at = models.DateTimeField(auto_now_add=True)
    # Formal-work counters, kept in the vote transaction (annotation.services.voting) so the
    # labeling screen and the tie cap read them instead of counting the annotator's history.
    # ``formal_votes`` / ``formal_ties``: every formal vote (and tie) in the project;
    # ``done_votes``: formal votes on the member's completed slots; ``done_<split>``: completed
    # slots per split. A completed slot never changes hands, so these only move with votes.
    formal_votes = models.PositiveIntegerField(default=0)
    formal_ties = models.PositiveIntegerField(default=0)
    done_votes = models.PositiveIntegerField(default=0)
    done_open_ended = models.PositiveIntegerField(default=0)
    done_reasoning = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["project", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="member_unique_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project}"

    @property
    def is_calibrated(self) -> bool:
        return self.calibrated_at is not None
