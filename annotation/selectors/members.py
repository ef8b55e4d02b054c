"""Reads for the lead's membership page: annotators with their state, counts and open slots."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import F, OuterRef, QuerySet
from django.utils import timezone

from ..models import Criterion, ProjectMember, Sample, SampleStatus, Slot, Vote
from ..services.assignment import count_of


@dataclass
class MemberRow:
    member: ProjectMember
    seed_done: int  # calibration votes in the member's current round
    seed_total: int
    assigned: int  # slots held, completed or not
    done: int  # completed slots
    votes: int  # formal votes cast
    open_slots: list[Slot] = field(default_factory=list)

    @property
    def state(self) -> str:
        if not self.member.is_active:
            return "removed"
        if self.member.is_calibrated:
            return "calibrated"
        if self.seed_total and self.seed_done >= self.seed_total:
            return "awaiting_review"
        return "calibrating"


def _seed_total(project) -> int:
    """Seed items: every active seed sample under each criterion of its split."""
    per_split: dict[str, int] = {}
    for split in Criterion.objects.filter(project=project).values_list("split", flat=True):
        per_split[split] = per_split.get(split, 0) + 1
    seeds = Sample.objects.filter(project=project, is_seed=True, status=SampleStatus.ACTIVE)
    return sum(per_split.get(split, 0) for split in seeds.values_list("split", flat=True))


def member_rows(*, project) -> list[MemberRow]:
    """Every member of the project (active first), in a fixed number of queries."""
    slots = Slot.objects.filter(sample__project_id=project.pk, annotator_id=OuterRef("user_id"))
    members = (
        ProjectMember.objects.filter(project=project)
        .select_related("user", "calibrated_by")
        .annotate(
            n_assigned=count_of(slots),
            n_done=count_of(slots.filter(completed_at__isnull=False)),
            n_votes=count_of(
                Vote.objects.filter(
                    annotator_id=OuterRef("user_id"),
                    round=Vote.FORMAL_ROUND,
                    sample__project_id=project.pk,
                )
            ),
            n_seed_done=count_of(
                Vote.objects.filter(
                    annotator_id=OuterRef("user_id"),
                    round=OuterRef("calibration_round"),
                    sample__project_id=project.pk,
                    sample__is_seed=True,
                )
            ),
        )
        .order_by("-is_active", "user__username")
    )
    seed_total = _seed_total(project)
    rows = {
        m.user_id: MemberRow(m, m.n_seed_done, seed_total, m.n_assigned, m.n_done, m.n_votes)
        for m in members
    }
    open_slots = (
        Slot.objects.filter(
            sample__project=project, annotator__isnull=False, completed_at__isnull=True
        )
        .select_related("sample")
        .annotate(
            n_votes=count_of(
                Vote.objects.filter(
                    sample_id=OuterRef("sample_id"),
                    annotator_id=OuterRef("annotator_id"),
                    round=Vote.FORMAL_ROUND,
                )
            )
        )
        .order_by("annotator_id", "lease_expires_at", "sample_id")
    )
    now = timezone.now()
    for slot in open_slots:
        slot.expired = slot.lease_expires_at is not None and slot.lease_expires_at < now
        row = rows.get(slot.annotator_id)
        if row is not None:
            row.open_slots.append(slot)
    return list(rows.values())


def users_addable(*, project) -> QuerySet[Any]:
    """Active users who are not active annotators of the project."""
    User = get_user_model()
    active = ProjectMember.objects.filter(project=project, is_active=True).values("user_id")
    return (
        User.objects.filter(is_active=True)
        .exclude(pk__in=active)
        .order_by(F("username").asc())
        .only("id", "username", "first_name", "last_name")
    )
