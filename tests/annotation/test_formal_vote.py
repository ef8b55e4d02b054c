"""The one-statement vote (PostgreSQL) stores what the general path stores, refuses what it refuses.

Two identical projects take the same script of answers: one through ``vote_submit`` (the
statement, falling back to the general path), the other through the general path alone. The
votes, slots and counters must come out the same, on pairwise, graded and pointwise scales,
with swapped screens, ties allowed and refused, completed slots, revisions and refusals.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import Criterion, Project, ProjectMember, Slot, Vote
from annotation.services import formal_vote, voting, work, work_types
from annotation.services.counters import counters_recount
from annotation.services.projects import member_add, project_create
from tests.annotation.race import counters_drift
from tests.annotation.work_data import calibrate, make_formal
from tests.conftest import make_user

needs_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the one-statement vote is PostgreSQL's"
)

GOOD = "A rationale that is long enough."
COUNTERS = ("formal_votes", "formal_ties", "done_votes", "done_open_ended", "done_reasoning")


def _world(tag: str, scale: str, lead) -> tuple[Project, Any, list[Slot]]:
    """A project of 6 formal samples (4 open-ended, 2 reasoning), one annotator holding them."""
    project = project_create(
        name=tag, slug=tag, label_scale=scale, batch_size=6, annotators_per_sample=1
    )
    make_formal(project, 4, prefix=f"{tag}-o", split="open_ended")
    make_formal(project, 2, prefix=f"{tag}-r", split="reasoning")
    user = make_user(f"{tag}-user")
    member_add(project=project, user=user)
    calibrate(project, user, lead)
    assert work.work_next(project=project, annotator=user) is not None  # claims all six
    slots = list(Slot.objects.filter(annotator=user).order_by("sample_id"))
    for i, slot in enumerate(slots):  # the same screens in both worlds: every other one swapped
        Slot.objects.filter(pk=slot.pk).update(swap_ab=bool(i % 2))
    return project, user, slots


def _answer(scale: str, choice: str) -> dict[str, Any]:
    if scale == "graded":
        return {"shown_grade": {"A": 2, "B": -1, "tie": 0}[choice]}
    if scale == "pointwise":
        return {"shown_scores": {"A": (5, 2), "B": (1, 4), "tie": (3, 3)}[choice]}
    return {"shown_choice": choice}


def _script(slots: list[Slot], project: Project) -> list[tuple[int, Criterion, str, str]]:
    """(sample id, criterion, choice, rationale) steps covering the edge cases."""
    criteria = {
        split: list(Criterion.objects.filter(project=project, split=split).order_by("order"))
        for split in ("open_ended", "reasoning")
    }
    steps = []
    for i, slot in enumerate(slots):
        split = "open_ended" if i < 4 else "reasoning"
        for j, criterion in enumerate(criteria[split]):
            # A tie early (refused: under the cap), ties later (some allowed), the rest A / B.
            choice = "tie" if (i * 7 + j) % 5 == 0 else "AB"[(i + j) % 2]
            steps.append((slot.sample_id, criterion, choice, GOOD))
            if j == 1:  # revise the vote just cast, and submit it again unchanged
                steps.append((slot.sample_id, criterion, "B" if choice != "B" else "A", GOOD))
                steps.append((slot.sample_id, criterion, "B" if choice != "B" else "A", GOOD))
    # Refusals: a criterion of the other split, then a sample the annotator does not hold.
    steps.insert(3, (slots[0].sample_id, criteria["reasoning"][0], "A", GOOD))
    return steps


def _state(project: Project, user, slots: list[Slot]) -> dict[str, Any]:
    order = {slot.sample_id: i for i, slot in enumerate(slots)}
    votes = sorted(
        (
            order[v.sample_id],
            v.criterion.key,
            v.criterion.split,
            v.round,
            v.choice,
            v.grade,
            v.score_a,
            v.score_b,
            v.shown_swapped,
            v.unsure,
            v.rationale,
            v.seconds,
            v.revisions.count(),
        )
        for v in Vote.objects.filter(annotator=user).select_related("criterion")
    )
    slot_rows = sorted(
        (order[s.sample_id], s.completed_at is not None, s.swap_ab)
        for s in Slot.objects.filter(annotator=user)
    )
    member = ProjectMember.objects.filter(project=project, user=user).values(*COUNTERS).get()
    return {"votes": votes, "slots": slot_rows, "counters": member}


def _play(project, user, steps, *, general: bool) -> list[str]:
    """Cast the steps; a tie over the cap is answered again with A, as an annotator would."""
    outcomes: list[str] = []
    queue = list(steps)
    k = 0
    while queue:
        sample_id, criterion, choice, rationale = queue.pop(0)
        k += 1
        answer = _answer(project.label_scale, choice)
        try:
            if general:
                shown = voting.shown_answer(scale=project.label_scale, **_shown(answer))
                vote = voting._vote_write(
                    project, user, sample_id, criterion, shown, rationale, k * 0.5, k % 3 == 0
                )
            else:
                vote = voting.vote_submit(
                    project=project,
                    annotator=user,
                    sample_id=sample_id,
                    criterion_id=criterion.pk,
                    rationale=rationale,
                    seconds=k * 0.5,
                    unsure=k % 3 == 0,
                    **answer,
                )
            stored = Vote.objects.get(pk=vote.pk)
            returned = (vote.choice, vote.grade, vote.score_a, vote.score_b, vote.shown_swapped)
            assert returned == (
                stored.choice,
                stored.grade,
                stored.score_a,
                stored.score_b,
                stored.shown_swapped,
            )
            outcomes.append(f"ok {vote.choice}")
        except work_types.VoteRejected as rejected:
            outcomes.append(f"refused {rejected.field}: {rejected.message}")
            if choice == "tie" and rejected.field == "choice":
                queue.insert(0, (sample_id, criterion, "A", rationale))
    return outcomes


def _shown(answer: dict[str, Any]) -> dict[str, Any]:
    return {
        "shown_choice": answer.get("shown_choice", ""),
        "shown_grade": answer.get("shown_grade"),
        "shown_scores": answer.get("shown_scores"),
    }


@needs_postgres
@pytest.mark.django_db
@pytest.mark.parametrize("scale", ["pairwise", "graded", "pointwise"])
def test_one_statement_vote_equals_the_general_path(scale, lead):
    fast, fast_user, fast_slots = _world(f"fast-{scale}", scale, lead)
    ref, ref_user, ref_slots = _world(f"ref-{scale}", scale, lead)
    # A slot completed before all its votes are in (as early stopping leaves one): the vote on
    # its missing criterion counts as done at once.
    for slots in (fast_slots, ref_slots):
        Slot.objects.filter(pk=slots[3].pk).update(completed_at=timezone.now())
    for world in (fast, ref):
        counters_recount(project_id=world.pk)
    fast_steps = _script(fast_slots, fast)
    ref_steps = _script(ref_slots, ref)
    # A sample of the other project: not the annotator's.
    fast_steps.append((ref_slots[0].sample_id, fast_steps[0][1], "A", GOOD))
    ref_steps.append((fast_slots[0].sample_id, ref_steps[0][1], "A", GOOD))
    fast_outcomes = _play(fast, fast_user, fast_steps, general=False)
    ref_outcomes = _play(ref, ref_user, ref_steps, general=True)
    assert fast_outcomes == ref_outcomes
    assert any(o == "ok tie" for o in fast_outcomes)
    assert any(o.startswith("refused choice") for o in fast_outcomes)  # a tie over the cap
    assert any(o.startswith("refused criterion") for o in fast_outcomes)
    assert fast_outcomes[-1].startswith("refused sample")
    assert _state(fast, fast_user, fast_slots) == _state(ref, ref_user, ref_slots)
    assert sum(completed for _, completed, _ in _state(fast, fast_user, fast_slots)["slots"]) == 6
    assert counters_drift(fast) == {} and counters_drift(ref) == {}


@needs_postgres
@pytest.mark.django_db
def test_the_statement_writes_nothing_when_it_declines(project, lead):
    """An existing vote, a slot not held, an uncalibrated member: None, and no row changes."""
    make_formal(project, 1)
    user = make_user("decline")
    member_add(project=project, user=user)
    criterion = Criterion.objects.filter(project=project, split="open_ended").first()
    sample_id = Slot.objects.first().sample_id
    canonical = {s: ("A", None, None, None) for s in (False, True)}
    args = {
        "project": project,
        "annotator": user,
        "sample_id": sample_id,
        "criterion": criterion,
        "canonical": canonical,
        "rationale": GOOD,
        "seconds": 1.0,
        "unsure": False,
    }
    assert formal_vote.formal_vote_insert(**args) is None  # not calibrated
    calibrate(project, user, lead)
    assert formal_vote.formal_vote_insert(**args) is None  # no slot held
    work.work_next(project=project, annotator=user)
    first = formal_vote.formal_vote_insert(**args)
    assert first is not None and Vote.objects.get(pk=first.pk).choice == "A"
    assert formal_vote.formal_vote_insert(**args) is None  # voted already: a revision
    assert Vote.objects.filter(annotator=user).count() == 1
    member = ProjectMember.objects.get(project=project, user=user)
    assert (member.formal_votes, member.formal_ties) == (1, 0)


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_tabs_of_one_annotator_voting_every_criterion_of_a_sample_at_once():
    """Five tabs vote the five criteria of one sample together, sample after sample.

    A statement that waited for another tab's vote must not count the slot's votes from its
    older snapshot: every slot ends completed and the counters equal a recount.
    """
    lead = make_user("tabs-lead")
    project = project_create(name="tabs", slug="tabs", batch_size=4, annotators_per_sample=1)
    make_formal(project, 4, prefix="t")
    user = make_user("tabs-user")
    member_add(project=project, user=user)
    calibrate(project, user, lead)
    work.work_next(project=project, annotator=user)
    criteria = list(Criterion.objects.filter(project=project, split="open_ended"))
    assert len(criteria) == 5
    for slot in Slot.objects.filter(annotator=user).order_by("sample_id"):
        barrier = threading.Barrier(len(criteria))
        errors: list[BaseException] = []

        def vote(
            criterion: Criterion,
            sample_id: int = slot.sample_id,
            barrier: threading.Barrier = barrier,
            errors: list[BaseException] = errors,
        ) -> None:
            try:
                barrier.wait()
                voting.vote_submit(
                    project=project,
                    annotator=user,
                    sample_id=sample_id,
                    criterion_id=criterion.pk,
                    shown_choice="A",
                    rationale=GOOD,
                    seconds=1,
                )
            except BaseException as exc:  # reported below
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=vote, args=(c,)) for c in criteria]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
        slot.refresh_from_db()
        assert slot.completed_at is not None
    assert Vote.objects.filter(annotator=user).count() == 4 * 5
    assert counters_drift(project) == {}
