"""What the lead's review decided: the labels that survive review and go into an export.

Review decisions are append-only; for each target the latest decision counts. A target is a
(sample, criterion) label, or a whole sample (criterion null). A label is exportable when it was
kept by aggregation, its own latest decision is not a discard, and its sample's latest
sample-level decision is not a discard.
"""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from annotation.models import Project

from ..models import CriterionLabel, Outcome, ReviewDecision


def _latest_action(**target: object) -> Coalesce:
    latest = (
        ReviewDecision.objects.filter(**target).order_by("-created_at", "-id").values("action")[:1]
    )
    return Coalesce(Subquery(latest), Value(ReviewDecision.Action.KEEP))


def labels_with_review_state(*, project: Project) -> QuerySet[CriterionLabel]:
    """Every label of the project, annotated with ``label_action`` and ``sample_action``."""
    return CriterionLabel.objects.filter(sample__project=project).annotate(
        label_action=_latest_action(sample=OuterRef("sample"), criterion=OuterRef("criterion")),
        sample_action=_latest_action(sample=OuterRef("sample"), criterion__isnull=True),
    )


def exportable_labels(
    *, project: Project, include_seeds: bool | None = None, split: str | None = None
) -> QuerySet[CriterionLabel]:
    """Kept labels not discarded by review, ordered by sample and criterion order.

    ``include_seeds`` defaults to the project's ``export_includes_seeds`` setting.
    """
    if include_seeds is None:
        include_seeds = project.export_includes_seeds
    labels = (
        labels_with_review_state(project=project)
        .filter(outcome__in=Outcome.kept(), sample__status="active")
        .exclude(label_action=ReviewDecision.Action.DISCARD)
        .exclude(sample_action=ReviewDecision.Action.DISCARD)
    )
    if not include_seeds:
        labels = labels.filter(sample__is_seed=False)
    if split:
        labels = labels.filter(sample__split=split)
    return labels.select_related("sample", "criterion").order_by(
        "sample__split", "sample__external_id", "criterion__order", "criterion__key"
    )
