"""The queue's side of early stopping and judge-assisted routing: items no longer asked.

The rule is pure (:mod:`annotation.routing`); this reads what it needs per sample: the formal
votes of the sample's current slot holders (the votes the label is made of, as the aggregation
counts them), the audit draw (:mod:`annotation.audit`) and the routable panel labels. The panel's
verdict only decides whether an item is still asked; nothing here is shown to annotators.

:func:`after_vote` (after each formal vote, outside the vote's transaction: of two votes
committed concurrently, the later one's call sees both) completes the open slots of the sample
whose every criterion left to their holder (or, for an unheld slot, every criterion) is no
longer asked, so such a slot cannot be claimed and a holder is not kept waiting; and reopens the
completed slots that skipped the item voted on when it asks again (a revised vote, a verifier
overruled after all). :func:`slots_settle` does the settling for many samples (the policy
switched on).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from .. import audit, routing
from ..models import (
    Choice,
    PanelLabel,
    Project,
    ProjectMember,
    RoutingPolicy,
    Sample,
    Slot,
    Vote,
)
from ..selectors.work import project_criteria
from .counters import counters_add

Item = tuple[int, int]  # (sample id, criterion id)


def policy_on(project: Project) -> bool:
    """True when early stopping or routing can leave an item unasked in this project."""
    return bool(project.early_stopping) or project.routing_policy != RoutingPolicy.OFF


def sample_audited(project: Project, sample: Sample) -> bool:
    """True when the sample is in the project's audit share (always the full protocol)."""
    return audit.in_audit(project.audit_seed, sample.external_id, float(project.audit_share))


def holder_votes(sample_ids: Sequence[int]) -> Any:
    """Formal votes on ``sample_ids`` that count for their labels (current slot holders)."""
    holder = Slot.objects.filter(sample=OuterRef("sample_id"), annotator=OuterRef("annotator_id"))
    any_slot = Slot.objects.filter(sample=OuterRef("sample_id"))
    return Vote.objects.filter(sample_id__in=list(sample_ids), round=Vote.FORMAL_ROUND).filter(
        Exists(holder) | ~Exists(any_slot)
    )


CODE = {Choice.A.value: 0, Choice.B.value: 1, Choice.TIE.value: 2}


def settled_items(
    project: Project,
    samples: Iterable[Sample],
    *,
    counted: Iterable[tuple[int, int, str]] | None = None,
) -> set[Item]:
    """The (sample, criterion) items of ``samples`` that no annotator is asked any more.

    ``counted``: the (sample, criterion, choice) of the votes that count, when the caller has
    them already (default: read with :func:`holder_votes`).
    """
    samples = list(samples)
    if not samples or not policy_on(project):
        return set()
    criteria = project_criteria(project)
    ids = [s.pk for s in samples]
    tally: dict[Item, list[int]] = defaultdict(lambda: [0, 0, 0])
    if counted is None:
        counted = holder_votes(ids).values_list("sample_id", "criterion_id", "choice")
    for sample_id, criterion_id, choice in counted:
        tally[(sample_id, criterion_id)][CODE[choice]] += 1
    panel: dict[Item, int] = {}
    if project.routing_policy == RoutingPolicy.PANEL_VERIFIER:
        for sample_id, criterion_id, choice in PanelLabel.objects.filter(
            sample_id__in=ids, routable=True
        ).values_list("sample_id", "criterion_id", "choice"):
            panel[(sample_id, criterion_id)] = (
                routing.PANEL_A if choice == Choice.A else routing.PANEL_B
            )
    items: list[Item] = []
    stop: list[bool] = []
    panels: list[int] = []
    for sample in samples:
        audited = sample_audited(project, sample)  # the audit share gets every vote
        for criterion in criteria.of(sample.split):
            item = (sample.pk, criterion.pk)
            items.append(item)
            stop.append(bool(project.early_stopping) and not audited)
            panels.append(routing.PANEL_NONE if audited else panel.get(item, routing.PANEL_NONE))
    if not items:
        return set()
    counts = np.array([tally.get(item, (0, 0, 0)) for item in items], dtype=np.int64)
    asked = routing.asks_vote(
        counts[:, 0],
        counts[:, 1],
        counts[:, 2],
        project.annotators_per_sample,
        stop=np.array(stop, dtype=bool),
        panel=np.array(panels, dtype=np.int64),
    )
    return {item for item, ask in zip(items, asked.tolist(), strict=True) if not ask}


def slots_settle(*, project: Project, sample_ids: Sequence[int]) -> int:
    """Complete the open slots of ``sample_ids`` left with nothing to ask; returns how many.

    A held slot completes when every criterion its holder has not voted on is settled; an
    unheld one when every criterion is. Each update is conditional on the holder read, so a
    slot claimed in between is left to its new holder's queue.
    """
    if not sample_ids or not policy_on(project):
        return 0
    samples = list(Sample.objects.filter(pk__in=list(sample_ids), project=project))
    settled = settled_items(project, samples)
    if not settled:
        return 0
    criteria = project_criteria(project)
    by_id = {s.pk: s for s in samples}
    slots = list(
        Slot.objects.filter(sample_id__in=list(by_id), completed_at__isnull=True).values_list(
            "pk", "sample_id", "annotator_id"
        )
    )
    voted = set(
        Vote.objects.filter(sample_id__in=list(by_id), round=Vote.FORMAL_ROUND).values_list(
            "sample_id", "annotator_id", "criterion_id"
        )
    )
    now = timezone.now()
    unheld: list[int] = []
    held: list[tuple[int, int]] = []
    for slot_id, sample_id, annotator_id in slots:
        left = [
            c.pk
            for c in criteria.of(by_id[sample_id].split)
            if (sample_id, annotator_id, c.pk) not in voted
        ]
        if all((sample_id, c) in settled for c in left):
            if annotator_id is None:
                unheld.append(slot_id)
            else:
                held.append((slot_id, annotator_id))
    done = Slot.objects.filter(
        pk__in=unheld, annotator__isnull=True, completed_at__isnull=True
    ).update(completed_at=now)
    for start in range(0, len(held), 500):  # each held slot only while its holder is unchanged
        done += slots_mark(project=project, held=held[start : start + 500], complete=True)
    return done


