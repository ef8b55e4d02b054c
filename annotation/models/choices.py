"""Enumerations shared by every app: splits, choices, roles."""

from django.db import models


class Split(models.TextChoices):
    OPEN_ENDED = "open_ended", "Open-ended"
    REASONING = "reasoning", "Reasoning"


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


LEAD_GROUP = "lead"
ANNOTATOR_GROUP = "annotator"
