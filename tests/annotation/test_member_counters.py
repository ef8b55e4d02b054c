"""The member counters (votes, ties, completed slots) equal a recount after any mix of work."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation.models import ProjectMember, Slot, Vote
from annotation.selectors.work import member_progress
from annotation.services import assignment, voting, work, work_types
from annotation.services.projects import member_add
from tests.annotation.race import counters_drift
from tests.annotation.work_data import calibrate, make_formal
from tests.conftest import make_sample, make_user

pytestmark = pytest.mark.django_db

GOOD = "A rationale that is long enough."


def progress_by_counting(project, user) -> dict[str, int]:
    """What member_progress reports, counted from the rows (the definition it must match)."""
    votes = Vote.objects.filter(annotator=user, round=0, sample__project=project)
    slots = Slot.objects.filter(annotator=user, sample__project=project)
    held = Slot.objects.filter(sample_id=OuterRef("sample_id"), annotator_id=user.pk)
    return {
        "f_votes": votes.count(),
        "f_ties": votes.filter(choice="tie").count(),
        "f_done": votes.filter(Exists(held)).count(),
        "n_open": slots.filter(completed_at__isnull=True).count(),
        "slots_open_ended": slots.filter(sample__split="open_ended").count(),
        "slots_reasoning": slots.filter(sample__split="reasoning").count(),
    }


def reported(project, user) -> dict[str, int]:
    member = member_progress(project, user)
    return {name: getattr(member, name) for name in progress_by_counting(project, user)}


def test_counters_equal_a_recount_after_a_random_mix(project, lead):
    """Votes, ties (some refused), revisions, skips, calibration votes, expired leases, reports."""
    rng = random.Random(17)
    project.batch_size = 3
    project.save()
    make_formal(project, 12, prefix="o", split="open_ended")
    make_formal(project, 12, prefix="r", split="reasoning")
    seed = make_sample(project, "seed-1", is_seed=True)
    users = [make_user(f"mix{i}") for i in range(3)]
    for user in users:
        member_add(project=project, user=user)
    # Calibration votes never count: the first annotator labels a seed item before calibration.
    item = work.work_next(project=project, annotator=users[0])
    assert item.sample.pk == seed.pk
    voting.vote_submit(
        project=project,
        annotator=users[0],
        sample_id=seed.pk,
        criterion_id=item.criterion.pk,
        shown_choice="tie",
        rationale=GOOD,
        seconds=1,
    )
    for user in users:
        calibrate(project, user, lead)
    actions = {"vote": 0, "tie": 0, "refused": 0, "revise": 0, "skip": 0, "expire": 0, "report": 0}
    for _ in range(260):
        user = rng.choice(users)
        roll = rng.random()
        if roll < 0.08:
            mine = list(Vote.objects.filter(annotator=user, round=0))
            if mine:
                vote = rng.choice(mine)
                try:
                    voting.vote_submit(
                        project=project,
                        annotator=user,
                        sample_id=vote.sample_id,
                        criterion_id=vote.criterion_id,
                        shown_choice=rng.choice(["A", "B", "tie"]),
                        rationale=GOOD + " revised",
                        seconds=1,
                    )
                    actions["revise"] += 1
                except work_types.VoteRejected:
                    actions["refused"] += 1
            continue
        if roll < 0.11:
            # Leases run out: the open slots (with their votes) go back to the pool.
            Slot.objects.filter(annotator=user, completed_at__isnull=True).update(
                lease_expires_at=timezone.now() - timedelta(minutes=1)
            )
            assignment.slots_reclaim_expired(project=project)
            actions["expire"] += 1
            continue
        item = work.work_next(project=project, annotator=user)
        if item is None:
            continue
        if roll < 0.14:
            work.problem_report(
                project=project,
                annotator=user,
                sample_id=item.sample.pk,
                kind="other",
                note="unreadable",
            )
            actions["report"] += 1
            continue
        if roll < 0.2:
            work.item_skip(
                project=project,
                annotator=user,
                sample_id=item.sample.pk,
                criterion_id=item.criterion.pk,
                reason="later",
            )
            actions["skip"] += 1
            continue
        choice = "tie" if roll > 0.85 else rng.choice(["A", "B"])
        try:
            voting.vote_submit(
                project=project,
                annotator=user,
                sample_id=item.sample.pk,
                criterion_id=item.criterion.pk,
                shown_choice=choice,
                rationale=GOOD,
                seconds=1,
            )
            actions["tie" if choice == "tie" else "vote"] += 1
        except work_types.VoteRejected:
            actions["refused"] += 1
    print(actions)
    assert all(actions.values()), actions  # every kind of step happened
    assert Slot.objects.filter(completed_at__isnull=False).exists()
    for user in users:
        assert reported(project, user) == progress_by_counting(project, user), user
    assert counters_drift(project) == {}
    member = ProjectMember.objects.get(project=project, user=users[0])
    assert member.formal_votes == Vote.objects.filter(annotator=users[0], round=0).count()


def test_migration_fill_equals_the_counters_kept(project, lead):
    """Counters zeroed (as before the migration) are filled back by the recount."""
    make_formal(project, 4, prefix="o")
    user = make_user("filler")
    member_add(project=project, user=user)
    calibrate(project, user, lead)
    while (item := work.work_next(project=project, annotator=user)) is not None:
        voting.vote_submit(
            project=project,
            annotator=user,
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            shown_choice="A",
            rationale=GOOD,
            seconds=1,
        )
    kept = ProjectMember.objects.filter(user=user).values().get()
    n = Vote.objects.filter(annotator=user).count()
    assert kept["formal_votes"] == kept["done_votes"] == n > 0 and kept["done_open_ended"] == 4
    ProjectMember.objects.filter(user=user).update(
        formal_votes=0, formal_ties=0, done_votes=0, done_open_ended=0
    )
    assert counters_drift(project)  # the recount puts them back
    assert ProjectMember.objects.filter(user=user).values().get() == kept


def test_member_progress_is_one_query_of_constant_plan(project, lead):
    """member_progress reads the counters: one query, no count over the vote history."""
    from django.test.utils import CaptureQueriesContext

    make_formal(project, 2, prefix="o")
    user = make_user("reader")
    member_add(project=project, user=user)
    calibrate(project, user, lead)
    with CaptureQueriesContext(connection) as captured:
        member = member_progress(project, user)
    assert len(captured) == 1
    assert (member.f_votes, member.f_done, member.n_open) == (0, 0, 0)


def test_slots_closed_after_a_criterion_is_removed_are_counted(project, lead):
    """A batch whose last criterion is removed is closed by the next request: counted too."""
    from annotation.models import Criterion
    from annotation.services.criteria import criterion_remove

    project.batch_size = 2
    project.save()
    make_formal(project, 2, prefix="o")
    user = make_user("closer")
    member_add(project=project, user=user)
    calibrate(project, user, lead)
    criteria = list(Criterion.objects.filter(project=project, split="open_ended"))
    last = criteria[-1]
    for _ in range(2 * (len(criteria) - 1)):  # every criterion but the last, on both samples
        item = work.work_next(project=project, annotator=user)
        assert item.criterion != last
        voting.vote_submit(
            project=project,
            annotator=user,
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            shown_choice="B",
            rationale=GOOD,
            seconds=1,
        )
    criterion_remove(criterion=last, by=lead)
    fresh = type(project).objects.get(pk=project.pk)
    assert work.work_next(project=fresh, annotator=user) is None  # closed, nothing left
    member = ProjectMember.objects.get(project=project, user=user)
    assert (member.done_open_ended, member.done_votes) == (2, 2 * (len(criteria) - 1))
    assert counters_drift(project) == {}
