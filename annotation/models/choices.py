"""Enumerations shared by every app: splits, choices, roles."""

from django.db import models

from .. import scales, splits


class Split(models.TextChoices):
    OPEN_ENDED = splits.OPEN_ENDED, splits.LABELS[splits.OPEN_ENDED]
    REASONING = splits.REASONING, splits.LABELS[splits.REASONING]


class Choice(models.TextChoices):
    """An annotator's answer for one (sample, criterion), always in canonical A/B terms."""

    A = "A", "Response A"
    B = "B", "Response B"
    TIE = "tie", "Tie"


class PairType(models.TextChoices):
    CROSS_MODEL = "cross_model", "Cross-model"
    SAME_MODEL = "same_model", "Same-model"


class WorkOrder(models.TextChoices):
    CRITERION_MAJOR = "criterion_major", "Criterion-major (one criterion across the batch)"
    SAMPLE_MAJOR = "sample_major", "Sample-major (all criteria of one sample)"


class RevisionWindow(models.TextChoices):
    """How long an annotator may revise a formal vote once their slot on the sample is complete."""

    UNTIL_AGGREGATION = "until_aggregation", "Until the sample's next aggregation"
    UNTIL_COMPLETE = "until_complete", "Not after completing the sample"
    ALWAYS = "always", "Always"


class LabelScale(models.TextChoices):
    """How annotators answer each (sample, criterion); rules in annotation/scales.py."""

    PAIRWISE = scales.PAIRWISE, scales.LABELS[scales.PAIRWISE]
    GRADED = scales.GRADED, scales.LABELS[scales.GRADED]
    POINTWISE = scales.POINTWISE, scales.LABELS[scales.POINTWISE]


class RoutingPolicy(models.TextChoices):
    """Whether a judge panel's pre-labels change how many humans an item asks."""

    OFF = "off", "Off: every item gets the full protocol"
    PANEL_VERIFIER = (
        "panel_verifier",
        "Where the panel is unanimous and position-consistent, ask 1 human to verify",
    )
