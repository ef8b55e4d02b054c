"""What an annotator works on next, and everything else the labeling screens call.

Phases: until the lead marks the annotator calibrated they label every active seed sample under
each criterion of its split, in round ``member.calibration_round`` (Vote.round >= 1); after
that they claim formal samples in batches (``project.batch_size``), served in
``project.work_order``. Claims live in ``assignment``, votes in ``voting``, the calibration
gate in ``calibration``; the counts these read in ``annotation.selectors.work``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from annotation.selectors.work import (
    SPLITS,
    ProjectCriteria,
    formal_allowance,
    formal_share,
    formal_tie_wait,
    formal_total,
    member_progress,
    open_slots,
    open_slots_progress,
    project_criteria,
    seed_swapped,
    skip_order,
)
from core.permissions import require_annotator

from ..importing.limits import text_problem
from ..models import (
    ProblemReport,
    Project,
    ProjectMember,
    Sample,
    SampleStatus,
    Skip,
    Slot,
    Vote,
    WorkOrder,
)
from . import routing
from .assignment import (
    RELEASED,
    claim_candidates,
    leases_renew,
    slots_claim,
)
from .counters import counters_recount
from .work_types import VoteRejected, WorkItem, WorkState


def ordered_items(
    samples: list[Sample], criteria: ProjectCriteria, work_order: str
) -> list[tuple[Sample, Any]]:
    """The (sample, criterion) screens of a batch in the project's work order.

    Criterion-major: every sample of the batch on the first criterion, then the next (split by
    split). Sample-major: all criteria of one sample, then the next sample.
    """
    if work_order == WorkOrder.SAMPLE_MAJOR:
        return [(s, c) for s in samples for c in criteria.of(s.split)]
    items = []
    for split in SPLITS:
        in_split = [s for s in samples if s.split == split]
        for criterion in criteria.of(split):
            items.extend((s, criterion) for s in in_split)
    return items


Pick = tuple[Sample, Any, bool, bool]  # sample, criterion, skipped before, sample seen before


def _pick(
    items: list[tuple[Sample, Any]],
    voted: set[tuple[int, int]],
    skipped: dict[tuple[int, int], int],
) -> Pick | None:
    """The first item without a vote; skipped items wait until every other one is voted.

    Among skipped items the one skipped longest ago comes back first.
    """
    todo = [(s, c) for s, c in items if (s.pk, c.pk) not in voted]
    if not todo:
        return None
    fresh = [(s, c) for s, c in todo if (s.pk, c.pk) not in skipped]
    if fresh:
        sample, criterion = fresh[0]
    else:
        sample, criterion = min(todo, key=lambda item: skipped[(item[0].pk, item[1].pk)])
    seen = any(s == sample.pk for s, _ in voted)
    return sample, criterion, (sample.pk, criterion.pk) in skipped, seen


def _seeds(project: Project, user: Any) -> list[Sample]:
    """Active seed samples without an open problem report by the user."""
    samples = (
        Sample.objects.filter(project=project, is_seed=True, status=SampleStatus.ACTIVE)
        .exclude(problem_reports__reporter_id=user.pk, problem_reports__resolved_at__isnull=True)
        .order_by("split", "id")
    )
    rows = list(samples)
    for sample in rows:
        sample.project = project
    return rows


def _calibration_items(project: Project, member: ProjectMember, user: Any):
    criteria = project_criteria(project)
    seeds = _seeds(project, user)
    items = ordered_items(seeds, criteria, project.work_order)
    voted = set(
        Vote.objects.filter(
            annotator_id=user.pk, round=member.calibration_round, sample__in=[s.pk for s in seeds]
        ).values_list("sample_id", "criterion_id")
    )
    return items, voted


def _open_slots(project: Project, user: Any, rows: list[Slot] | None = None) -> list[Slot]:
    """The user's open slots with their samples and, in the same query, the criteria voted."""
    rows = list(open_slots(project, user)) if rows is None else rows
    for slot in rows:
        slot.sample.project = project
    return rows


def _formal_voted(user: Any, slots: list[Slot]) -> set[tuple[int, int]]:
    if not slots:
        return set()
    if all(hasattr(slot, "voted_criteria") for slot in slots):  # read with the slots
        return {
            (slot.sample_id, int(c))
            for slot in slots
            for c in (slot.voted_criteria or "").split(",")
            if c
        }
    return set(
        Vote.objects.filter(
            annotator_id=user.pk,
            round=Vote.FORMAL_ROUND,
            sample_id__in=[slot.sample_id for slot in slots],
        ).values_list("sample_id", "criterion_id")
    )