def slots_mark(*, project: Project, held: Sequence[tuple[int, int]], complete: bool) -> int:
    """Complete (or reopen) the held slots ``(slot id, holder id)`` and move the holders' counters.

    Each slot changes only while its holder is the one read and it is still open (or still
    complete); the holders' member rows are locked first, in id order, as a vote locks its own
    member row before its slot, so the two never wait on each other in a cycle. Returns how many
    slots changed.
    """
    if not held:
        return 0
    holders = sorted({annotator_id for _, annotator_id in held})
    with transaction.atomic():
        members = {
            m.user_id: m.pk
            for m in ProjectMember.objects.select_for_update()
            .filter(project=project, user_id__in=holders)
            .order_by("pk")
        }
        condition = Q(pk__in=[])
        for slot_id, annotator_id in held:
            condition |= Q(pk=slot_id, annotator_id=annotator_id)
        rows = list(
            Slot.objects.select_for_update()
            .filter(condition, completed_at__isnull=complete)
            .values_list("pk", "sample_id", "annotator_id", "sample__split")
        )
        if not rows:
            return 0
        Slot.objects.filter(pk__in=[r[0] for r in rows]).update(
            completed_at=timezone.now() if complete else None
        )
        votes = Vote.objects.filter(
            sample_id__in={r[1] for r in rows},
            annotator_id__in={r[2] for r in rows},
            round=Vote.FORMAL_ROUND,
        ).values_list("sample_id", "annotator_id")
        on_slot: dict[tuple[int, int], int] = defaultdict(int)
        for key in votes:
            on_slot[key] += 1
        sign = 1 if complete else -1
        for _, sample_id, annotator_id, split in rows:
            if annotator_id in members:
                counters_add(
                    member_id=members[annotator_id],
                    done_votes=sign * on_slot[(sample_id, annotator_id)],
                    done_split=split,
                    done_slots=sign,
                )
    return len(rows)


def after_vote(*, project: Project, sample_id: int, criterion_id: int) -> dict[str, int]:
    """After a formal vote on (sample, criterion): reopen and settle the sample's slots.

    The item voted on may ask again (a revision, a verifier overruled after all): the completed
    slots that skipped it reopen. Then every open slot with nothing left to ask completes, as
    :func:`slots_settle` does. One read of the sample, its slots and its votes.
    """
    if not policy_on(project):
        return {"reopened": 0, "settled": 0}
    sample = Sample.objects.filter(pk=sample_id, project=project).first()
    if sample is None:
        return {"reopened": 0, "settled": 0}
    slots = list(
        Slot.objects.filter(sample_id=sample_id).values_list("pk", "annotator_id", "completed_at")
    )
    votes = list(
        Vote.objects.filter(sample_id=sample_id, round=Vote.FORMAL_ROUND).values_list(
            "annotator_id", "criterion_id", "choice"
        )
    )
    holders = {annotator_id for _, annotator_id, _ in slots if annotator_id is not None}
    counted = [
        (sample_id, criterion_id, choice)
        for annotator_id, criterion_id, choice in votes
        if not slots or annotator_id in holders
    ]
    settled = settled_items(project, [sample], counted=counted)
    voted = {(annotator_id, c) for annotator_id, c, _ in votes}
    reopened = 0
    if (sample_id, criterion_id) not in settled:
        skipped = [
            pk
            for pk, annotator_id, completed_at in slots
            if completed_at is not None and (annotator_id, criterion_id) not in voted
        ]
        if skipped:
            reopened = Slot.objects.filter(
                pk__in=skipped, annotator__isnull=True, completed_at__isnull=False
            ).update(completed_at=None)
            reopened += slots_mark(
                project=project,
                held=[(pk, a) for pk, a, _ in slots if pk in skipped and a is not None],
                complete=False,
            )
            slots = [(pk, a, None if pk in skipped else done) for pk, a, done in slots]
    criteria = project_criteria(project).of(sample.split)
    unheld: list[int] = []
    held: list[tuple[int, int]] = []
    for pk, annotator_id, completed_at in slots:
        if completed_at is None and all(
            (sample_id, c.pk) in settled for c in criteria if (annotator_id, c.pk) not in voted
        ):
            if annotator_id is None:
                unheld.append(pk)
            else:
                held.append((pk, annotator_id))
    settled_n = Slot.objects.filter(
        pk__in=unheld, annotator__isnull=True, completed_at__isnull=True
    ).update(completed_at=timezone.now())
    settled_n += slots_mark(project=project, held=held, complete=True)
    return {"reopened": reopened, "settled": settled_n}


def project_settle(*, project: Project, chunk: int = 2000) -> int:
    """Settle every formal sample with an open slot (after the policy is switched on)."""
    if not policy_on(project):
        return 0
    ids = list(
        Slot.objects.filter(
            sample__project=project, sample__is_seed=False, completed_at__isnull=True
        )
        .values_list("sample_id", flat=True)
        .distinct()
        .order_by("sample_id")
    )
    return sum(
        slots_settle(project=project, sample_ids=ids[i : i + chunk])
        for i in range(0, len(ids), chunk)
    )
