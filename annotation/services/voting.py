"""Casting and revising votes: rationale rule, tie cap, slot ownership and the calibration gate.

The tie cap (formal votes only, calibration excluded), with ``cap = p / q`` exact and ``n``
formal votes of which ``t`` are ties before this one:

- a new tie is accepted when ``(t + 1) * q < p * (n + 1)`` (strictly below the cap, counting
  the vote being cast: at 10% the first tie is possible at the 11th vote);
- revising a non-tie vote to a tie is accepted when ``(t + 1) * q < p * n``;
- ``tie_allowance`` is the largest ``m`` with ``(t + m) * q < p * (n + m)``.

See :mod:`annotation.tiecap`. The annotator's membership row is locked while a vote is cast,
so two tabs cannot both spend the last tie.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Case, Count, DateTimeField, Q, Value, When
from django.db.models.lookups import GreaterThanOrEqual
from django.utils import timezone

from .. import tiecap
from ..models import (
    Choice,
    Project,
    ProjectMember,
    Sample,
    SampleStatus,
    Slot,
    Vote,
    VoteRevision,
)
from .assignment import count_of
from .work_common import formal_votes, project_criteria, seed_swapped, shown_to_canonical
from .work_types import VoteRejected

SHOWN_CHOICES = (Choice.A, Choice.B, Choice.TIE)


def _formal_counts(project: Project, annotator: Any) -> tuple[int, int]:
    """(formal votes, formal ties) of the annotator in the project, in one query."""
    counts = formal_votes(project, annotator).aggregate(
        n=Count("pk"), t=Count("pk", filter=Q(choice=Choice.TIE))
    )
    return counts["n"], counts["t"]


def tie_allowance(*, project: Project, annotator: Any) -> int:
    """Ties the annotator may cast now, one after the other (formal votes only)."""
    n, t = _formal_counts(project, annotator)
    return tiecap.allowance(ties=t, votes=n, cap=project.tie_cap)


def _percent(cap: Any) -> str:
    value = float(cap) * 100
    return f"{value:.0f}%" if value == int(value) else f"{value:.1f}%"


def _tie_check(*, project: Project, annotator: Any, revising: bool) -> None:
    n, t = _formal_counts(project, annotator)
    allowed = (
        tiecap.revise_to_tie_allowed(ties=t, votes=n, cap=project.tie_cap)
        if revising
        else tiecap.new_tie_allowed(ties=t, votes=n, cap=project.tie_cap)
    )
    if not allowed:
        cast = n if revising else n + 1
        raise VoteRejected(
            "choice",
            f"No tie available: ties must stay below {_percent(project.tie_cap)} of your formal "
            f"votes, and {t + 1} ties in {cast} votes would not. Choose A or B, or keep this "
            "item for later.",
        )


def vote_submit(
    *,
    project: Project,
    annotator: Any,
    sample_id: int,
    criterion_id: int,
    shown_choice: str,
    rationale: str,
    seconds: float,
) -> Vote:
    """Create or revise the annotator's vote on (sample, criterion) in their current phase.

    ``shown_choice`` is the side clicked on screen ("A" = left, "B" = right, "tie"); it is
    stored in canonical A/B terms using the item's display order. Raises VoteRejected.
    """
    if shown_choice not in SHOWN_CHOICES:
        raise VoteRejected("choice", "Choose A, B or tie.")
    rationale = (rationale or "").strip()
    minimum = project.rationale_min_chars
    if len(rationale) < minimum:
        raise VoteRejected(
            "rationale",
            f"Write a rationale of at least {minimum} characters ({len(rationale)} so far).",
        )
    seconds = max(0.0, float(seconds or 0))
    criteria = project_criteria(project)
    criterion = criteria.by_id.get(criterion_id)
    if criterion is None:
        raise VoteRejected("criterion", "This criterion is not part of the project.")

    with transaction.atomic():
        # The lock serialises one annotator's votes (tie cap) on PostgreSQL; SQLite's
        # IMMEDIATE transactions already serialise all writers.
        member = (
            ProjectMember.objects.select_for_update()
            .filter(project=project, user_id=annotator.pk, is_active=True)
            .first()
        )
        if member is None:
            raise VoteRejected("sample", "You are not an annotator in this project.")
        slot = None
        if member.is_calibrated:
            slot = (
                Slot.objects.select_for_update(of=("self",))
                .select_related("sample")
                .filter(
                    sample_id=sample_id,
                    annotator_id=annotator.pk,
                    sample__project=project,
                    sample__is_seed=False,
                )
                .first()
            )
            if slot is None:
                raise VoteRejected(
                    "sample",
                    "This sample is no longer assigned to you (the lease ran out or the lead "
                    "reassigned it). Your vote was not saved.",
                )
            sample = slot.sample
            round_ = Vote.FORMAL_ROUND
            swapped = slot.swap_ab
        else:
            sample = Sample.objects.filter(
                pk=sample_id, project=project, is_seed=True, status=SampleStatus.ACTIVE
            ).first()
            if sample is None:
                raise VoteRejected(
                    "sample",
                    "Formal work opens once the lead has reviewed your calibration.",
                )
            round_ = member.calibration_round
            swapped = seed_swapped(project, annotator.pk, sample.pk)
        if sample.split != criterion.split:
            raise VoteRejected("criterion", "This criterion does not apply to this sample.")
        choice = shown_to_canonical(shown_choice, swapped)
        existing = (
            Vote.objects.select_for_update()
            .filter(sample=sample, criterion=criterion, annotator_id=annotator.pk, round=round_)
            .first()
        )
        formal = round_ == Vote.FORMAL_ROUND
        if formal and choice == Choice.TIE and (existing is None or existing.choice != Choice.TIE):
            _tie_check(project=project, annotator=annotator, revising=existing is not None)
        if existing is None:
            vote = Vote.objects.create(
                sample=sample,
                criterion=criterion,
                annotator_id=annotator.pk,
                round=round_,
                choice=choice,
                rationale=rationale,
                seconds=seconds,
                shown_swapped=swapped,
            )
        else:
            vote = existing
            if (vote.choice, vote.rationale) != (choice, rationale):
                VoteRevision.objects.create(
                    vote=vote,
                    choice=vote.choice,
                    rationale=vote.rationale,
                    seconds=vote.seconds,
                    recorded_at=vote.updated_at,
                )
            vote.choice = choice
            vote.rationale = rationale
            vote.seconds = seconds
            vote.shown_swapped = swapped
            vote.save(
                update_fields=["choice", "rationale", "seconds", "shown_swapped", "updated_at"]
            )
        if slot is not None:
            _slot_touch(project=project, slot=slot, n_criteria=len(criteria.of(sample.split)))
    vote.sample = sample
    vote.criterion = criterion
    return vote


def _slot_touch(*, project: Project, slot: Slot, n_criteria: int) -> None:
    """Renew the lease and mark the slot completed once every criterion has a vote."""
    now = timezone.now()
    voted = count_of(
        Vote.objects.filter(
            sample_id=slot.sample_id, annotator_id=slot.annotator_id, round=Vote.FORMAL_ROUND
        )
    )
    completed = (
        Value(slot.completed_at, output_field=DateTimeField())
        if slot.completed_at is not None
        else Case(
            When(GreaterThanOrEqual(voted, n_criteria), then=Value(now)),
            default=Value(None),
            output_field=DateTimeField(),
        )
    )
    Slot.objects.filter(pk=slot.pk).update(
        lease_expires_at=now + timedelta(minutes=project.lease_minutes), completed_at=completed
    )
