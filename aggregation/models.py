"""Aggregated labels, agreement snapshots, the lead's review decisions and dataset versions."""

import hashlib
import hmac

from django.conf import settings
from django.db import models

from annotation.models import Choice, Criterion, Project, Sample, Split
from core.db import JsonTextField
from core.models import Job


class Outcome(models.TextChoices):
    """The result of aggregating one (sample, criterion), per protocol section 5."""

    KEPT_UNANIMOUS = "kept_unanimous", "Kept: unanimous"
    KEPT_MAJORITY_TIE = "kept_majority_tie", "Kept: majority + tie"
    DROPPED_SPLIT = "dropped_split", "Dropped: A/B split"
    DROPPED_TIES = "dropped_ties", "Dropped: two or more ties"
    DROPPED_MISSING = "dropped_missing", "Dropped: fewer votes than required"

    @classmethod
    def kept(cls) -> tuple[str, ...]:
        return (cls.KEPT_UNANIMOUS, cls.KEPT_MAJORITY_TIE)


class Provenance(models.TextChoices):
    """How a label's votes were gathered (issue: judge-assisted routing and early stopping)."""

    HUMAN = "human", "Human: the full protocol"
    EARLY_STOPPED = "early_stopped", "Early-stopped: the remaining votes could not change it"
    PANEL_HUMAN = "panel_human", "Panel + human: the verifier agreed with the judge panel"
    PANEL_OVERRULED = "panel_overruled", "Panel overruled: the verifier disagreed, full protocol"


class CriterionLabel(models.Model):
    """The aggregated label of one (sample, criterion), rebuilt by the aggregation job."""

    # No index of their own: label_unique (sample, criterion) and label_criterion_outcome lead
    # with them, and each index more is written for every label. On PostgreSQL the two keys
    # are checked once per statement by triggers (migration 0015), not once per label by a
    # foreign key: the same guarantee (a label's sample and criterion exist, are locked while
    # it is written and cannot be deleted under it) at a fraction of the cost.
    sample = models.ForeignKey(
        Sample,
        on_delete=models.CASCADE,
        related_name="labels",
        db_index=False,
        db_constraint=False,
    )
    criterion = models.ForeignKey(
        Criterion,
        on_delete=models.CASCADE,
        related_name="labels",
        db_index=False,
        db_constraint=False,
    )
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    preference = models.CharField(max_length=3, choices=Choice.choices, blank=True)
    votes_a = models.PositiveSmallIntegerField(default=0)
    votes_b = models.PositiveSmallIntegerField(default=0)
    votes_tie = models.PositiveSmallIntegerField(default=0)
    vote_ids = models.JSONField(default=list, help_text="The votes this label was computed from.")
    vote_digest = models.BigIntegerField(
        db_default=0,
        help_text="A hash of the votes (ids and choices) and k: the next aggregation skips the "
        "label while it is unchanged.",
    )
    provenance = models.CharField(
        max_length=20, choices=Provenance.choices, default=Provenance.HUMAN, db_default="human"
    )
    median_grade = models.FloatField(
        null=True, blank=True, help_text="Graded scale: the median of the votes' grades."
    )
    mean_score_a = models.FloatField(
        null=True, blank=True, help_text="Pointwise scale: the mean score of response A."
    )
    mean_score_b = models.FloatField(
        null=True, blank=True, help_text="Pointwise scale: the mean score of response B."
    )
    soft_label = models.JSONField(
        null=True,
        blank=True,
        help_text=(
            "Graded and pointwise scales: the votes' distribution, {grade: count} or "
            "per-response {score: count}."
        ),
    )
    # Which run wrote the label, for the record. Nothing reads labels by job and jobs are only
    # deleted with their project, so the pointer has no index and no database constraint: a
    # foreign-key check per label was a third of a first aggregation's commit.
    job = models.ForeignKey(
        Job,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    computed_at = models.DateTimeField()

    class Meta:
        ordering = ["sample_id", "criterion_id"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "criterion"], name="label_unique"),
            models.CheckConstraint(
                condition=(
                    models.Q(outcome__in=["kept_unanimous", "kept_majority_tie"])
                    & models.Q(preference__in=["A", "B"])
                )
                | (
                    ~models.Q(outcome__in=["kept_unanimous", "kept_majority_tie"])
                    & models.Q(preference="")
                ),
                name="label_kept_has_preference",
            ),
        ]
        indexes = [
            models.Index(fields=["criterion", "outcome"], name="label_criterion_outcome"),
            # The review queue's semi-joins ("has a kept label", "has a label not kept
            # unanimously") read these alone, in sample order, without the table.
            models.Index(
                fields=["sample"],
                condition=models.Q(outcome__in=["kept_unanimous", "kept_majority_tie"]),
                name="label_kept_sample",
            ),
            models.Index(
                fields=["sample"],
                condition=~models.Q(outcome="kept_unanimous"),
                name="label_not_unanimous_sample",
            ),
        ]

    @property
    def is_kept(self) -> bool:
        return self.outcome in Outcome.kept()


