"""Reads for the criteria part of the settings page: vote counts and the history."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet

from ..models import Criterion, CriterionChange, Project, Vote
from ..services.assignment import count_of

HISTORY_SHOWN = 50


def criteria_with_votes(*, project: Project) -> QuerySet[Criterion]:
    """The criteria in use, in order, each with ``n_votes`` (formal votes on it)."""
    return (
        Criterion.objects.filter(project=project)
        .annotate(
            n_votes=count_of(
                Vote.objects.filter(criterion_id=OuterRef("pk"), round=Vote.FORMAL_ROUND)
            )
        )
        .order_by("split", "order", "key")
    )


def criteria_changes(*, project: Project, limit: int = HISTORY_SHOWN) -> list[CriterionChange]:
    """The latest changes to the criteria, newest first."""
    return list(
        CriterionChange.objects.filter(project=project)
        .select_related("by")
        .order_by("-at", "-id")[:limit]
    )
