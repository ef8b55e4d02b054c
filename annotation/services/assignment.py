"""Slots: creating them, claiming them race-free, leases, reclaiming, and the lead's moves.

Every formal sample has exactly ``annotators_per_sample`` pre-created Slot rows, so the cap is a
row count the database keeps. A claim is one conditional UPDATE of slots that are open
(``annotator`` null) or expired (lease over and not completed): under concurrency the second
writer's condition no longer matches (PostgreSQL re-checks it on the locked row; SQLite
serialises writers with IMMEDIATE transactions), so the update count says what was won. The
unique (sample, annotator) constraint stops one annotator from holding two slots of a sample
even from two tabs at once; that IntegrityError just moves the claim on to the next candidate.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import (
    Case,
    Count,
    F,
    Func,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..models import ProblemReport, Project, ProjectMember, Sample, SampleStatus, Slot, Vote

# Leases are renewed on activity, but at most once per this share of the lease, so that a
# loop of votes does not rewrite the annotator's slots on every request.
RENEW_FRACTION = 0.1


def qn(name: str) -> str:
    """A quoted column name (``index`` is a reserved word)."""
    return connection.ops.quote_name(name)


# Rounds of candidate selection when other claimers keep winning the same slots.
CLAIM_ATTEMPTS = 5


def count_of(queryset: QuerySet) -> Coalesce:
    """A correlated ``SELECT COUNT(*)`` usable in annotations (0 when nothing matches)."""
    return Coalesce(Subquery(queryset.order_by().values(n=Func(F("pk"), function="COUNT"))), 0)


def open_condition(now: datetime) -> Q:
    """Slots a claim may take: never claimed, released, or leased out and expired.

    Never a completed one: early stopping and routing complete the unheld slots of a sample
    that asks nothing more (``services.routing.slots_settle``).
    """
    return Q(completed_at__isnull=True) & (Q(annotator__isnull=True) | Q(lease_expires_at__lt=now))


def lease_until(project: Project, now: datetime) -> datetime:
    return now + timedelta(minutes=project.lease_minutes)


def formal_samples(project: Project) -> QuerySet[Sample]:
    return Sample.objects.filter(project=project, is_seed=False, status=SampleStatus.ACTIVE)


def slots_create(*, sample_ids: Sequence[int], k: int, fresh: bool = False) -> int:
    """Create the missing slots (indices 1..k) of the given formal samples; returns how many.

    ``fresh``: the samples were just created and have no slot yet, so none is looked up.
    """
    if not sample_ids:
        return 0
    have: set[tuple[int, int]] = set()
    if not fresh:
        have = set(Slot.objects.filter(sample_id__in=sample_ids).values_list("sample_id", "index"))
    rows = [
        Slot(sample_id=sample_id, index=index)
        for sample_id in sample_ids
        for index in range(1, k + 1)
        if (sample_id, index) not in have
    ]
    Slot.objects.bulk_create(rows, ignore_conflicts=not fresh, batch_size=2000)
    return len(rows)


@transaction.atomic
def slots_ensure(*, project: Project) -> int:
    """Create the missing Slot rows (indices 1..k) of every formal sample; returns how many."""
    k = project.annotators_per_sample
    short = (
        formal_samples(project)
        .annotate(n_slots=Count("slots"))
        .filter(n_slots__lt=k)
        .values_list("pk", flat=True)
    )
    created = 0
    chunk: list[int] = []

    def flush() -> int:
        return slots_create(sample_ids=chunk, k=k)

    for sample_id in short.iterator(chunk_size=2000):
        chunk.append(sample_id)
        if len(chunk) >= 2000:
            created += flush()
            chunk = []
    if chunk:
        created += flush()
    return created


def claim_candidates(*, project: Project, user: Any, now: datetime, limit: int) -> list[Slot]:
    """Claimable slots for ``user``, in-progress samples first, at most one per sample.

    A sample is left out when the user holds or held one of its slots, has a formal vote on it
    (a reclaimed slot keeps its votes) or has an open problem report on it. One statement of
    two parts, both walking the (sample, index) index in order and stopping at the limit, so
    the cost does not grow with the project: in-progress samples (another slot taken), then
    any open sample.
    """
    k = project.annotators_per_sample
    slot_t, sample_t = Slot._meta.db_table, Sample._meta.db_table
    vote_t, report_t = Vote._meta.db_table, ProblemReport._meta.db_table
    base = (
        f"SELECT {{stage}} AS stage, o.id, o.sample_id, o.{qn('index')} AS idx"
        f" FROM {slot_t} o JOIN {sample_t} s ON s.id = o.sample_id"
        " WHERE s.project_id = %s AND s.is_seed = %s AND s.status = %s"
        " AND o.completed_at IS NULL AND (o.annotator_id IS NULL OR o.lease_expires_at < %s)"
        f" AND NOT EXISTS (SELECT 1 FROM {slot_t} y"
        "  WHERE y.sample_id = o.sample_id AND y.annotator_id = %s)"
        f" AND NOT EXISTS (SELECT 1 FROM {vote_t} v"
        "  WHERE v.sample_id = o.sample_id AND v.annotator_id = %s AND v.round = 0)"
        f" AND NOT EXISTS (SELECT 1 FROM {report_t} r"
        "  WHERE r.sample_id = o.sample_id AND r.reporter_id = %s AND r.resolved_at IS NULL)"
        "{extra} ORDER BY o.sample_id, o.{index} LIMIT %s"
    )
    taken = (
        f" AND EXISTS (SELECT 1 FROM {slot_t} t WHERE t.sample_id = o.sample_id"
        " AND t.annotator_id IS NOT NULL AND (t.completed_at IS NOT NULL"
        " OR t.lease_expires_at >= %s))"
    )
    index = qn("index")
    part_a = base.format(stage=0, extra=taken, index=index)
    part_b = base.format(stage=1, extra="", index=index)
    sql = f"SELECT * FROM ({part_a}) a UNION ALL SELECT * FROM ({part_b}) b"
    at = connection.ops.adapt_datetimefield_value(now)
    common = [project.pk, False, SampleStatus.ACTIVE.value, at, user.pk, user.pk, user.pk]
    params = [*common, at, limit * k, *common, limit * k]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = sorted(cursor.fetchall())
    picked: list[Slot] = []
    seen: set[int] = set()
    for _, slot_id, sample_id, idx in rows:
        if sample_id in seen:
            continue
        seen.add(sample_id)
        picked.append(Slot(pk=slot_id, sample_id=sample_id, index=idx))
        if len(picked) >= limit:
            break
    return picked


def _update_guarded(rows: QuerySet, fields: dict[str, Any]) -> int:
    """Run a conditional UPDATE so that a unique clash leaves any outer transaction usable.

    Outside a transaction one statement is atomic on its own (and needs no BEGIN/COMMIT round
    trips); inside one, a savepoint confines the failure.
    """
    if transaction.get_connection().in_atomic_block:
        with transaction.atomic():
            return rows.update(**fields)
    return rows.update(**fields)


def _claim_one(slot_id: int, fields: dict[str, Any], now: datetime) -> int:
    try:
        return _update_guarded(Slot.objects.filter(open_condition(now), pk=slot_id), fields)
    except IntegrityError:  # the user took a slot of this sample from another tab
        return 0


def _claim_ids(ids: list[int], fields: dict[str, Any], now: datetime) -> int:
    """Claim the slots ``ids`` in one conditional UPDATE, or one by one if that one fails."""
    ids = sorted(ids)  # one lock order for every claimer
    try:
        return _update_guarded(Slot.objects.filter(open_condition(now), pk__in=ids), fields)
    except (IntegrityError, DatabaseError):
        # A unique clash (same user, two tabs) or a deadlock abort: go row by row.
        return sum(_claim_one(slot_id, fields, now) for slot_id in ids)


def slots_claim(*, project: Project, user: Any, count: int | None = None) -> int:
    """Claim up to ``count`` (default ``project.batch_size``) samples for ``user``.

    Returns the number of slots won. Callers check that the user may do formal work.
    """
    want = count if count is not None else project.batch_size
    won = 0
    for _ in range(CLAIM_ATTEMPTS):
        if won >= want:
            break
        now = timezone.now()
        candidates = claim_candidates(project=project, user=user, now=now, limit=want - won)
        if not candidates:
            break
        ids = [slot.pk for slot in candidates]
        fields = {
            "annotator": user,
            "claimed_at": now,
            "lease_expires_at": lease_until(project, now),
            "completed_at": None,
            "swap_ab": _swap_choice(project, ids),
        }
        won += _claim_ids(ids, fields, now)
    return won


def _swap_choice(project: Project, ids: list[int]) -> Any:
    """The A/B display order of each slot being claimed, drawn now and stored with the claim."""
    if not project.shuffle_ab:
        return False
    rng = random.SystemRandom()
    swapped = [slot_id for slot_id in ids if rng.random() < 0.5]
    if not swapped:
        return False
    return Case(When(pk__in=swapped, then=Value(True)), default=Value(False))


def leases_renew(*, project: Project, user: Any, slots: list[Slot], now: datetime) -> None:
    """Extend the lease of the user's open slots when it has run down by RENEW_FRACTION."""
    if not slots:
        return
    until = lease_until(project, now)
    threshold = until - timedelta(minutes=project.lease_minutes * RENEW_FRACTION)
    if all(s.lease_expires_at and s.lease_expires_at >= threshold for s in slots):
        return
    Slot.objects.filter(
        pk__in=[s.pk for s in slots], annotator=user, completed_at__isnull=True
    ).update(lease_expires_at=until)
    for slot in slots:
        slot.lease_expires_at = until


