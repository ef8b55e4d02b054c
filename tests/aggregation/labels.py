"""Aggregated labels created directly, for the review and export tests."""

from __future__ import annotations

from django.utils import timezone

from aggregation.models import CriterionLabel, Outcome


def label(sample, criterion, outcome=Outcome.KEPT_UNANIMOUS, preference="A") -> CriterionLabel:
    """A stored label; dropped outcomes get no preference, as the database requires."""
    return CriterionLabel.objects.create(
        sample=sample,
        criterion=criterion,
        outcome=outcome,
        preference=preference if outcome in Outcome.kept() else "",
        computed_at=timezone.now(),
    )
