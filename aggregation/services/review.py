"""The lead's review writes: keep / discard decisions and the reviewed mark of a sample.

Decisions are appended, never edited or deleted; the latest decision for a target (a label, or
a whole sample when ``criterion`` is None) counts, so "restore" is simply a newer keep. What
survives review is read through :mod:`aggregation.selectors.review`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Criterion, Project, Sample, Split
from core.permissions import is_lead

from ..label_counts import LabelArrays
from ..models import (
    CriterionLabel,
    Outcome,
    ReviewDecision,
    ReviewQueueCell,
    ReviewQueueFigures,
    SampleReview,
)
from ..review_cell_counts import Cell, cells_from_labels
from ..selectors.review_cells import review_cells_count

Action = ReviewDecision.Action
Reason = ReviewDecision.Reason


@transaction.atomic
def review_decide(
    *,
    sample: Sample,
    criterion: Criterion | None = None,
    action: str,
    reason: str = "",
    note: str = "",
    author: Any,
) -> ReviewDecision:
    """Append a keep/discard decision for a kept label (or the whole sample if no criterion).

    A discard needs a reason (inconsistent / redundant / other); "other" needs a note saying why.
    """
    if not is_lead(author):
        raise PermissionDenied("Only the project lead reviews labels.")
    note = (note or "").strip()
    reason = (reason or "").strip()
    if action not in Action.values:
        raise ValidationError({"action": f"Unknown action {action!r}: use keep or discard."})
    if action == Action.DISCARD:
        if reason not in Reason.values:
            raise ValidationError(
                {"reason": "A discard needs a reason: inconsistent, redundant or other."}
            )
        if reason == Reason.OTHER and not note:
            raise ValidationError({"note": "Say why in the note when the reason is 'other'."})
    else:
        # A keep has no discard reason; its note may still say why it was restored.
        reason = ""
    if criterion is not None:
        if criterion.project_id != sample.project_id or criterion.split != sample.split:
            raise ValidationError({"criterion": "This criterion does not belong to the sample."})
        if not CriterionLabel.objects.filter(
            sample=sample, criterion=criterion, outcome__in=Outcome.kept()
        ).exists():
            raise ValidationError(
                {"criterion": "Only a label kept by aggregation can be reviewed."}
            )
    return ReviewDecision.objects.create(
        sample=sample, criterion=criterion, action=action, reason=reason, note=note, author=author
    )


def review_figures_refresh(
    *, project: Project, split: str, labels: LabelArrays | None = None
) -> ReviewQueueFigures:
    """Count the split's review-queue figures and cells and store them (the aggregation job).

    Call in the transaction that writes the split's labels: the figures row stays locked until
    it commits, so a reviewed mark made meanwhile waits and then moves the new figures.
    ``labels``: the split's non-seed labels as the job has just written them; the cells are
    then counted from them, not read.
    """
    with transaction.atomic():
        row, _ = ReviewQueueFigures.objects.select_for_update().get_or_create(
            project=project, split=split
        )
        if labels is None:
            cells = review_cells_count(project_id=project.pk, split=split)
        else:
            reviewed = SampleReview.objects.filter(
                sample__project=project, sample__split=split, sample__is_seed=False
            ).values_list("sample_id", flat=True)
            cells = cells_from_labels(
                labels.sample,
                labels.criterion,
                labels.outcome,
                labels.provenance,
                np.fromiter(reviewed, np.int64),
            )
        ReviewQueueCell.objects.filter(project=project, split=split).delete()
        ReviewQueueCell.objects.bulk_create(
            ReviewQueueCell(project=project, split=split, **cell._asdict()) for cell in cells
        )
        samples = [cell for cell in cells if cell.criterion_id is None]
        row.total = sum(cell.n for cell in samples)
        row.reviewed = sum(cell.n for cell in samples if cell.reviewed)
        row.counted = True
        row.save(update_fields=["total", "reviewed", "counted"])
    return row


def review_figures_ensure(*, project: Project) -> None:
    """Count the splits whose review-queue figures were never counted (after an aggregation)."""
    counted = set(
        ReviewQueueFigures.objects.filter(project=project, counted=True).values_list(
            "split", flat=True
        )
    )
    for split in Split.values:
        if split not in counted:
            review_figures_refresh(project=project, split=split)


def _figures_locked(sample: Sample) -> ReviewQueueFigures:
    """The sample's split figures row, locked (created uncounted if the job never stored it).

    Creating the row when missing makes an aggregation that counts at the same time wait for
    this transaction, so its count sees the mark.
    """
    row, _ = ReviewQueueFigures.objects.select_for_update().get_or_create(
        project_id=sample.project_id, split=sample.split
    )
    return row


def _move_reviewed(row: ReviewQueueFigures, sample: Sample, by: int) -> None:
    """Move the sample's count to its new reviewed state: the figures and each of its cells.

    Call holding the figures row lock, after the mark changed: the sample's cells are read from
    its labels with the new state, and its count leaves the cells of the old one.
    """
    if not row.counted:
        return
    cells = review_cells_count(
        project_id=sample.project_id, split=sample.split, sample_id=sample.pk
    )
    if not cells:  # not in the queue
        return
    ReviewQueueFigures.objects.filter(pk=row.pk).update(reviewed=F("reviewed") + by)
    for cell in cells:
        _cell_add(row, cell._replace(reviewed=not cell.reviewed), -1)
        _cell_add(row, cell, 1)


def _cell_add(row: ReviewQueueFigures, cell: Cell, by: int) -> None:
    key = cell._asdict()
    del key["n"]
    cells = ReviewQueueCell.objects.filter(project_id=row.project_id, split=row.split, **key)
    if not cells.update(n=F("n") + by) and by > 0:
        ReviewQueueCell.objects.create(project_id=row.project_id, split=row.split, n=by, **key)


@transaction.atomic
def sample_mark_reviewed(*, sample: Sample, by: Any) -> SampleReview:
    """Mark the sample reviewed (again: the mark then names the latest reviewer and time)."""
    if not is_lead(by):
        raise PermissionDenied("Only the project lead reviews samples.")
    row = _figures_locked(sample)
    review, created = SampleReview.objects.update_or_create(
        sample=sample, defaults={"reviewed_by": by, "reviewed_at": timezone.now()}
    )
    if created:
        _move_reviewed(row, sample, 1)
    return review


@transaction.atomic
def sample_unmark_reviewed(*, sample: Sample, by: Any) -> None:
    """Put the sample back into the "not yet reviewed" part of the queue.

    Only the mark goes; every decision on the sample stays in its history.
    """
    if not is_lead(by):
        raise PermissionDenied("Only the project lead reviews samples.")
    row = _figures_locked(sample)
    deleted, _ = SampleReview.objects.filter(sample=sample).delete()
    if deleted:
        _move_reviewed(row, sample, -1)
