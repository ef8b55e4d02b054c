"""Assignment: batches, balance, caps, leases, reclaim, work order, lead moves."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.utils import timezone

from annotation.models import (
    Criterion,
    ProblemReport,
    ProjectMember,
    Slot,
    Vote,
    WorkOrder,
)
from annotation.services import assignment, voting, work, work_types
from annotation.services.projects import member_add
from annotation.tasks import reclaim_expired_leases
from core.permissions import ANNOTATOR_GROUP
from tests.conftest import make_user

from .work_data import GOOD, calibrate, held, make_formal, vote_next

pytestmark = pytest.mark.django_db


@pytest.fixture
def crew(project, annotators, lead):
    for user in annotators:
        calibrate(project, user, lead)
    return annotators


def n_criteria(project, split="open_ended") -> int:
    return Criterion.objects.filter(project=project, split=split).count()


def test_slots_ensure_creates_k_per_formal_sample_only_once(project):
    make_formal(project, 4)
    from tests.conftest import make_sample

    make_sample(project, "seed", is_seed=True)
    assert Slot.objects.filter(sample__project=project).count() == 12
    assert assignment.slots_ensure(project=project) == 0
    Slot.objects.filter(sample__external_id="f-000000", index=2).delete()
    assert assignment.slots_ensure(project=project) == 1
    assert not Slot.objects.filter(sample__is_seed=True).exists()


def test_first_next_claims_one_batch(project, crew):
    project.batch_size = 4
    project.save()
    make_formal(project, 10)
    item = work.work_next(project=project, annotator=crew[0])
    assert item is not None and item.round == 0 and not item.is_calibration
    slots = held(crew[0])
    assert len(slots) == 4
    assert len({s.sample_id for s in slots}) == 4
    assert all(s.lease_expires_at > timezone.now() + timedelta(minutes=100) for s in slots)
    assert item.total == 4 * n_criteria(project)
    assert item.done == 0
    # a second next with open slots does not claim more
    work.work_next(project=project, annotator=crew[0])
    assert len(held(crew[0])) == 4


def test_in_progress_samples_finish_first(project, crew):
    project.batch_size = 2
    project.save()
    samples = make_formal(project, 6)
    work.work_next(project=project, annotator=crew[0])
    first = {s.sample_id for s in held(crew[0])}
    assert first == {samples[0].pk, samples[1].pk}
    # the next annotator joins the same (in-progress) samples rather than fresh ones
    work.work_next(project=project, annotator=crew[1])
    assert {s.sample_id for s in held(crew[1])} == first
    work.work_next(project=project, annotator=crew[2])
    assert {s.sample_id for s in held(crew[2])} == first
    # now full: the fourth annotator gets fresh samples
    work.work_next(project=project, annotator=crew[3])
    assert {s.sample_id for s in held(crew[3])} == {samples[2].pk, samples[3].pk}


def test_never_more_than_k_annotators_and_never_twice(project, crew):
    project.batch_size = 3
    project.save()
    samples = make_formal(project, 3)
    for user in crew:
        work.work_next(project=project, annotator=user)
    per_sample = dict(
        Slot.objects.filter(annotator__isnull=False)
        .values_list("sample_id")
        .annotate(n=Count("id"))
    )
    assert per_sample == {s.pk: 3 for s in samples}
    assert work.work_next(project=project, annotator=crew[5]) is None
    assert work.work_state(project=project, annotator=crew[5]).mode == "done"


def test_completing_all_criteria_completes_the_slot_and_next_batch_follows(project, crew):
    project.batch_size = 1
    project.save()
    make_formal(project, 2)
    user = crew[0]
    k = n_criteria(project)
    seen = []
    for _ in range(k):
        item, _ = vote_next(project, user)
        seen.append((item.sample.pk, item.criterion.pk))
    slot = held(user)[0]
    assert slot.completed_at is not None
    assert len(set(seen)) == k
    item = work.work_next(project=project, annotator=user)
    assert item.sample.pk != slot.sample_id
    assert item.done == k and item.total == 2 * k


def test_criterion_major_and_sample_major_orders(project, crew):
    project.batch_size = 3
    project.save()
    make_formal(project, 3)
    crits = list(Criterion.objects.filter(project=project, split="open_ended").order_by("order"))
    order = []
    for _ in range(6):
        item, _ = vote_next(project, crew[0])
        order.append((item.sample.pk, item.criterion.pk))
    ids = sorted({s for s, _ in order})
    assert order[:3] == [(s, crits[0].pk) for s in ids]
    assert order[3:6] == [(s, crits[1].pk) for s in ids]

    project.work_order = WorkOrder.SAMPLE_MAJOR
    project.save()
    make_formal(project, 3, prefix="g")
    order = []
    user = crew[1]
    for _ in range(len(crits) + 1):
        item, _ = vote_next(project, user)
        order.append((item.sample.pk, item.criterion.pk))
    first = order[0][0]
    assert order[: len(crits)] == [(first, c.pk) for c in crits]
    assert order[len(crits)][0] != first


def test_expired_lease_is_reclaimed_by_the_next_claimer(project, crew):
    project.batch_size = 1
    project.annotators_per_sample = 1
    project.save()
    sample = make_formal(project, 1)[0]
    item, _ = vote_next(project, crew[0])
    assert item.sample.pk == sample.pk
    assert work.work_next(project=project, annotator=crew[1]) is None
    Slot.objects.filter(annotator=crew[0]).update(
        lease_expires_at=timezone.now() - timedelta(minutes=1)
    )
    item = work.work_next(project=project, annotator=crew[1])
    assert item is not None and item.sample.pk == sample.pk
    slot = Slot.objects.get(sample=sample)
    assert slot.annotator == crew[1]
    # the first annotator's vote stays; their stale page cannot vote any more
    assert Vote.objects.filter(annotator=crew[0], sample=sample).count() == 1
    with pytest.raises(work_types.VoteRejected) as rejected:
        voting.vote_submit(
            project=project,
            annotator=crew[0],
            sample_id=sample.pk,
            criterion_id=item.criterion.pk,
            shown_choice="B",
            rationale=GOOD,
            seconds=1,
        )
    assert rejected.value.field == "sample"
    # and they never get this sample again
    Slot.objects.filter(sample=sample).update(annotator=None, lease_expires_at=None)
    assert work.work_next(project=project, annotator=crew[0]) is None


def test_periodic_reclaim_is_idempotent_and_spares_completed_and_live(project, crew):
    project.batch_size = 3
    project.save()
    make_formal(project, 3)
    work.work_next(project=project, annotator=crew[0])
    slots = held(crew[0])
    past = timezone.now() - timedelta(minutes=5)
    Slot.objects.filter(pk=slots[0].pk).update(lease_expires_at=past)
    Slot.objects.filter(pk=slots[1].pk).update(lease_expires_at=past, completed_at=past)
    assert reclaim_expired_leases.delay().get() == 1
    assert reclaim_expired_leases.delay().get() == 0
    after = {s.pk: s for s in Slot.objects.filter(pk__in=[s.pk for s in slots])}
    assert after[slots[0].pk].annotator_id is None
    assert after[slots[1].pk].annotator_id == crew[0].pk
    assert after[slots[2].pk].annotator_id == crew[0].pk


def test_activity_renews_the_lease(project, crew):
    make_formal(project, 2)
    work.work_next(project=project, annotator=crew[0])
    soon = timezone.now() + timedelta(minutes=3)
    Slot.objects.filter(annotator=crew[0]).update(lease_expires_at=soon)
    work.work_next(project=project, annotator=crew[0])
    assert all(s.lease_expires_at > soon + timedelta(minutes=100) for s in held(crew[0]))


def test_problem_report_takes_the_sample_out_of_the_queue(project, crew):
    project.batch_size = 1
    project.save()
    samples = make_formal(project, 2)
    item = work.work_next(project=project, annotator=crew[0])
    report = work.problem_report(
        project=project,
        annotator=crew[0],
        sample_id=item.sample.pk,
        kind=ProblemReport.Kind.BROKEN_IMAGE,
        note="blank",
    )
    assert report.reporter == crew[0] and report.sample == item.sample
    assert not Slot.objects.filter(sample=item.sample, annotator=crew[0]).exists()
    nxt = work.work_next(project=project, annotator=crew[0])
    assert nxt.sample.pk != item.sample.pk
    assert {nxt.sample.pk, item.sample.pk} == {s.pk for s in samples}
    # reporting twice keeps one open report
    again = work.problem_report(
        project=project, annotator=crew[0], sample_id=item.sample.pk, kind="other", note=""
    )
    assert again.pk == report.pk


def test_slot_reassign_to_another_annotator_or_back_to_open(project, crew, lead):
    project.batch_size = 1
    project.annotators_per_sample = 2
    project.save()
    sample = make_formal(project, 1)[0]
    vote_next(project, crew[0])
    slot = held(crew[0])[0]
    moved = assignment.slot_reassign(slot=slot, to_annotator=crew[1], by=lead)
    assert moved.annotator == crew[1] and moved.lease_expires_at > timezone.now()
    assert Vote.objects.filter(annotator=crew[0], sample=sample).count() == 1
    # crew[0] voted on it: they cannot get it back, nor a second slot of it
    with pytest.raises(ValidationError):
        assignment.slot_reassign(slot=moved, to_annotator=crew[0], by=lead)
    other = Slot.objects.get(sample=sample, annotator__isnull=True)
    assignment.slot_reassign(slot=other, to_annotator=crew[2], by=lead)
    with pytest.raises(ValidationError):
        assignment.slot_reassign(slot=other, to_annotator=crew[1], by=lead)
    opened = assignment.slot_reassign(slot=moved, to_annotator=None, by=lead)
    assert opened.annotator is None and opened.lease_expires_at is None
    uncalibrated = make_user("fresh", ANNOTATOR_GROUP)
    member_add(project=project, user=uncalibrated)
    with pytest.raises(ValidationError):
        assignment.slot_reassign(slot=opened, to_annotator=uncalibrated, by=lead)


def test_completed_slot_is_not_reassigned(project, crew, lead):
    project.batch_size = 1
    project.save()
    make_formal(project, 1)
    for _ in range(n_criteria(project)):
        vote_next(project, crew[0])
    slot = held(crew[0])[0]
    with pytest.raises(ValidationError):
        assignment.slot_reassign(slot=slot, to_annotator=None, by=lead)


def test_member_remove_releases_open_slots_and_keeps_votes(project, crew, lead):
    project.batch_size = 2
    project.save()
    make_formal(project, 4)
    for _ in range(n_criteria(project) * 2 - 1):
        vote_next(project, crew[0])
    votes_before = Vote.objects.filter(annotator=crew[0]).count()
    member = ProjectMember.objects.get(project=project, user=crew[0])
    released = assignment.member_remove(project=project, member=member, by=lead)
    assert released == 1
    assert Vote.objects.filter(annotator=crew[0]).count() == votes_before
    assert Slot.objects.filter(annotator=crew[0], completed_at__isnull=False).count() == 1
    assert not Slot.objects.filter(annotator=crew[0], completed_at__isnull=True).exists()
    assert work.work_next(project=project, annotator=crew[0]) is None
    assert work.work_state(project=project, annotator=crew[0]).mode == "not_member"


def test_shuffle_ab_stores_the_order_per_slot_and_maps_back(project, crew):
    project.shuffle_ab = True
    project.batch_size = 40
    project.save()
    make_formal(project, 40)
    item = work.work_next(project=project, annotator=crew[0])
    flags = [s.swap_ab for s in held(crew[0])]
    assert any(flags) and not all(flags)
    swapped_slot = next(s for s in held(crew[0]) if s.swap_ab)
    crit = item.criterion
    vote = voting.vote_submit(
        project=project,
        annotator=crew[0],
        sample_id=swapped_slot.sample_id,
        criterion_id=crit.pk,
        shown_choice="A",
        rationale=GOOD,
        seconds=2,
    )
    assert vote.choice == "B" and vote.shown_swapped is True


def test_slots_create_adds_only_the_missing_indices(project):
    """The one slot-creating service tops a sample up to indices 1..k and never doubles one."""
    from annotation.services.assignment import slots_create

    first, second = make_formal(project, 2, prefix="sc")
    Slot.objects.filter(sample=first, index=2).delete()
    Slot.objects.filter(sample=second).delete()
    k = project.annotators_per_sample
    assert slots_create(sample_ids=[first.pk, second.pk], k=k) == 1 + k
    assert slots_create(sample_ids=[first.pk, second.pk], k=k) == 0
    indices = Slot.objects.filter(sample__in=[first, second]).values_list("sample", "index")
    assert sorted(indices) == sorted((s.pk, i) for s in (first, second) for i in range(1, k + 1))
