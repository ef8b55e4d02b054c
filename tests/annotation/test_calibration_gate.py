"""The calibration gate: seeds first, lead decides, rounds keep history, seeds never assigned."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from annotation.models import Criterion, ProjectMember, ReferenceLabel, Slot, Vote
from annotation.services import calibration as calibration_services
from annotation.services import voting, work, work_types
from annotation.services.projects import member_add
from tests.conftest import make_sample

from .work_data import GOOD, make_formal, vote_next

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(project, annotator):
    seeds = [make_sample(project, "seed-oe", is_seed=True)]
    seeds.append(make_sample(project, "seed-r", is_seed=True, split="reasoning"))
    make_formal(project, 5)
    member = member_add(project=project, user=annotator)
    return seeds, member


def seed_items(project) -> int:
    oe = Criterion.objects.filter(project=project, split="open_ended").count()
    rs = Criterion.objects.filter(project=project, split="reasoning").count()
    return oe + rs


def test_no_formal_work_before_calibration(project, annotator, setup, lead):
    seeds, member = setup
    total = seed_items(project)
    state = work.work_state(project=project, annotator=annotator)
    assert (state.mode, state.done, state.total, state.calibration_round) == (
        "calibration",
        0,
        total,
        1,
    )
    seen = set()
    for i in range(total):
        item, _ = vote_next(project, annotator, "tie")
        assert item.is_calibration and item.round == 1 and item.sample.is_seed
        assert item.done == i and item.total == total and item.ties_available is None
        seen.add((item.sample.pk, item.criterion.pk))
        assert item.criterion.split == item.sample.split
    assert len(seen) == total
    assert work.work_next(project=project, annotator=annotator) is None
    assert work.work_state(project=project, annotator=annotator).mode == "awaiting_review"
    assert not Slot.objects.filter(annotator=annotator).exists()
    # a formal sample cannot be voted yet
    formal = Slot.objects.first().sample
    with pytest.raises(work_types.VoteRejected) as rejected:
        voting.vote_submit(
            project=project,
            annotator=annotator,
            sample_id=formal.pk,
            criterion_id=Criterion.objects.filter(project=project, split="open_ended")[0].pk,
            shown_choice="A",
            rationale=GOOD,
            seconds=1,
        )
    assert rejected.value.field == "sample"
    assert "calibration" in rejected.value.message

    member = calibration_services.calibration_mark(project=project, member=member, by=lead)
    assert member.is_calibrated and member.calibrated_by == lead
    item = work.work_next(project=project, annotator=annotator)
    assert item.round == 0 and not item.sample.is_seed
    # seeds are not served or votable in the formal phase
    with pytest.raises(work_types.VoteRejected):
        voting.vote_submit(
            project=project,
            annotator=annotator,
            sample_id=seeds[0].pk,
            criterion_id=item.criterion.pk,
            shown_choice="A",
            rationale=GOOD,
            seconds=1,
        )
    with pytest.raises(PermissionDenied):
        work.work_item(
            project=project,
            annotator=annotator,
            sample_id=seeds[0].pk,
            criterion_id=item.criterion.pk,
        )
    assert not Slot.objects.filter(sample__is_seed=True).exists()


def test_new_round_keeps_old_votes_and_serves_seeds_again(project, annotator, setup, lead):
    _, member = setup
    total = seed_items(project)
    for _ in range(total):
        vote_next(project, annotator, "A")
    member = calibration_services.calibration_mark(project=project, member=member, by=lead)
    member = calibration_services.calibration_new_round(project=project, member=member, by=lead)
    assert member.calibration_round == 2 and not member.is_calibrated
    item = work.work_next(project=project, annotator=annotator)
    assert item.round == 2 and item.done == 0
    vote_next(project, annotator, "B")
    assert Vote.objects.filter(annotator=annotator, round=1).count() == total
    assert Vote.objects.filter(annotator=annotator, round=2).count() == 1
    # Back in round 2 sees only round 2 votes
    back = work.vote_previous(project=project, annotator=annotator, before=None)
    assert back.vote.round == 2


def test_revising_a_calibration_vote(project, annotator, setup):
    item, first = vote_next(project, annotator, "A")
    revised = voting.vote_submit(
        project=project,
        annotator=annotator,
        sample_id=item.sample.pk,
        criterion_id=item.criterion.pk,
        shown_choice="tie",
        rationale=GOOD + " revised",
        seconds=2,
    )
    assert revised.pk == first.pk and revised.choice == "tie" and revised.round == 1
    assert revised.revisions.count() == 1


def test_project_without_seeds_waits_for_the_lead(project, annotator, lead):
    make_formal(project, 2)
    member = member_add(project=project, user=annotator)
    assert work.work_state(project=project, annotator=annotator).mode == "awaiting_review"
    assert work.work_next(project=project, annotator=annotator) is None
    calibration_services.calibration_mark(project=project, member=member, by=lead)
    assert work.work_next(project=project, annotator=annotator) is not None


def test_non_member_gets_nothing(project, outsider, setup):
    assert work.work_state(project=project, annotator=outsider).mode == "not_member"
    assert work.work_next(project=project, annotator=outsider) is None
    with pytest.raises(work_types.VoteRejected):
        voting.vote_submit(
            project=project,
            annotator=outsider,
            sample_id=setup[0][0].pk,
            criterion_id=Criterion.objects.filter(project=project)[0].pk,
            shown_choice="A",
            rationale=GOOD,
            seconds=1,
        )


def test_reference_label_set_by_lead(project, setup, lead):
    seeds, _ = setup
    criterion = Criterion.objects.filter(project=project, split="open_ended").first()
    label = calibration_services.reference_label_set(
        sample=seeds[0], criterion=criterion, preference="B", by=lead
    )
    assert (label.preference, label.source, label.set_by) == ("B", "lead", lead)
    label = calibration_services.reference_label_set(
        sample=seeds[0], criterion=criterion, preference="A", by=lead
    )
    assert ReferenceLabel.objects.get(sample=seeds[0], criterion=criterion).preference == "A"
    wrong = Criterion.objects.filter(project=project, split="reasoning").first()
    with pytest.raises(ValueError):
        calibration_services.reference_label_set(
            sample=seeds[0], criterion=wrong, preference="A", by=lead
        )


def test_member_of_another_project_cannot_be_marked(project, setup, lead):
    from annotation.services.projects import project_create

    other = project_create(name="Other", slug="other")
    member = ProjectMember.objects.get(project=project)
    with pytest.raises(ValueError):
        calibration_services.calibration_mark(project=other, member=member, by=lead)