def _still_asked(
    project: Project, slots: list[Slot], batch: list[tuple[Sample, Any]]
) -> list[tuple[Sample, Any]]:
    """The batch without the items early stopping or routing no longer asks (services.routing)."""
    if not routing.policy_on(project):
        return batch
    settled = routing.settled_items(project, [slot.sample for slot in slots])
    return [(s, c) for s, c in batch if (s.pk, c.pk) not in settled]


def work_state(*, project: Project, annotator: Any) -> WorkState:
    """The annotator's phase and progress in the project."""
    member = member_progress(project, annotator)
    if member is None:
        return WorkState("not_member", 0, 0, None, 0)
    if not member.is_calibrated:
        items, voted = _calibration_items(project, member, annotator)
        done = sum(1 for s, c in items if (s.pk, c.pk) in voted)
        mode = "calibration" if done < len(items) else "awaiting_review"
        return WorkState(mode, done, len(items), None, member.calibration_round)
    criteria = project_criteria(project)
    has_work = Slot.objects.filter(
        annotator_id=annotator.pk, completed_at__isnull=True, sample__project=project
    ).exists() or bool(
        claim_candidates(project=project, user=annotator, now=timezone.now(), limit=1)
    )
    if has_work:
        total = formal_share(project, member, criteria)
        not_asked = 0
    else:
        total = formal_total(member, criteria)
        # Under early stopping or routing the completed slots hold items never asked.
        not_asked = max(total - member.f_done, 0) if routing.policy_on(project) else 0
        total -= not_asked
    return WorkState(
        "formal" if has_work else "done",
        member.f_done,
        total,
        formal_allowance(project, member),
        member.calibration_round,
        not_asked,
    )


def work_next(*, project: Project, annotator: Any) -> WorkItem | None:
    """The next item to label, claiming a new batch when the annotator holds no open slot."""
    member, held = open_slots_progress(project, annotator)
    if member is None:
        return None
    if not member.is_calibrated:
        items, voted = _calibration_items(project, member, annotator)
        done = sum(1 for s, c in items if (s.pk, c.pk) in voted)
        skipped = (
            skip_order(annotator, [s.pk for s, _ in items], member.calibration_round)
            if member.n_skips
            else {}
        )
        picked = _pick(items, voted, skipped)
        if picked is not None:
            sample, criterion, was_skipped, seen = picked
            return WorkItem(
                sample=sample,
                criterion=criterion,
                round=member.calibration_round,
                swapped=seed_swapped(project, annotator.pk, sample.pk),
                done=done,
                total=len(items),
                ties_available=None,
                vote=None,
                skipped=was_skipped,
                returning=seen,
            )
        return None

    criteria = project_criteria(project)
    slots = _open_slots(project, annotator, held)
    claimed = False
    for _ in range(2):
        if not slots:
            if not slots_claim(project=project, user=annotator):
                return None
            slots = _open_slots(project, annotator)
            # Before the claim the user held no open slot: the new ones are all of them.
            for slot in slots:
                name = f"slots_{slot.sample.split}"
                setattr(member, name, getattr(member, name, 0) + 1)
            claimed = True
        # Freshly claimed samples carry no vote of this annotator (claims skip those).
        voted = set() if claimed else _formal_voted(annotator, slots)
        batch = ordered_items([slot.sample for slot in slots], criteria, project.work_order)
        batch = _still_asked(project, slots, batch)
        by_sample = {slot.sample_id: slot for slot in slots}
        skipped = (
            skip_order(annotator, list(by_sample), Vote.FORMAL_ROUND)
            if member.n_skips and not claimed
            else {}
        )
        picked = _pick(batch, voted, skipped)
        if picked is not None:
            sample, criterion, was_skipped, seen = picked
            if not claimed:
                leases_renew(project=project, user=annotator, slots=slots, now=timezone.now())
            return WorkItem(
                sample=sample,
                criterion=criterion,
                round=Vote.FORMAL_ROUND,
                swapped=by_sample[sample.pk].swap_ab,
                done=member.f_done,
                total=formal_share(project, member, criteria),
                ties_available=formal_allowance(project, member),
                vote=None,
                tie_wait=formal_tie_wait(project, member),
                skipped=was_skipped,
                returning=seen,
            )
        # Every criterion is voted (criteria changed since): close these slots and go on.
        with transaction.atomic():
            # The member row first, as the vote transaction locks it (one lock order).
            list(ProjectMember.objects.select_for_update().filter(pk=member.pk).values("pk"))
            Slot.objects.filter(pk__in=[s.pk for s in slots], completed_at__isnull=True).update(
                completed_at=timezone.now()
            )
            counters_recount(project_id=project.pk, user_id=annotator.pk)  # rare: recount
        slots = []
    return None


