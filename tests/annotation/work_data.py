"""Builders for work-service tests: formal samples with slots, calibrated annotators, votes."""

from __future__ import annotations

from annotation.models import ProjectMember, Sample, Slot
from annotation.services import assignment, voting, work
from annotation.services import calibration as calibration_services

GOOD = "A rationale that is long enough."


def bulk_samples(
    project, n: int, *, prefix: str = "f", split: str = "open_ended", **fields
) -> None:
    """``n`` formal samples written with bulk_create (no slots); ``fields`` override defaults."""
    rows = (
        Sample(
            project=project,
            external_id=f"{prefix}-{i:06d}",
            split=split,
            question=f"Question {prefix} {i}?",
            response_a=f"left {i}",
            response_b=f"right {i}",
            **fields,
        )
        for i in range(n)
    )
    Sample.objects.bulk_create(rows, batch_size=10_000)


def make_formal(
    project, n: int, *, prefix: str = "f", split: str = "open_ended", **fields
) -> list[Sample]:
    """Formal samples with their k pre-created slots, as an import leaves them."""
    bulk_samples(project, n, prefix=prefix, split=split, **fields)
    assignment.slots_ensure(project=project)
    return list(
        Sample.objects.filter(project=project, external_id__startswith=f"{prefix}-").order_by("id")
    )


def calibrate(project, user, lead=None) -> ProjectMember:
    member = ProjectMember.objects.get(project=project, user=user)
    return calibration_services.calibration_mark(project=project, member=member, by=lead)


def vote_next(project, user, choice: str = "A", rationale: str = GOOD):
    """Cast a vote on the annotator's next item; returns (item, vote) or (None, None)."""
    item = work.work_next(project=project, annotator=user)
    if item is None:
        return None, None
    vote = voting.vote_submit(
        project=project,
        annotator=user,
        sample_id=item.sample.pk,
        criterion_id=item.criterion.pk,
        shown_choice=choice,
        rationale=rationale,
        seconds=3.0,
    )
    return item, vote


def held(user) -> list[Slot]:
    return list(Slot.objects.filter(annotator=user).order_by("sample_id"))
