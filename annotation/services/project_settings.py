"""The lead's edits of a project's protocol settings and its criteria descriptions."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from core.text import counted

from .. import scales
from ..models import Criterion, CriterionChange, Project, Slot, Vote
from ..selectors.projects import project_has_formal_votes
from .assignment import slots_ensure
from .criteria import change_record, criterion_votes
from .routing import project_settle

EDITABLE_SETTINGS = (
    "name",
    "description",
    "label_scale",
    "annotators_per_sample",
    "tie_cap",
    "rationale_min_chars",
    "lease_minutes",
    "batch_size",
    "work_order",
    "shuffle_ab",
    "export_includes_seeds",
    "vote_revision_window",
    "calibration_threshold",
    "guidelines",
    "early_stopping",
    "routing_policy",
    "audit_share",
    "audit_seed",
)
# Fixed once formal votes exist: changing them would change which items were asked for fewer
# votes after the fact (the audit draw, the routing) or leave stopped items short of votes.
LOCKED_ONCE_VOTED = ("routing_policy", "audit_share", "audit_seed")


def _policy_check(project: Project, old: dict[str, Any]) -> None:
    """Refuse a change of the audit draw or routing, or early stopping off, once votes exist."""
    changed = [f for f in LOCKED_ONCE_VOTED if getattr(project, f) != old[f]]
    stopping_off = old["early_stopping"] and not project.early_stopping
    if not changed and not stopping_off:
        return
    if not project_has_formal_votes(project=project):
        return
    errors = {
        f: "Fixed once formal votes exist: the audit share and routing decide which items got "
        "fewer votes, so changing them now would misstate the labels already made."
        for f in changed
    }
    if stopping_off:
        errors["early_stopping"] = (
            "Early stopping cannot be switched off once formal votes exist: the items it "
            "stopped would be left short of votes. Switching it on is possible at any time."
        )
    raise ValidationError(errors)


@transaction.atomic
def project_settings_update(*, project: Project, by: Any, **changes: Any) -> Project:
    """Apply setting changes; a change of annotators per sample adjusts the open slots.

    More annotators per sample adds the missing slots. Fewer is accepted only while no claimed
    slot lies above the new number (votes already cast are never orphaned); open slots above
    it are removed.
    """
    unknown = set(changes) - set(EDITABLE_SETTINGS)
    if unknown:
        raise ValueError(f"not editable: {', '.join(sorted(unknown))}")
    project = Project.objects.select_for_update().get(pk=project.pk)
    if "label_scale" in changes and changes["label_scale"] != project.label_scale:
        label_scale_check_changeable(project=project)
    old_k = project.annotators_per_sample
    old = {f: getattr(project, f) for f in (*LOCKED_ONCE_VOTED, "early_stopping")}
    for field, value in changes.items():
        setattr(project, field, value)
    project.full_clean()
    _policy_check(project, old)
    new_k = project.annotators_per_sample
    if new_k < old_k:
        above = Slot.objects.filter(sample__project=project, index__gt=new_k)
        if (
            above.filter(annotator__isnull=False).exists()
            or above.filter(completed_at__isnull=False).exists()
        ):
            raise ValidationError(
                {
                    "annotators_per_sample": (
                        f"Some samples already have an annotator in a place above {new_k}; "
                        "reassign or finish those slots first."
                    )
                }
            )
        above.delete()
    project.save()
    if new_k > old_k:
        slots_ensure(project=project)
    if any(getattr(project, f) != old[f] for f in old):
        # Items that no longer need a vote under the new policy: their open slots complete.
        project_settle(project=project)
    return project


def rubric_checked(rubric: dict[str, Any]) -> dict[str, str]:
    """A rubric with a non-empty text for each score 1-5; ValidationError names the level."""
    out: dict[str, str] = {}
    for score in scales.SCORES:
        text = str(rubric.get(str(score)) or "").strip()
        if not text:
            raise ValidationError({f"rubric_{score}": f"Say what a score of {score} means."})
        out[str(score)] = text
    return out


SCALE_FIXED = (
    "The label scale is fixed once formal annotation has started: this project already has "
    "{votes}. Start a new project to label with another scale."
)


def label_scale_fixed_reason(*, project: Project) -> str:
    """Why the project's label scale can no longer change ("" while it can)."""
    if project.pk is None:
        return ""
    n = Vote.objects.filter(sample__project=project, round=Vote.FORMAL_ROUND).count()
    return SCALE_FIXED.format(votes=counted(n, "formal vote")) if n else ""


def label_scale_check_changeable(*, project: Project) -> None:
    """Refuse a change of the label scale once the project has a formal vote."""
    reason = label_scale_fixed_reason(project=project)
    if reason:
        raise ValidationError({"label_scale": reason})


@transaction.atomic
def criterion_update(
    *,
    criterion: Criterion,
    by: Any,
    name: str,
    description: str,
    rubric: dict[str, str] | None = None,
) -> Criterion:
    """Edit the name and Markdown description annotators see for a criterion.

    ``rubric`` (pointwise projects) replaces what each score 1-5 means; None keeps it.
    """
    # Read what is stored: a ModelForm has already written the new values on ``criterion``.
    stored = Criterion.all_objects.get(pk=criterion.pk)
    before = {"name": stored.name, "description": stored.description, "rubric": stored.rubric}
    criterion.name = name.strip()
    criterion.description = description.strip()
    criterion.rubric = rubric_checked(rubric) if rubric is not None else stored.rubric
    criterion.full_clean()
    criterion.save(update_fields=["name", "description", "rubric"])
    after = {
        "name": criterion.name,
        "description": criterion.description,
        "rubric": criterion.rubric,
    }
    if after != before:
        change_record(
            criterion=criterion,
            action=CriterionChange.Action.EDITED,
            by=by,
            details={
                "before": {k: v for k, v in before.items() if after[k] != v},
                "after": {k: v for k, v in after.items() if before[k] != v},
            },
            votes=criterion_votes(criterion=criterion),
        )
    return criterion