RELEASED = {"annotator": None, "claimed_at": None, "lease_expires_at": None, "swap_ab": False}


def slots_reclaim_expired(*, now: datetime | None = None, project: Project | None = None) -> int:
    """Release every expired, uncompleted slot (idempotent); votes already cast are kept."""
    now = now or timezone.now()
    rows = Slot.objects.filter(
        annotator__isnull=False, completed_at__isnull=True, lease_expires_at__lt=now
    )
    if project is not None:
        rows = rows.filter(sample__project=project)
    return rows.update(**RELEASED)


def _member_of(project: Project, user: Any) -> ProjectMember | None:
    return ProjectMember.objects.filter(project=project, user=user, is_active=True).first()


@transaction.atomic
def slot_reassign(*, slot: Slot, to_annotator: Any | None, by: Any) -> Slot:
    """Give an unfinished slot to another calibrated annotator, or back to the open pool.

    Raises ValidationError when the slot is completed or the annotator cannot take it.
    """
    slot = Slot.objects.select_for_update().select_related("sample__project").get(pk=slot.pk)
    project = slot.sample.project
    if slot.completed_at is not None:
        raise ValidationError("This slot is completed; completed work is not reassigned.")
    if to_annotator is None:
        Slot.objects.filter(pk=slot.pk).update(**RELEASED)
    else:
        member = _member_of(project, to_annotator)
        if member is None:
            raise ValidationError(f"{to_annotator} is not an active annotator of this project.")
        if not member.is_calibrated:
            raise ValidationError(f"{to_annotator} is not calibrated yet.")
        if to_annotator.pk == slot.annotator_id:
            return slot
        already = (
            Vote.objects.filter(
                sample=slot.sample, annotator=to_annotator, round=Vote.FORMAL_ROUND
            ).exists()
            or Slot.objects.filter(sample=slot.sample, annotator=to_annotator).exists()
        )
        if already:
            raise ValidationError(f"{to_annotator} already labels or labeled this sample.")
        now = timezone.now()
        swap = bool(project.shuffle_ab and random.SystemRandom().random() < 0.5)
        try:
            with transaction.atomic():
                Slot.objects.filter(pk=slot.pk, completed_at__isnull=True).update(
                    annotator=to_annotator,
                    claimed_at=now,
                    lease_expires_at=lease_until(project, now),
                    swap_ab=swap,
                )
        except IntegrityError as exc:
            raise ValidationError(f"{to_annotator} already holds a slot of this sample.") from exc
    slot.refresh_from_db()
    return slot


@transaction.atomic
def member_remove(*, project: Project, member: ProjectMember, by: Any) -> int:
    """Deactivate an annotator and release their unfinished slots; returns slots released.

    Their votes stay: completed slots keep their annotator, and a released slot's partial
    votes remain in history.
    """
    ProjectMember.objects.filter(pk=member.pk, project=project).update(is_active=False)
    member.is_active = False
    return Slot.objects.filter(
        sample__project=project, annotator_id=member.user_id, completed_at__isnull=True
    ).update(**RELEASED)
