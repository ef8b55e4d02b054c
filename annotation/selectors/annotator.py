"""Reads for the annotator's own home page: progress per project and the history of their votes.

Only the annotator's own votes are read here; nothing names or counts another annotator.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.apps import apps
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery, Sum
from django.utils import timezone

from .. import scales
from ..ab import canonical_to_shown
from ..models import Project, ProjectMember, Slot, Vote
from ..services.voting import revision_locked
from ..services.work import WorkState, work_state


@dataclass(frozen=True)
class ProjectProgress:
    """One project on the annotator's home page."""

    member: ProjectMember
    state: WorkState
    votes: int  # all the annotator's votes in the project (calibration included)
    votes_today: int  # cast since midnight (local time)
    seconds: float  # time on the items of those votes, as measured by the labeling screen
    seconds_today: float

    @property
    def project(self) -> Project:
        return self.member.project

    @property
    def discussion_open(self) -> bool:
        return self.state.mode in {"awaiting_review", "formal", "done"}

    @property
    def seeds_left(self) -> int:
        return max(0, self.state.total - self.state.done)


def start_of_today() -> datetime:
    """Midnight of today in the project's time zone."""
    return timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)


def annotator_projects(*, user: Any) -> list[ProjectProgress]:
    """The user's active memberships with their phase, progress and time spent."""
    members = list(
        ProjectMember.objects.filter(user=user, is_active=True)
        .select_related("project")
        .order_by("project__name")
    )
    today = Q(created_at__gte=start_of_today())
    sums = {
        row["sample__project_id"]: row
        for row in Vote.objects.filter(annotator_id=user.pk)
        .values("sample__project_id")
        .annotate(
            n=Count("pk"),
            n_today=Count("pk", filter=today),
            secs=Sum("seconds"),
            secs_today=Sum("seconds", filter=today),
        )
        .order_by()
    }
    out = []
    for member in members:
        row = sums.get(member.project_id, {})
        out.append(
            ProjectProgress(
                member=member,
                state=work_state(project=member.project, annotator=user),
                votes=row.get("n", 0),
                votes_today=row.get("n_today", 0),
                seconds=float(row.get("secs") or 0),
                seconds_today=float(row.get("secs_today") or 0),
            )
        )
    return out


@dataclass(frozen=True)
class HistoryRow:
    """One of the annotator's votes, as they saw it, and whether they may still revise it."""

    vote: Vote
    shown_choice: str  # "A" (left), "B" (right) or "tie", as on their screen
    revisable: bool
    why_not: str  # when not revisable
    shown_answer: str = ""  # graded / pointwise: the grade or scores as on their screen


def annotator_votes(*, user: Any, query: str = "", project_id: int | None = None) -> QuerySet:
    """The user's votes in their active projects, newest change first, optionally searched.

    ``query`` matches the sample's id, the question or the rationale (case-insensitive).
    Each vote carries ``slot_done`` (their slot's completion), ``labelled_at`` (the split's
    last aggregation, when the sample has labels) and ``holds_slot``, for :func:`history_rows`.
    """
    label = apps.get_model("aggregation", "CriterionLabel")
    snapshot = apps.get_model("aggregation", "AgreementSnapshot")
    slots = Slot.objects.filter(sample_id=OuterRef("sample_id"), annotator_id=user.pk)
    aggregated = snapshot.objects.filter(
        project_id=OuterRef("sample__project_id"), split=OuterRef("sample__split")
    ).filter(Exists(label.objects.filter(sample_id=OuterRef(OuterRef("sample_id")))))
    votes = (
        Vote.objects.filter(
            annotator_id=user.pk,
            sample__project__members__user_id=user.pk,
            sample__project__members__is_active=True,
        )
        .select_related("sample__project", "criterion")
        .annotate(
            holds_slot=Exists(slots),
            slot_done=Subquery(slots.values("completed_at")[:1]),
            labelled_at=Subquery(aggregated.values("computed_at")[:1]),
        )
        .order_by("-updated_at", "-pk")
    )
    if project_id:
        votes = votes.filter(sample__project_id=project_id)
    query = query.strip()
    if query:
        votes = votes.filter(
            Q(sample__external_id__icontains=query)
            | Q(sample__question__icontains=query)
            | Q(rationale__icontains=query)
        )
    return votes


def history_rows(votes: list[Vote], members: dict[int, ProjectMember]) -> list[HistoryRow]:
    """Whether each vote may be revised now, by the rules of the labeling screen.

    A formal vote: while the annotator holds the sample's slot and the project's revision
    window allows it. A calibration vote: while its round is the annotator's current one and
    they are not calibrated yet.
    """
    rows = []
    for vote in votes:
        member = members.get(vote.sample.project_id)
        why = ""
        if member is None:
            why = "You are no longer in this project."
        elif vote.round == Vote.FORMAL_ROUND:
            if not member.is_calibrated or not vote.holds_slot:
                why = "The sample is no longer assigned to you."
            elif revision_locked(
                window=vote.sample.project.vote_revision_window,
                slot_completed_at=vote.slot_done,
                labelled_at=vote.labelled_at,
                vote_changed_at=vote.updated_at,
            ):
                why = "Locked: the revision window has closed."
        elif member.is_calibrated or vote.round != member.calibration_round:
            why = "A calibration vote of a finished round."
        rows.append(
            HistoryRow(
                vote=vote,
                shown_choice=canonical_to_shown(vote.choice, vote.shown_swapped),
                revisable=not why,
                why_not=why,
                shown_answer=_shown_answer(vote),
            )
        )
    return rows


def _shown_answer(vote: Vote) -> str:
    """A graded or pointwise vote's answer in the terms of the annotator's own screen."""
    swapped = vote.shown_swapped
    if vote.grade is not None:
        return scales.answer_text(
            scales.grade_shown_to_canonical(vote.grade, swapped=swapped), None, None
        )
    if vote.score_a is not None and vote.score_b is not None:
        left, right = scales.scores_shown_to_canonical(vote.score_a, vote.score_b, swapped=swapped)
        return scales.answer_text(None, left, right)
    return ""
