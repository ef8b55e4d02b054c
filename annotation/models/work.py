"""Assignment slots, votes and their history, and problem reports."""

from django.conf import settings
from django.db import models

from .choices import Choice
from .project import Criterion
from .sample import Sample


class Slot(models.Model):
    """One of a sample's k annotator places (index 1..k), pre-created so the cap is a row count.

    A claim is one conditional UPDATE of an open or expired slot; unique (sample, annotator)
    stops an annotator from holding two slots of one sample, on SQLite and PostgreSQL alike.
    """

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="slots")
    index = models.PositiveSmallIntegerField()
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="slots",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    swap_ab = models.BooleanField(
        default=False, help_text="This annotator sees the responses in B/A order."
    )

    class Meta:
        ordering = ["sample_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "index"], name="slot_unique_index"),
            models.UniqueConstraint(fields=["sample", "annotator"], name="slot_unique_annotator"),
            models.CheckConstraint(condition=models.Q(index__gte=1), name="slot_index_positive"),
        ]
        indexes = [
            models.Index(fields=["annotator", "completed_at"], name="slot_annotator_open"),
            models.Index(fields=["lease_expires_at"], name="slot_lease"),
        ]

    def __str__(self) -> str:
        return f"{self.sample_id}#{self.index} → {self.annotator_id or 'open'}"


class Vote(models.Model):
    """An annotator's current answer for one (sample, criterion) in one round.

    ``round`` is 0 for formal work and the calibration round number (1, 2, ...) for seed work.
    ``choice`` is canonical: when the annotator saw B/A order, it was mapped back before storing.
    """

    FORMAL_ROUND = 0

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="votes")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="votes")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="votes"
    )
    round = models.PositiveSmallIntegerField(default=FORMAL_ROUND)
    choice = models.CharField(max_length=3, choices=Choice.choices)
    grade = models.SmallIntegerField(
        null=True,
        blank=True,
        help_text="Graded scale: +2 A much better .. 0 tie .. -2 B much better (canonical A/B).",
    )
    score_a = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Pointwise scale: response A's score, 1-5."
    )
    score_b = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Pointwise scale: response B's score, 1-5."
    )
    rationale = models.TextField()
    seconds = models.FloatField(default=0)
    shown_swapped = models.BooleanField(default=False)
    unsure = models.BooleanField(
        default=False, help_text="The annotator marked this answer as not sure."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["sample_id", "criterion_id", "annotator_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["sample", "criterion", "annotator", "round"], name="vote_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(grade__isnull=True) | models.Q(grade__gte=-2, grade__lte=2),
                name="vote_grade_range",
            ),
            models.CheckConstraint(
                condition=(models.Q(score_a__isnull=True) & models.Q(score_b__isnull=True))
                | models.Q(score_a__gte=1, score_a__lte=5, score_b__gte=1, score_b__lte=5),
                name="vote_scores_range",
            ),
        ]
        indexes = [
            models.Index(fields=["annotator", "round"], name="vote_annotator_round"),
            models.Index(fields=["sample", "round"], name="vote_sample_round"),
        ]

    @property
    def is_calibration(self) -> bool:
        return self.round != self.FORMAL_ROUND


class VoteRevision(models.Model):
    """An earlier version of a vote, written when it is revised. Append-only.

    ``choice``, ``rationale`` and ``seconds`` are the previous value, ``recorded_at`` when it
    was cast, ``revised_by`` who replaced it and ``replaced_at`` when.
    """

    vote = models.ForeignKey(Vote, on_delete=models.CASCADE, related_name="revisions")
    choice = models.CharField(max_length=3, choices=Choice.choices)
    grade = models.SmallIntegerField(null=True, blank=True)
    score_a = models.PositiveSmallIntegerField(null=True, blank=True)
    score_b = models.PositiveSmallIntegerField(null=True, blank=True)
    rationale = models.TextField()
    seconds = models.FloatField(default=0)
    recorded_at = models.DateTimeField()
    replaced_at = models.DateTimeField(auto_now_add=True)
    revised_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="Empty on revisions recorded before this was kept.",
    )

    class Meta:
        ordering = ["vote_id", "replaced_at"]


class ProblemReport(models.Model):
    """An annotator's "report a problem" on a sample; takes it out of their queue.

    The lead closes it with an ``outcome`` (who and when in ``resolved_by`` / ``resolved_at``,
    their note in ``resolution``); ``reassigned_to`` names who got the sample on a reassign.
    """

    class Outcome(models.TextChoices):
        RESOLVED = "resolved", "Resolved: back in the queue"
        REASSIGNED = "reassigned", "Reassigned to another annotator"
        DISCARDED = "discarded", "Discarded: the sample was retired"

    class Kind(models.TextChoices):
        BROKEN_IMAGE = "broken_image", "Broken or missing image"
        UNREADABLE = "unreadable", "Unreadable response"
        BAD_PROMPT = "bad_prompt", "Question does not make sense"
        OTHER = "other", "Other"

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="problem_reports")
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="problem_reports"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    resolution = models.TextField(blank=True)
    outcome = models.CharField(max_length=20, choices=Outcome.choices, blank=True)
    reassigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["sample", "reporter"],
                condition=models.Q(resolved_at__isnull=True),
                name="report_one_open_per_reporter",
            ),
        ]