def work_item(*, project: Project, annotator: Any, sample_id: int, criterion_id: int) -> WorkItem:
    """An item the annotator may see in their current phase (own slot or seed), with its vote."""
    member = member_progress(project, annotator)
    if member is None:
        raise PermissionDenied("You are not an annotator in this project.")
    criteria = project_criteria(project)
    criterion = criteria.by_id.get(criterion_id)
    if criterion is None:
        raise Http404("No such criterion in this project.")
    if member.is_calibrated:
        slot = (
            Slot.objects.filter(
                sample_id=sample_id,
                annotator_id=annotator.pk,
                sample__project=project,
                sample__is_seed=False,
            )
            .select_related("sample")
            .first()
        )
        if slot is None:
            raise PermissionDenied("This sample is not assigned to you.")
        sample, round_, swapped = slot.sample, Vote.FORMAL_ROUND, slot.swap_ab
        done, total = member.f_done, formal_share(project, member, criteria)
        ties: int | None = formal_allowance(project, member)
        tie_wait = formal_tie_wait(project, member)
    else:
        sample = Sample.objects.filter(pk=sample_id, project=project, is_seed=True).first()
        if sample is None:
            raise PermissionDenied("Formal work opens once the lead has reviewed your calibration.")
        round_ = member.calibration_round
        swapped = seed_swapped(project, annotator.pk, sample.pk)
        items, voted = _calibration_items(project, member, annotator)
        done = sum(1 for s, c in items if (s.pk, c.pk) in voted)
        total, ties, tie_wait = len(items), None, None
    if criterion.split != sample.split:
        raise Http404("This criterion does not apply to this sample.")
    sample.project = project
    vote = Vote.objects.filter(
        sample=sample, criterion=criterion, annotator_id=annotator.pk, round=round_
    ).first()
    return WorkItem(sample, criterion, round_, swapped, done, total, ties, vote, tie_wait)


def vote_previous(
    *, project: Project, annotator: Any, before: tuple[int, int] | None
) -> WorkItem | None:
    """The vote cast just before item ``before`` (or the latest vote), in the current phase."""
    member = ProjectMember.objects.filter(
        project=project, user_id=annotator.pk, is_active=True
    ).first()
    if member is None:
        return None
    if member.is_calibrated:
        votes = Vote.objects.filter(
            annotator_id=annotator.pk,
            round=Vote.FORMAL_ROUND,
            sample__project=project,
            sample__slots__annotator_id=annotator.pk,
        )
    else:
        votes = Vote.objects.filter(
            annotator_id=annotator.pk,
            round=member.calibration_round,
            sample__project=project,
            sample__is_seed=True,
        )
    if before is not None:
        anchor = votes.filter(sample_id=before[0], criterion_id=before[1]).first()
        if anchor is not None:
            votes = votes.filter(pk__lt=anchor.pk)
    previous = votes.order_by("-pk").first()
    if previous is None:
        return None
    return work_item(
        project=project,
        annotator=annotator,
        sample_id=previous.sample_id,
        criterion_id=previous.criterion_id,
    )


@transaction.atomic
def problem_report(
    *, project: Project, annotator: Any, sample_id: int, kind: str, note: str
) -> ProblemReport:
    """Flag a sample for the lead; it leaves the annotator's queue (their open slot is released)."""
    require_annotator(annotator, project)
    sample = Sample.objects.filter(pk=sample_id, project=project).first()
    if sample is None:
        raise Http404("No such sample in this project.")
    report = ProblemReport.objects.filter(
        sample=sample, reporter_id=annotator.pk, resolved_at__isnull=True
    ).first()
    if report is None:
        report = ProblemReport.objects.create(
            sample=sample, reporter_id=annotator.pk, kind=kind, note=note
        )
    Slot.objects.filter(sample=sample, annotator_id=annotator.pk, completed_at__isnull=True).update(
        **RELEASED
    )
    return report


def item_skip(
    *, project: Project, annotator: Any, sample_id: int, criterion_id: int, reason: str
) -> Skip:
    """Put an item off for later: it is served again once every other open item has a vote.

    A skip needs a reason (the lead reads them); an item already answered is not skipped.
    Raises VoteRejected (field ``skip``), PermissionDenied or Http404 as :func:`work_item`.
    """
    reason = (reason or "").strip()
    if not reason:
        raise VoteRejected("skip", "Say why you skip this item; a few words are enough.")
    problem = text_problem(reason)
    if problem:
        raise VoteRejected("skip", f"The reason {problem}.")
    item = work_item(
        project=project, annotator=annotator, sample_id=sample_id, criterion_id=criterion_id
    )
    if item.vote is not None:
        raise VoteRejected(
            "skip", "You have already answered this item; submit to keep or change your answer."
        )
    return Skip.objects.create(
        sample_id=item.sample.pk,
        criterion_id=item.criterion.pk,
        annotator_id=annotator.pk,
        round=item.round,
        reason=reason,
    )