class AgreementSnapshot(models.Model):
    """Agreement figures computed by the aggregation job, for the dashboard and manifests."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agreement")
    split = models.CharField(max_length=20, choices=Split.choices)
    figures = models.JSONField(default=dict)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    computed_at = models.DateTimeField()
    result = models.JSONField(
        default=dict, help_text="The split's label counts as the last aggregation reported them."
    )
    inputs_state = models.CharField(
        max_length=200,
        blank=True,
        help_text="A digest of the project's votes, samples, slots and labels after the last "
        "aggregation: while it holds, the next run reads no vote.",
    )

    class Meta:
        ordering = ["project", "split", "-computed_at"]
        constraints = [
            models.UniqueConstraint(fields=["project", "split"], name="agreement_unique_split"),
        ]


class ReviewDecision(models.Model):
    """The lead's keep/discard of a criterion label (criterion set) or a whole sample.

    Append-only: the latest decision for a target counts; nothing is ever deleted.
    """

    class Action(models.TextChoices):
        KEEP = "keep", "Keep"
        DISCARD = "discard", "Discard"

    class Reason(models.TextChoices):
        INCONSISTENT = "inconsistent", "Rationale contradicts the vote"
        REDUNDANT = "redundant", "Redundant"
        OTHER = "other", "Other"

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="review_decisions")
    criterion = models.ForeignKey(
        Criterion, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=10, choices=Action.choices)
    reason = models.CharField(max_length=20, choices=Reason.choices, blank=True)
    note = models.TextField(blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["sample_id", "created_at", "id"]
        indexes = [
            models.Index(fields=["sample", "criterion", "-created_at"], name="review_latest")
        ]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(action="discard") | ~models.Q(reason=""),
                name="review_discard_has_reason",
            ),
        ]


class SampleReview(models.Model):
    """Marks a sample as reviewed by the lead (the review queue's "done" state)."""

    sample = models.OneToOneField(Sample, on_delete=models.CASCADE, related_name="review")
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    reviewed_at = models.DateTimeField()


class ReviewQueueFigures(models.Model):
    """Per split, the non-seed samples holding a kept label and how many of them are reviewed.

    Counted over every status: the review queue takes retired samples (and seeds, when the
    project exports them) off live, from the few such rows. The aggregation job stores the
    figures with the labels; marking and unmarking a sample reviewed move ``reviewed`` under
    this row's lock (aggregation.services.review_figures).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    split = models.CharField(max_length=20, choices=Split.choices)
    total = models.PositiveIntegerField(default=0)
    reviewed = models.PositiveIntegerField(default=0)
    counted = models.BooleanField(
        default=False,
        help_text="False until the aggregation counted the split (the queue then counts live).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "split"], name="review_figures_once"),
            models.CheckConstraint(
                condition=models.Q(reviewed__lte=models.F("total")),
                name="review_figures_reviewed_le_total",
            ),
        ]


CELL_KEY = ("kinds", "provenances", "disagreement", "reviewed")


class ReviewQueueCell(models.Model):
    """How many samples of a split's queue share one combination of the queue's filters.

    ``criterion`` null: a sample counted once, with the kinds and provenances of all its kept
    labels (bit masks). ``criterion`` set: a sample counted per kept label, with that label's
    kind and provenance. Both carry whether any of the sample's labels is not kept unanimously
    and whether it is reviewed, so a filtered count is a sum of cells. Stored and moved with
    ReviewQueueFigures, under its row lock (aggregation.services.review).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    split = models.CharField(max_length=20, choices=Split.choices)
    criterion = models.ForeignKey(
        Criterion, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    kinds = models.PositiveSmallIntegerField()
    provenances = models.PositiveSmallIntegerField()
    disagreement = models.BooleanField()
    reviewed = models.BooleanField()
    n = models.PositiveIntegerField(default=0)

    class Meta:
        # One cell per combination; two partial constraints, as a null criterion never equals
        # another null in a unique constraint.
        constraints = [
            models.UniqueConstraint(
                fields=["project", "split", "criterion", *CELL_KEY],
                condition=models.Q(criterion__isnull=False),
                name="review_cell_once",
            ),
            models.UniqueConstraint(
                fields=["project", "split", *CELL_KEY],
                condition=models.Q(criterion__isnull=True),
                name="review_cell_any_once",
            ),
        ]


def version_file_path(instance: "DatasetFile", filename: str) -> str:
    """``versions/<project id>/v<n>-<key>/<filename>``, the key derived from SECRET_KEY.

    Under /media/ these are the lead's (``core.permissions.media_file``); the key keeps
    the folder unguessable besides, so a leaked media path names no other version.
    """
    version = instance.version
    key = hmac.new(
        settings.SECRET_KEY.encode(), f"dataset-version:{version.pk}".encode(), hashlib.sha256
    ).hexdigest()[:16]
    return f"versions/{version.project_id}/v{version.number}-{key}/{filename}"


class DatasetVersion(models.Model):
    """A frozen export of the kept labels. Immutable once its status is ready."""

    class Status(models.TextChoices):
        BUILDING = "building", "Building"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.BUILDING)
    include_votes = models.BooleanField(default=False)
    include_seeds = models.BooleanField(default=False)
    manifest = models.JSONField(default=dict)
    row_count = models.PositiveIntegerField(default=0)
    note = models.TextField(blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The lead's notes: metadata about the version, editable after it is frozen (its rows, files
    # and manifest never change; the database triggers leave these columns out).
    lead_notes = models.TextField(blank=True)
    lead_notes_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    lead_notes_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="version_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.project} v{self.number}"


class DatasetFile(models.Model):
    class Kind(models.TextChoices):
        JSONL = "jsonl", "JSONL rows"
        JSONL_ZIP = "jsonl_zip", "JSONL + images (zip)"
        PARQUET = "parquet", "Parquet with embedded images"
        MANIFEST = "manifest", "Manifest"
        CONTESTED = "contested", "Contested split: dropped labels with their votes (JSONL)"

    version = models.ForeignKey(DatasetVersion, on_delete=models.PROTECT, related_name="files")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    file = models.FileField(upload_to=version_file_path, max_length=300)
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["version", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["version", "kind"], name="file_unique_kind"),
        ]


class DatasetRow(models.Model):
    """One exported row (a kept sample-criterion), frozen with its version."""

    # No index of its own: the two indexes below lead with the version.
    version = models.ForeignKey(
        DatasetVersion, on_delete=models.PROTECT, related_name="rows", db_index=False
    )
    question_id = models.CharField(max_length=300)
    prompt_id = models.CharField(max_length=200)
    split = models.CharField(max_length=20, choices=Split.choices)
    criterion = models.CharField(max_length=60)
    preference = models.CharField(max_length=10)
    # The JSONL line itself (text, not JSONB): read whole, never queried by key.
    data = JsonTextField(help_text="The full exported row (image as its relative path).")

    class Meta:
        ordering = ["version", "id"]
        constraints = [
            models.UniqueConstraint(fields=["version", "question_id"], name="row_unique_qid"),
        ]
        indexes = [models.Index(fields=["version", "split", "criterion"], name="row_filter")]


class DashboardSnapshot(models.Model):
    """The dashboard's figures over the votes up to ``upto_vote_id``, stored by the aggregation.

    The dashboard adds what was voted since (votes with a larger id, read by primary-key range)
    instead of counting every vote on every view; see aggregation.selectors.dashboard.
    """

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="+")
    upto_vote_id = models.BigIntegerField()
    figures = models.JSONField(default=dict)
    computed_at = models.DateTimeField()
