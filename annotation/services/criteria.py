"""The lead's changes to a project's criteria: add, remove, restore, reorder; each one recorded.

Votes are never deleted: a removed criterion keeps its row and its votes (see
``Criterion.removed_at``); it leaves labeling, aggregation (its labels go at the next run) and
later versions. Every change writes a :class:`CriterionChange` with who, when, what and how many
formal votes existed, which the manifest of every later version lists.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from ..models import Criterion, CriterionChange, Project, Vote


def criterion_votes(*, criterion: Criterion) -> int:
    """Formal votes cast on ``criterion``."""
    return Vote.objects.filter(criterion=criterion, round=Vote.FORMAL_ROUND).count()


def split_votes(*, project: Project, split: str) -> int:
    """Formal votes cast on any criterion of ``split``."""
    return Vote.objects.filter(
        sample__project=project, sample__split=split, round=Vote.FORMAL_ROUND
    ).count()


def change_record(
    *, criterion: Criterion, action: str, by: Any, details: dict[str, Any], votes: int
) -> CriterionChange:
    """Append one entry to the criteria history."""
    return CriterionChange.objects.create(
        project_id=criterion.project_id,
        criterion=criterion,
        split=criterion.split,
        key=criterion.key,
        action=action,
        details=details,
        votes=votes,
        by=by if getattr(by, "pk", None) else None,
    )


def _snapshot(criterion: Criterion) -> dict[str, Any]:
    return {"name": criterion.name, "description": criterion.description}


@transaction.atomic
def criterion_add(
    *, project: Project, split: str, key: str, name: str, description: str, by: Any
) -> Criterion:
    """Add a criterion at the end of its split; a removed one with the same key comes back.

    Raises ValidationError naming the field when the key is in use.
    """
    existing = (
        Criterion.all_objects.select_for_update()
        .filter(project=project, split=split, key=key)
        .first()
    )
    if existing is not None and existing.removed_at is None:
        raise ValidationError({"key": f"The {existing.get_split_display()} split has “{key}”."})
    last = Criterion.objects.filter(project=project, split=split).aggregate(m=Max("order"))["m"]
    order = (last or 0) + 1
    votes = split_votes(project=project, split=split)
    if existing is not None:
        before = _snapshot(existing)
        existing.name, existing.description = name.strip(), description.strip()
        existing.order, existing.removed_at = order, None
        existing.full_clean()
        existing.save(update_fields=["name", "description", "order", "removed_at"])
        change_record(
            criterion=existing,
            action=CriterionChange.Action.RESTORED,
            by=by,
            details={"before": before, "after": _snapshot(existing)},
            votes=votes,
        )
        return existing
    criterion = Criterion(
        project=project,
        split=split,
        key=key,
        name=name.strip(),
        description=description.strip(),
        order=order,
    )
    criterion.full_clean()
    criterion.save()
    change_record(
        criterion=criterion,
        action=CriterionChange.Action.ADDED,
        by=by,
        details={"after": _snapshot(criterion)},
        votes=votes,
    )
    return criterion


@transaction.atomic
def criterion_remove(*, criterion: Criterion, by: Any, confirmed: bool = False) -> int:
    """Take a criterion out of use; returns the formal votes it keeps.

    With votes on it the lead must confirm (``confirmed``): otherwise ValidationError says how
    many votes there are and what removing means. The last criterion of a split stays.
    """
    criterion = Criterion.objects.select_for_update().get(pk=criterion.pk)
    if Criterion.objects.filter(project_id=criterion.project_id, split=criterion.split).count() < 2:
        raise ValidationError("A split needs at least one criterion; add another one first.")
    votes = criterion_votes(criterion=criterion)
    if votes and not confirmed:
        raise ValidationError(
            f"“{criterion.name}” has {votes} vote{'' if votes == 1 else 's'}. Removing it keeps "
            "them, but the criterion leaves labeling, its labels go at the next aggregation and "
            "later versions leave it out. Tick the confirmation to remove it."
        )
    criterion.removed_at = timezone.now()
    criterion.save(update_fields=["removed_at"])
    change_record(
        criterion=criterion,
        action=CriterionChange.Action.REMOVED,
        by=by,
        details={"before": _snapshot(criterion)},
        votes=votes,
    )
    _renumber(criterion.project_id, criterion.split)
    return votes


def _renumber(project_id: int, split: str) -> list[str]:
    """Orders 1..n in the current order; returns the keys in that order."""
    criteria = list(
        Criterion.objects.filter(project_id=project_id, split=split).order_by("order", "key")
    )
    for i, c in enumerate(criteria, start=1):
        c.order = i
    Criterion.objects.bulk_update(criteria, ["order"])
    return [c.key for c in criteria]


@transaction.atomic
def criterion_move(*, criterion: Criterion, direction: str, by: Any) -> list[str]:
    """Move a criterion one place up or down within its split; returns the keys in new order."""
    if direction not in ("up", "down"):
        raise ValidationError({"direction": "Move a criterion up or down."})
    criteria = list(
        Criterion.objects.select_for_update()
        .filter(project_id=criterion.project_id, split=criterion.split)
        .order_by("order", "key")
    )
    keys = [c.key for c in criteria]
    i = keys.index(criterion.key)
    j = i - 1 if direction == "up" else i + 1
    if not 0 <= j < len(criteria):
        return keys
    criteria[i], criteria[j] = criteria[j], criteria[i]
    for n, c in enumerate(criteria, start=1):
        c.order = n
    Criterion.objects.bulk_update(criteria, ["order"])
    after = [c.key for c in criteria]
    change_record(
        criterion=criterion,
        action=CriterionChange.Action.REORDERED,
        by=by,
        details={"before": keys, "after": after},
        votes=split_votes(project=criterion.project, split=criterion.split),
    )
    return after


def criteria_history(*, project: Project) -> list[dict[str, Any]]:
    """The history as plain records, oldest first (for the manifest and the settings page)."""
    return [
        {
            "at": change.at.replace(microsecond=0).isoformat(),
            "by": change.by.get_username() if change.by else None,
            "action": change.action,
            "split": change.split,
            "criterion": change.key,
            "votes_at_change": change.votes,
            **change.details,
        }
        for change in CriterionChange.objects.filter(project=project)
        .select_related("by")
        .order_by("at", "id")
    ]
