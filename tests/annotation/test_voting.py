"""Votes: canonical mapping, revisions, rationale rule, ownership, Back, completion."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from annotation.models import Choice, Criterion, Slot, Vote, VoteRevision
from annotation.services import voting, work, work_types
from annotation.services.projects import member_add
from core.permissions import ANNOTATOR_GROUP
from tests.conftest import make_user

from .work_data import GOOD, calibrate, make_formal, vote_next

pytestmark = pytest.mark.django_db


@pytest.fixture
def user(project, annotator, lead):
    project.batch_size = 2
    project.save()
    make_formal(project, 4)
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    return annotator


def submit(project, user, item, choice="A", rationale=GOOD, seconds=4.5):
    return voting.vote_submit(
        project=project,
        annotator=user,
        sample_id=item.sample.pk,
        criterion_id=item.criterion.pk,
        shown_choice=choice,
        rationale=rationale,
        seconds=seconds,
    )


def test_vote_is_stored_with_time_and_canonical_choice(project, user):
    item = work.work_next(project=project, annotator=user)
    vote = submit(project, user, item, "B")
    stored = Vote.objects.get(pk=vote.pk)
    assert (stored.choice, stored.round, stored.seconds) == (Choice.B, 0, 4.5)
    assert stored.rationale == GOOD and stored.shown_swapped is False


def test_swapped_slot_maps_left_right_back_to_canonical(project, user):
    item = work.work_next(project=project, annotator=user)
    Slot.objects.filter(sample=item.sample, annotator=user).update(swap_ab=True)
    again = work.work_item(
        project=project, annotator=user, sample_id=item.sample.pk, criterion_id=item.criterion.pk
    )
    assert again.swapped is True
    assert submit(project, user, item, "A").choice == Choice.B
    assert submit(project, user, item, "B").choice == Choice.A


def test_revision_keeps_history_and_latest_counts(project, user):
    item = work.work_next(project=project, annotator=user)
    first = submit(project, user, item, "A", rationale=GOOD)
    second = submit(project, user, item, "B", rationale="Changed my mind after a look.")
    assert second.pk == first.pk
    assert Vote.objects.filter(annotator=user).count() == 1
    history = list(VoteRevision.objects.filter(vote=first))
    assert [(h.choice, h.rationale) for h in history] == [(Choice.A, GOOD)]
    assert Vote.objects.get(pk=first.pk).choice == Choice.B
    # an identical resubmission records no revision
    submit(project, user, item, "B", rationale="Changed my mind after a look.")
    assert VoteRevision.objects.filter(vote=first).count() == 1


@pytest.mark.parametrize("rationale", ["", "   too short    ", "x" * 14])
def test_rationale_minimum(project, user, rationale):
    item = work.work_next(project=project, annotator=user)
    with pytest.raises(work_types.VoteRejected) as rejected:
        submit(project, user, item, rationale=rationale)
    assert rejected.value.field == "rationale"
    assert "15 characters" in rejected.value.message
    assert not Vote.objects.exists()
    project.rationale_min_chars = 3
    project.save()
    assert submit(project, user, item, rationale="ok!").rationale == "ok!"


def test_bad_choice_and_foreign_criterion_refused(project, user):
    item = work.work_next(project=project, annotator=user)
    with pytest.raises(work_types.VoteRejected) as rejected:
        submit(project, user, item, "C")
    assert rejected.value.field == "choice"
    reasoning = Criterion.objects.filter(project=project, split="reasoning").first()
    with pytest.raises(work_types.VoteRejected) as rejected:
        voting.vote_submit(
            project=project,
            annotator=user,
            sample_id=item.sample.pk,
            criterion_id=reasoning.pk,
            shown_choice="A",
            rationale=GOOD,
            seconds=1,
        )
    assert rejected.value.field == "criterion"


def test_only_own_slots_can_be_voted_or_seen(project, user):
    other = make_user("other", ANNOTATOR_GROUP)
    member_add(project=project, user=other)
    calibrate(project, other)
    theirs = work.work_next(project=project, annotator=other)
    busy = set(Slot.objects.filter(annotator__in=[user, other]).values_list("sample_id", flat=True))
    # give the other annotator a sample the user does not hold
    free = Slot.objects.filter(annotator__isnull=True).exclude(sample_id__in=busy).first()
    Slot.objects.filter(pk=free.pk).update(annotator=other)
    with pytest.raises(work_types.VoteRejected) as rejected:
        voting.vote_submit(
            project=project,
            annotator=user,
            sample_id=free.sample_id,
            criterion_id=theirs.criterion.pk,
            shown_choice="A",
            rationale=GOOD,
            seconds=1,
        )
    assert rejected.value.field == "sample"
    with pytest.raises(PermissionDenied):
        work.work_item(
            project=project,
            annotator=user,
            sample_id=free.sample_id,
            criterion_id=theirs.criterion.pk,
        )


def test_back_walks_through_earlier_votes(project, user):
    cast = [vote_next(project, user)[1] for _ in range(3)]
    latest = work.vote_previous(project=project, annotator=user, before=None)
    assert (latest.sample.pk, latest.criterion.pk) == (cast[2].sample_id, cast[2].criterion_id)
    assert latest.vote.pk == cast[2].pk
    before = work.vote_previous(
        project=project, annotator=user, before=(cast[2].sample_id, cast[2].criterion_id)
    )
    assert before.vote.pk == cast[1].pk
    first = work.vote_previous(
        project=project, annotator=user, before=(cast[0].sample_id, cast[0].criterion_id)
    )
    assert first is None
    # from the current (unvoted) item, Back goes to the latest vote
    current = work.work_next(project=project, annotator=user)
    back = work.vote_previous(
        project=project, annotator=user, before=(current.sample.pk, current.criterion.pk)
    )
    assert back.vote.pk == cast[2].pk


def test_slot_completes_when_every_criterion_is_voted(project, user):
    n = Criterion.objects.filter(project=project, split="open_ended").count()
    item = work.work_next(project=project, annotator=user)
    sample = item.sample
    crits = Criterion.objects.filter(project=project, split="open_ended")
    for criterion in crits:
        slot = Slot.objects.get(sample=sample, annotator=user)
        assert slot.completed_at is None
        voting.vote_submit(
            project=project,
            annotator=user,
            sample_id=sample.pk,
            criterion_id=criterion.pk,
            shown_choice="A",
            rationale=GOOD,
            seconds=1,
        )
    assert len(crits) == n
    slot = Slot.objects.get(sample=sample, annotator=user)
    assert slot.completed_at is not None
    # revising after completion is allowed and keeps it completed
    again = voting.vote_submit(
        project=project,
        annotator=user,
        sample_id=sample.pk,
        criterion_id=crits[0].pk,
        shown_choice="B",
        rationale=GOOD,
        seconds=1,
    )
    assert again.choice == Choice.B
    assert Slot.objects.get(pk=slot.pk).completed_at == slot.completed_at


def test_progress_counts(project, user):
    n = Criterion.objects.filter(project=project, split="open_ended").count()
    # The whole assignment, not the batch of 2: the only calibrated annotator's share is all
    # 4 samples (each needs 3 annotators, and there is 1).
    item = work.work_next(project=project, annotator=user)
    assert (item.done, item.total) == (0, 4 * n)
    for _ in range(3):
        vote_next(project, user)
    state = work.work_state(project=project, annotator=user)
    assert (state.mode, state.done, state.total) == ("formal", 3, 4 * n)
    assert state.ties_available == 0
