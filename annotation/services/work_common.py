"""Reads shared by the queue and the voting services, each a single query."""

from __future__ import annotations

import hashlib
from typing import Any

from .. import tiecap
from ..models import Choice, Criterion, Project, ProjectMember, Slot, Split, Vote
from .assignment import count_of

SPLITS = list(Split.values)


class ProjectCriteria:
    """A project's criteria by split (in screen order) and by id."""

    def __init__(self, criteria: list[Criterion]) -> None:
        self.by_id = {c.pk: c for c in criteria}
        self.by_split: dict[str, list[Criterion]] = {split: [] for split in SPLITS}
        for criterion in criteria:
            self.by_split.setdefault(criterion.split, []).append(criterion)

    def of(self, split: str) -> list[Criterion]:
        return self.by_split.get(split, [])


def project_criteria(project: Project) -> ProjectCriteria:
    """The criteria, loaded once per Project instance (a request's submit and next share it)."""
    cached = getattr(project, "_work_criteria", None)
    if cached is None:
        rows = Criterion.objects.filter(project=project).order_by("split", "order", "key")
        cached = ProjectCriteria(list(rows))
        project._work_criteria = cached
    return cached


def formal_votes(project: Project, user: Any):
    return Vote.objects.filter(
        annotator_id=user.pk, round=Vote.FORMAL_ROUND, sample__project_id=project.pk
    )


def member_progress(project: Project, user: Any) -> ProjectMember | None:
    """The active membership with formal counters, in one query.

    Adds ``f_votes`` and ``f_ties`` (all formal votes in the project: the tie cap's n and t),
    ``f_done`` (formal votes on samples whose slot the user holds), ``n_open`` (slots held and
    not completed) and ``slots_<split>`` (slots held per split).
    """
    if not getattr(user, "is_authenticated", False):
        return None
    votes = formal_votes(project, user)
    counters = {
        "f_votes": count_of(votes),
        "f_ties": count_of(votes.filter(choice=Choice.TIE)),
        "f_done": count_of(votes.filter(sample__slots__annotator_id=user.pk)),
        "n_open": count_of(
            Slot.objects.filter(
                annotator_id=user.pk, completed_at__isnull=True, sample__project_id=project.pk
            )
        ),
    }
    for split in SPLITS:
        counters[f"slots_{split}"] = count_of(
            Slot.objects.filter(
                annotator_id=user.pk, sample__project_id=project.pk, sample__split=split
            )
        )
    return (
        ProjectMember.objects.filter(project=project, user_id=user.pk, is_active=True)
        .annotate(**counters)
        .first()
    )


def formal_total(member: ProjectMember, criteria: ProjectCriteria) -> int:
    return sum(getattr(member, f"slots_{split}", 0) * len(criteria.of(split)) for split in SPLITS)


def formal_allowance(project: Project, member: ProjectMember) -> int:
    return tiecap.allowance(ties=member.f_ties, votes=member.f_votes, cap=project.tie_cap)


def seed_swapped(project: Project, user_id: int, sample_id: int) -> bool:
    """A stable per-annotator A/B order for seed items (they have no slot to store it in)."""
    if not project.shuffle_ab:
        return False
    digest = hashlib.blake2s(f"{project.pk}:{user_id}:{sample_id}".encode()).digest()
    return bool(digest[0] & 1)


def shown_to_canonical(shown: str, swapped: bool) -> str:
    """Map the side the annotator clicked ("A" = left) to canonical A/B."""
    if swapped and shown in (Choice.A, Choice.B):
        return Choice.B if shown == Choice.A else Choice.A
    return shown
