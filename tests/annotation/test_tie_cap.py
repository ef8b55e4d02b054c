"""Tie cap boundaries: ties stay strictly below the cap of formal votes, counting this one."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation import tiecap
from annotation.models import Choice, Vote
from annotation.services import voting, work, work_types
from tests.conftest import make_sample

from .work_data import GOOD, calibrate, make_formal, vote_next


@pytest.fixture
def formal(project, annotator, lead):
    from annotation.services.projects import member_add

    project.batch_size = 50
    project.save()
    make_formal(project, 30)
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    return annotator


def cast(project, user, n: int, choice: str = "A") -> None:
    for _ in range(n):
        _, vote = vote_next(project, user, choice)
        assert vote is not None


def try_tie(project, user):
    return vote_next(project, user, "tie")


@pytest.mark.django_db
def test_tenth_vote_tie_refused_eleventh_allowed(project, formal):
    cast(project, formal, 9)
    assert voting.tie_allowance(project=project, annotator=formal) == 0
    with pytest.raises(work_types.VoteRejected) as rejected:
        try_tie(project, formal)
    assert rejected.value.field == "choice"
    assert "10%" in rejected.value.message
    assert "1 tie in 10 votes would not" in rejected.value.message
    assert "skip this item for now: it comes back after your other items" in rejected.value.message
    assert Vote.objects.filter(annotator=formal).count() == 9
    cast(project, formal, 1)  # the 10th vote is A
    assert voting.tie_allowance(project=project, annotator=formal) == 1
    item = work.work_next(project=project, annotator=formal)
    assert item.ties_available == 1
    _, vote = try_tie(project, formal)  # 11th: 1 < 1.1
    assert vote.choice == Choice.TIE
    assert voting.tie_allowance(project=project, annotator=formal) == 0


@pytest.mark.django_db
def test_second_tie_at_twenty_first_not_twentieth_and_third_at_thirty_first(project, formal):
    cast(project, formal, 10)
    try_tie(project, formal)  # 11th vote, 1 tie
    cast(project, formal, 8)  # 19 votes
    with pytest.raises(work_types.VoteRejected):
        try_tie(project, formal)  # 20th: 2 < 2.0 is false
    cast(project, formal, 1)  # 20 votes
    _, vote = try_tie(project, formal)  # 21st: 2 < 2.1
    assert vote.choice == Choice.TIE
    with pytest.raises(work_types.VoteRejected):
        try_tie(project, formal)  # 22nd: 3 < 2.2 is false
    cast(project, formal, 1)  # 22 votes, 2 ties
    assert voting.tie_allowance(project=project, annotator=formal) == 0
    ties = Vote.objects.filter(annotator=formal, choice=Choice.TIE).count()
    assert ties == 2 and Vote.objects.filter(annotator=formal).count() == 22


@pytest.mark.django_db
def test_revising_to_tie_obeys_the_same_rule(project, formal):
    cast(project, formal, 10)
    first = Vote.objects.filter(annotator=formal).order_by("pk").first()

    def revise(vote, choice):
        return voting.vote_submit(
            project=project,
            annotator=formal,
            sample_id=vote.sample_id,
            criterion_id=vote.criterion_id,
            shown_choice=choice,
            rationale=GOOD + " revised",
            seconds=1,
        )

    with pytest.raises(work_types.VoteRejected):
        revise(first, "tie")  # 1 tie in 10 votes is not below 10%
    first.refresh_from_db()
    assert first.choice == Choice.A and first.revisions.count() == 0
    cast(project, formal, 1)  # 11 votes
    revised = revise(first, "tie")
    assert revised.choice == Choice.TIE and revised.revisions.count() == 1
    assert Vote.objects.filter(annotator=formal).count() == 11
    second = Vote.objects.filter(annotator=formal, choice=Choice.A).order_by("pk").first()
    with pytest.raises(work_types.VoteRejected):
        revise(second, "tie")
    # a tie revised again (rationale only) stays a tie; back to A frees the tie
    assert revise(revised, "tie").choice == Choice.TIE
    assert revise(revised, "A").choice == Choice.A
    assert voting.tie_allowance(project=project, annotator=formal) == 1


@pytest.mark.django_db
def test_calibration_votes_do_not_count(project, annotator, lead):
    from annotation.services.projects import member_add

    project.batch_size = 50
    project.save()
    for i in range(4):
        make_sample(project, f"seed-{i}", is_seed=True)
    make_formal(project, 10)
    member_add(project=project, user=annotator)
    # calibration: ties are free (every seed item a tie)
    while True:
        item, vote = vote_next(project, annotator, "tie")
        if item is None:
            break
        assert item.is_calibration and item.ties_available is None
        assert vote.round == 1
    assert Vote.objects.filter(annotator=annotator, round=1, choice=Choice.TIE).count() > 10
    calibrate(project, annotator, lead)
    assert voting.tie_allowance(project=project, annotator=annotator) == 0
    with pytest.raises(work_types.VoteRejected):
        try_tie(project, annotator)  # first formal vote
    cast(project, annotator, 10)
    _, vote = try_tie(project, annotator)
    assert vote.choice == Choice.TIE and vote.round == 0


@pytest.mark.django_db
def test_other_cap_values_on_the_server(project, formal):
    project.tie_cap = Decimal("0.25")
    project.save()
    cast(project, formal, 3)
    with pytest.raises(work_types.VoteRejected):
        try_tie(project, formal)  # 1 < 0.25 * 4 = 1 is false
    cast(project, formal, 1)
    _, vote = try_tie(project, formal)  # 1 < 1.25
    assert vote.choice == Choice.TIE
    project.tie_cap = Decimal("0")
    project.save()
    cast(project, formal, 5)
    with pytest.raises(work_types.VoteRejected) as rejected:
        try_tie(project, formal)
    assert "0%" in rejected.value.message


@pytest.mark.parametrize(
    ("cap", "votes", "ties", "new_ok", "revise_ok", "allowance"),
    [
        ("0.1", 9, 0, False, False, 0),
        ("0.1", 10, 0, True, False, 1),
        ("0.1", 11, 0, True, True, 1),
        ("0.1", 19, 1, False, False, 0),
        ("0.1", 20, 1, True, False, 1),
        ("0.1", 21, 2, False, False, 0),
        ("0.1", 100, 0, True, True, 11),  # 11 < 11.1, 12 < 11.2 fails
        ("0.05", 20, 0, True, False, 1),  # 1 < 1.05
        ("0.05", 19, 0, False, False, 0),  # 1 < 1.0 fails
        ("0.2", 4, 0, False, False, 0),  # the 5th vote: 1 < 1.0 fails
        ("0.2", 5, 0, True, False, 1),  # the 6th: 1 < 1.2
        ("0.333", 2, 0, False, False, 0),  # 1 < 0.999 fails
        ("0.333", 3, 0, True, False, 1),  # 1 < 1.332
        ("0", 1000, 0, False, False, 0),
        ("1", 3, 2, True, False, tiecap.UNLIMITED),  # revising: 3 ties of 3 votes
        ("1", 3, 3, False, False, 0),
        ("0.5", 10, 4, True, False, 1),  # 5 < 5.5, then 6 < 6.0 fails
    ],
)
def test_formula_boundaries(cap, votes, ties, new_ok, revise_ok, allowance):
    assert tiecap.new_tie_allowed(ties=ties, votes=votes, cap=cap) is new_ok
    assert tiecap.revise_to_tie_allowed(ties=ties, votes=votes, cap=cap) is revise_ok
    assert tiecap.allowance(ties=ties, votes=votes, cap=cap) == allowance
    # allowance m is the largest run of new ties each accepted in turn
    if allowance != tiecap.UNLIMITED:
        t, n = ties, votes
        for _ in range(allowance):
            assert tiecap.new_tie_allowed(ties=t, votes=n, cap=cap)
            t, n = t + 1, n + 1
        assert not tiecap.new_tie_allowed(ties=t, votes=n, cap=cap)


def test_no_float_edge_errors():
    # 0.1 * 30 == 3.0000000000000004 in floats; exact arithmetic says 3 ties of 30 are not below
    assert not tiecap.within_cap(ties=3, votes=30, cap=Decimal("0.100"))
    assert tiecap.within_cap(ties=3, votes=31, cap=Decimal("0.100"))
    assert not tiecap.within_cap(ties=7, votes=70, cap="0.1")
    with pytest.raises(ValueError):
        tiecap.cap_fraction("1.5")


def test_share_of_cap_and_at_cap_are_exact_where_floats_are_not():
    """0.3 * 10 is 3.0000000000000004 in floats: 3 ties of 10 votes are at a 30% cap, exactly."""
    assert tiecap.at_cap(ties=3, votes=10, cap=Decimal("0.3"))
    assert tiecap.share_of_cap(ties=3, votes=10, cap=Decimal("0.3")) == 1.0
    assert not tiecap.at_cap(ties=2, votes=10, cap=Decimal("0.3"))
    assert not tiecap.at_cap(ties=0, votes=0, cap=Decimal("0.1"))
    assert tiecap.share_of_cap(ties=0, votes=0, cap=Decimal("0.1")) is None
    assert tiecap.share_of_cap(ties=0, votes=5, cap=Decimal("0")) is None


@pytest.mark.parametrize("cap", ["0.1", "0.05", "0.25", "1", "0"])
def test_the_sql_condition_is_the_same_rule(cap):
    # The one-statement vote checks the cap in SQL; the condition is plain arithmetic.
    condition = tiecap.new_tie_allowed_sql(ties="t", votes="n", cap=cap)
    for n in range(0, 60):
        for t in range(0, n + 1):
            expected = tiecap.new_tie_allowed(ties=t, votes=n, cap=cap)
            assert eval(condition, {}, {"t": t, "n": n}) is expected, (cap, t, n)
