"""Casting and revising votes: rationale rule, tie cap, slot ownership and the calibration gate.

The tie cap (formal votes only, calibration excluded), with ``cap = p / q`` exact and ``n``
formal votes of which ``t`` are ties before this one:

- a new tie is accepted when ``(t + 1) * q < p * (n + 1)`` (strictly below the cap, counting
  the vote being cast: at 10% the first tie is possible at the 11th vote);
- revising a non-tie vote to a tie is accepted when ``(t + 1) * q < p * n``;
- ``tie_allowance`` is the largest ``m`` with ``(t + m) * q < p * (n + m)``.

See :mod:`annotation.tiecap`. The annotator's membership row is locked while a tie is cast, so
two tabs cannot both spend the last tie.

Revisions: once the annotator's slot on a sample is complete, a formal vote may be revised only
within the project's ``vote_revision_window`` (:func:`revision_locked`): by default until an
aggregation of the sample's split has run after the vote's last change and the sample has labels,
so nobody changes an answer after the labels (and others' votes) have been put together. The
clock is the split's agreement snapshot, rewritten by every run, not the labels' own time, which
a run leaves alone when a label comes out unchanged. Every revision keeps the previous value, who
replaced it and when (VoteRevision).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.apps import apps
from django.db import IntegrityError, connection, transaction
from django.db.models import (
    Exists,
    OuterRef,
    Subquery,
)
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.selectors.work import project_criteria, seed_swapped
from core.text import counted

from .. import scales, tiecap
from ..ab import SHOWN_CHOICES, shown_to_canonical
from ..importing.limits import RATIONALE_MAX_CHARS, text_problem
from ..models import (
    Choice,
    LabelScale,
    Project,
    ProjectMember,
    RevisionWindow,
    Sample,
    SampleStatus,
    Slot,
    Vote,
    VoteRevision,
)
from ..selectors.work import DONE_FIELD
from . import formal_vote, routing
from .counters import counters_add
from .work_types import VoteRejected


def tie_allowance(*, project: Project, annotator: Any) -> int:
    """Ties the annotator may cast now, one after the other (formal votes only)."""
    row = (
        ProjectMember.objects.filter(project=project, user_id=annotator.pk)
        .values("formal_votes", "formal_ties")
        .first()
    )
    n, t = (row["formal_votes"], row["formal_ties"]) if row else (0, 0)
    return tiecap.allowance(ties=t, votes=n, cap=project.tie_cap)


def _percent(cap: Any) -> str:
    value = float(cap) * 100
    return f"{value:.0f}%" if value == int(value) else f"{value:.1f}%"


def _tie_check(*, project: Project, member: ProjectMember, revising: bool) -> None:
    """Refuse a tie over the cap, from the member's counters read under their row lock."""
    n, t = member.formal_votes, member.formal_ties
    allowed = (
        tiecap.revise_to_tie_allowed(ties=t, votes=n, cap=project.tie_cap)
        if revising
        else tiecap.new_tie_allowed(ties=t, votes=n, cap=project.tie_cap)
    )
    if not allowed:
        cast = n if revising else n + 1
        raise VoteRejected(
            "choice",
            f"No tie available: ties must stay below {_percent(project.tie_cap)} of your formal "
            f"votes, and {counted(t + 1, 'tie')} in {counted(cast, 'vote')} would not. "
            f"{TIE_ADVICE.get(project.label_scale, TIE_ADVICE[LabelScale.PAIRWISE])}, or skip "
            "this item for now: it comes back after your other items.",
        )


#: What to do instead of a tie, per scale (a graded tie is the middle grade, a pointwise one
#: equal scores).
TIE_ADVICE = {
    LabelScale.PAIRWISE: "Choose A or B",
    LabelScale.GRADED: "Choose a grade for A or for B",
    LabelScale.POINTWISE: "Give the two responses different scores",
}


def tie_unavailable_message(*, cap: Any, wait: int | None) -> str:
    """Why the Tie button is off, and when it comes back (``wait``: tiecap.votes_until_tie)."""
    if wait is None:
        return "No ties in this project: choose A or B."
    return (
        f"No tie available: ties must stay below {_percent(cap)} of your formal votes. "
        f"The next tie is possible after {counted(wait, 'more vote')} for A or B."
    )


@dataclass(frozen=True)
class ShownAnswer:
    """What the annotator gave on screen, in the project's scale (left = "A" on screen)."""

    choice: str  # the pairwise choice it stands for, on screen: "A", "B" or "tie"
    grade: int | None = None  # graded: +2 left much better .. -2 right much better
    scores: tuple[int, int] | None = None  # pointwise: (left, right), 1-5 each

    def canonical(self, swapped: bool) -> tuple[str, int | None, int | None, int | None]:
        """(choice, grade, score_a, score_b) in canonical A/B terms."""
        grade = (
            scales.grade_shown_to_canonical(self.grade, swapped=swapped)
            if self.grade is not None
            else None
        )
        score_a = score_b = None
        if self.scores is not None:
            score_a, score_b = scales.scores_shown_to_canonical(*self.scores, swapped=swapped)
        return shown_to_canonical(self.choice, swapped), grade, score_a, score_b


def _whole(value: Any, low: int, high: int) -> int | None:
    """``value`` as an integer from ``low`` to ``high``, or None when it is anything else."""
    if isinstance(value, bool):
        return None
    try:
        number = int(str(value).strip()) if not isinstance(value, int) else value
    except (TypeError, ValueError):
        return None
    return number if low <= number <= high else None


GRADE_MESSAGE = "Choose one of the five grades: A≫B, A>B, tie, B>A or B≫A."
SCORE_MESSAGE = "Score Response {side} from 1 to 5."


def shown_answer(
    *,
    scale: str,
    shown_choice: str = "",
    shown_grade: Any = None,
    shown_scores: tuple[Any, Any] | None = None,
) -> ShownAnswer:
    """Check an answer against the project's scale; VoteRejected names the field at fault."""
    if scale == LabelScale.GRADED:
        grade = _whole(shown_grade, scales.GRADE_MIN, scales.GRADE_MAX)
        if grade is None:
            raise VoteRejected("grade", GRADE_MESSAGE)
        return ShownAnswer(scales.choice_from_grade(grade), grade=grade)
    if scale == LabelScale.POINTWISE:
        left, right = shown_scores if shown_scores is not None else (None, None)
        score_left = _whole(left, scales.SCORE_MIN, scales.SCORE_MAX)
        if score_left is None:
            raise VoteRejected("score_left", SCORE_MESSAGE.format(side="A"))
        score_right = _whole(right, scales.SCORE_MIN, scales.SCORE_MAX)
        if score_right is None:
            raise VoteRejected("score_right", SCORE_MESSAGE.format(side="B"))
        choice = scales.choice_from_scores(score_left, score_right)
        return ShownAnswer(choice, scores=(score_left, score_right))
    if shown_choice not in SHOWN_CHOICES:
        raise VoteRejected("choice", "Choose A, B or tie.")
    return ShownAnswer(shown_choice)


def vote_submit(
    *,
    project: Project,
    annotator: Any,
    sample_id: int,
    criterion_id: int,
    shown_choice: str = "",
    rationale: str,
    seconds: float,
    unsure: bool = False,
    shown_grade: Any = None,
    shown_scores: tuple[Any, Any] | None = None,
) -> Vote:
    """Create or revise the annotator's vote on (sample, criterion) in their current phase.

    ``shown_choice`` is the side clicked on screen ("A" = left, "B" = right, "tie"); it is
    stored in canonical A/B terms using the item's display order. A graded project takes
    ``shown_grade`` instead (+2 = left much better), a pointwise one ``shown_scores`` (left,
    right); both are stored canonical with the pairwise choice they stand for
    (:mod:`annotation.scales`). ``unsure`` is the "not sure" flag, stored with the vote for the
    lead. Raises VoteRejected.
    """
    answer = shown_answer(
        scale=project.label_scale,
        shown_choice=shown_choice,
        shown_grade=shown_grade,
        shown_scores=shown_scores,
    )
    rationale = (rationale or "").strip()
    if len(rationale) > RATIONALE_MAX_CHARS:
        raise VoteRejected(
            "rationale",
            f"The rationale is longer than {RATIONALE_MAX_CHARS:,} characters "
            f"({len(rationale):,}).",
        )
    problem = text_problem(rationale)
    if problem:
        raise VoteRejected("rationale", f"The rationale {problem}.")
    minimum = project.rationale_min_chars
    if len(rationale) < minimum:
        raise VoteRejected(
            "rationale",
            f"Write a rationale of at least {counted(minimum, 'character')} "
            f"({len(rationale)} so far).",
        )
    seconds = max(0.0, float(seconds or 0))
    criteria = project_criteria(project)
    criterion = criteria.by_id.get(criterion_id)
    if criterion is None:
        raise VoteRejected("criterion", "This criterion is not part of the project.")
    vote = None
    if formal_vote.available():
        # The common vote in one statement; None sends every other case the general way.
        vote = formal_vote.formal_vote_insert(
            project=project,
            annotator=annotator,
            sample_id=sample_id,
            criterion=criterion,
            canonical={swapped: answer.canonical(swapped) for swapped in (False, True)},
            rationale=rationale,
            seconds=seconds,
            unsure=unsure,
        )
    if vote is None:
        args = (project, annotator, sample_id, criterion, answer, rationale, seconds, unsure)
        try:
            vote = _vote_write(*args)
        except IntegrityError:
            # The same vote was created concurrently (two tabs): once more, as a revision.
            vote = _vote_write(*args)
    if vote.round == Vote.FORMAL_ROUND and routing.policy_on(project):
        routing.after_vote(project=project, sample_id=sample_id, criterion_id=criterion_id)
    return vote


def _vote_context(
    project: Project, annotator: Any, sample_id: int, criterion_id: int, *, lock: bool
) -> ProjectMember | None:
    """Membership, the user's slot on the sample, the seed check and existing votes: one query.

    With ``lock`` the membership row is locked (FOR UPDATE on PostgreSQL), which serialises
    one annotator's votes (and so their counters and ties); SQLite's IMMEDIATE transactions
    already serialise all writers. The member's own columns are read after the lock is granted
    (PostgreSQL re-reads a locked row), the other columns from the statement's snapshot.
    Written as SQL: it runs on every vote, and each part is a unique-index lookup.
    """
    t = {
        "member": ProjectMember._meta.db_table,
        "sample": Sample._meta.db_table,
        "slot": Slot._meta.db_table,
        "vote": Vote._meta.db_table,
        "label": apps.get_model("aggregation", "CriterionLabel")._meta.db_table,
        "snapshot": apps.get_model("aggregation", "AgreementSnapshot")._meta.db_table,
    }
    vote = (
        f"(SELECT v.id FROM {t['vote']} v WHERE v.sample_id = %s AND v.criterion_id = %s"
        " AND v.annotator_id = m.user_id AND v.round = {round})"
    )
    sql = (
        "SELECT m.*, sl.id AS slot_id, sl.swap_ab AS slot_swap, fs.split AS slot_split,"
        " sl.completed_at AS slot_completed_at,"
        f" (SELECT a.computed_at FROM {t['snapshot']} a WHERE a.project_id = fs.project_id"
        f"  AND a.split = fs.split AND EXISTS (SELECT 1 FROM {t['label']} l"
        "  WHERE l.sample_id = fs.id)) AS labelled_at,"
        f" (SELECT x.split FROM {t['sample']} x WHERE x.id = %s AND x.project_id = m.project_id"
        "  AND x.is_seed = %s AND x.status = %s) AS seed_split, "
        + vote.format(round="0")
        + " AS formal_vote, "
        + vote.format(round="m.calibration_round")
        + " AS seed_vote"
        f" FROM {t['member']} m"
        f" LEFT JOIN {t['slot']} sl ON sl.sample_id = %s AND sl.annotator_id = m.user_id"
        f" LEFT JOIN {t['sample']} fs ON fs.id = sl.sample_id AND fs.project_id = m.project_id"
        "  AND fs.is_seed = %s"
        " WHERE m.project_id = %s AND m.user_id = %s AND m.is_active = %s"
    )
    if lock and connection.features.has_select_for_update_of:
        sql += " FOR UPDATE OF m"
    params = [
        sample_id,
        True,
        SampleStatus.ACTIVE.value,
        sample_id,
        criterion_id,
        sample_id,
        criterion_id,
        sample_id,
        False,
        project.pk,
        annotator.pk,
        True,
    ]
    rows = list(ProjectMember.objects.raw(sql, params))
    if not rows:
        return None
    row = rows[0]
    if row.slot_split is None:  # the slot (if any) is not a formal sample of this project
        row.slot_id = None
    row.slot_swap = bool(row.slot_swap)
    row.slot_completed_at = _as_datetime(row.slot_completed_at)
    row.labelled_at = _as_datetime(row.labelled_at)
    return row


def _as_datetime(value: Any) -> datetime | None:
    """A raw column's timestamp, aware (SQLite hands raw extra columns back naive or as text)."""
    if value is None:
        return None
    parsed = value if isinstance(value, datetime) else parse_datetime(str(value))
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, UTC)
    return parsed


def revision_locked(
    *,
    window: str,
    slot_completed_at: datetime | None,
    labelled_at: datetime | None,
    vote_changed_at: datetime,
) -> bool:
    """Whether a formal vote may no longer be revised, under the project's revision window.

    Votes on a slot still in progress are always revisable. Once it is complete:
    ``until_aggregation`` locks the vote once the sample has labels and its split was last
    aggregated (``labelled_at``) at or after the vote's last change; ``until_complete`` locks
    it at once; ``always`` never.
    """
    if slot_completed_at is None or window == RevisionWindow.ALWAYS:
        return False
    if window == RevisionWindow.UNTIL_COMPLETE:
        return True
    return labelled_at is not None and labelled_at >= vote_changed_at


def vote_lock_message(*, project: Project, vote: Vote | None) -> str | None:
    """Why the annotator may not revise ``vote`` now, or None (one query; formal votes only)."""
    if vote is None or vote.round != Vote.FORMAL_ROUND:
        return None
    if project.vote_revision_window == RevisionWindow.ALWAYS:
        return None
    label = apps.get_model("aggregation", "CriterionLabel")
    snapshot = apps.get_model("aggregation", "AgreementSnapshot")
    aggregated = snapshot.objects.filter(
        project_id=OuterRef("sample__project_id"), split=OuterRef("sample__split")
    ).filter(Exists(label.objects.filter(sample_id=vote.sample_id)))
    slot = (
        Slot.objects.filter(sample_id=vote.sample_id, annotator_id=vote.annotator_id)
        .annotate(labelled_at=Subquery(aggregated.values("computed_at")[:1]))
        .values("completed_at", "labelled_at")
        .first()
    )
    if slot is None or not revision_locked(
        window=project.vote_revision_window,
        slot_completed_at=slot["completed_at"],
        labelled_at=slot["labelled_at"],
        vote_changed_at=vote.updated_at,
    ):
        return None
    return REVISION_LOCKED[project.vote_revision_window]


REVISION_LOCKED = {
    RevisionWindow.UNTIL_AGGREGATION: (
        "This vote can no longer be changed: the sample's labels have been aggregated since you "
        "cast it. Your earlier answer stands."
    ),
    RevisionWindow.UNTIL_COMPLETE: (
        "This vote can no longer be changed: you have completed this sample. Your earlier "
        "answer stands."
    ),
}


def _vote_write(
    project: Project,
    annotator: Any,
    sample_id: int,
    criterion: Any,
    answer: ShownAnswer,
    rationale: str,
    seconds: float,
    unsure: bool = False,
) -> Vote:
    with transaction.atomic():
        # Every vote moves the member's counters: lock the member row first, so the counters
        # read here (the tie cap's n and t) are the latest committed ones.
        row = _vote_context(project, annotator, sample_id, criterion.pk, lock=True)
        if row is None:
            raise VoteRejected("sample", "You are not an annotator in this project.")
        if row.is_calibrated:
            if row.slot_id is None:
                raise VoteRejected("sample", NOT_YOURS)
            round_, swapped, split, existing_id = 0, row.slot_swap, row.slot_split, row.formal_vote
        else:
            if row.seed_split is None:
                raise VoteRejected(
                    "sample", "Formal work opens once the lead has reviewed your calibration."
                )
            round_, split, existing_id = row.calibration_round, row.seed_split, row.seed_vote
            swapped = seed_swapped(project, annotator.pk, sample_id)
        if split != criterion.split:
            raise VoteRejected("criterion", "This criterion does not apply to this sample.")
        choice, grade, score_a, score_b = answer.canonical(swapped)
        existing = None
        if existing_id is not None:
            existing = Vote.objects.select_for_update().get(pk=existing_id)
        formal = round_ == Vote.FORMAL_ROUND
        if (
            formal
            and existing is not None
            and revision_locked(
                window=project.vote_revision_window,
                slot_completed_at=row.slot_completed_at,
                labelled_at=row.labelled_at,
                vote_changed_at=existing.updated_at,
            )
        ):
            if (existing.choice, existing.rationale, existing.unsure) == (
                choice,
                rationale,
                unsure,
            ) and _scale_values(existing) == (grade, score_a, score_b):
                existing.criterion = criterion
                return existing  # submitted again unchanged: nothing to refuse, nothing to write
            raise VoteRejected("vote", REVISION_LOCKED[project.vote_revision_window])
        if formal and choice == Choice.TIE and (existing is None or existing.choice != Choice.TIE):
            # The counters were read under the lock taken above, so every committed tie is seen.
            _tie_check(project=project, member=row, revising=existing is not None)
        was_tie = existing is not None and existing.choice == Choice.TIE
        if existing is None:
            vote = Vote.objects.create(
                sample_id=sample_id,
                criterion=criterion,
                annotator_id=annotator.pk,
                round=round_,
                choice=choice,
                grade=grade,
                score_a=score_a,
                score_b=score_b,
                rationale=rationale,
                seconds=seconds,
                shown_swapped=swapped,
                unsure=unsure,
            )
        else:
            vote = existing
            if (vote.choice, vote.rationale) != (choice, rationale) or _scale_values(vote) != (
                grade,
                score_a,
                score_b,
            ):
                VoteRevision.objects.create(
                    vote=vote,
                    choice=vote.choice,
                    grade=vote.grade,
                    score_a=vote.score_a,
                    score_b=vote.score_b,
                    rationale=vote.rationale,
                    seconds=vote.seconds,
                    recorded_at=vote.updated_at,
                    revised_by_id=annotator.pk,
                )
            vote.choice = choice
            vote.grade, vote.score_a, vote.score_b = grade, score_a, score_b
            vote.rationale = rationale
            vote.seconds = seconds
            vote.shown_swapped = swapped
            vote.unsure = unsure
            vote.save(
                update_fields=[
                    "choice",
                    "grade",
                    "score_a",
                    "score_b",
                    "rationale",
                    "seconds",
                    "shown_swapped",
                    "unsure",
                    "updated_at",
                ]
            )
        if formal:
            kept = _slot_touch(
                project=project,
                slot_id=row.slot_id,
                sample_id=sample_id,
                annotator=annotator,
                n_criteria=len(project_criteria(project).of(split)),
                member_id=row.pk,
                split=split,
                new=existing is None,
                ties=int(choice == Choice.TIE) - int(was_tie),
            )
            if not kept:
                # The slot was reclaimed between the read and this write: undo the vote.
                raise VoteRejected("sample", NOT_YOURS)
    vote.criterion = criterion
    return vote


def _scale_values(vote: Vote) -> tuple[int | None, int | None, int | None]:
    """A vote's (grade, score_a, score_b), the answer a graded or pointwise vote keeps."""
    return vote.grade, vote.score_a, vote.score_b


NOT_YOURS = (
    "This sample is no longer assigned to you (the lease ran out or the lead reassigned it). "
    "Your vote was not saved."
)


def _slot_touch(
    *,
    project: Project,
    slot_id: int,
    sample_id: int,
    annotator: Any,
    n_criteria: int,
    member_id: int,
    split: str,
    new: bool,
    ties: int,
) -> bool:
    """Renew the lease, complete the slot once every criterion has a vote, move the counters.

    The update only matches while the slot is still the annotator's, so it doubles as the
    ownership check of the vote being written (a concurrent claim of an expired lease either
    waits for this transaction and then finds the lease renewed, or wins and this matches 0).
    The member's counters (annotation.services.counters) take the vote (``new``), the change
    in ties, and the slot's votes when this write completes it; on PostgreSQL in the same
    statement.
    """
    now = timezone.now()
    slot_t, vote_t = Slot._meta.db_table, Vote._meta.db_table
    voted = (
        f"(SELECT COUNT(*) FROM {vote_t} v WHERE v.sample_id = %s AND v.annotator_id = %s"
        " AND v.round = 0)"
    )
    touch = (
        f"UPDATE {slot_t} SET lease_expires_at = %s, completed_at = CASE"
        f" WHEN completed_at IS NOT NULL THEN completed_at WHEN {voted} >= %s THEN %s"
        f" ELSE NULL END WHERE id = %s AND annotator_id = %s RETURNING completed_at, {voted}"
    )
    at = connection.ops.adapt_datetimefield_value(now)
    until = connection.ops.adapt_datetimefield_value(now + timedelta(minutes=project.lease_minutes))
    who = [sample_id, annotator.pk]
    params = [until, *who, n_criteria, at, slot_id, annotator.pk, *who]
    if connection.vendor == "postgresql":
        member_t, done = ProjectMember._meta.db_table, DONE_FIELD[split]
        sql = (
            f"WITH s AS ({touch} AS on_sample), c AS (SELECT completed_at = %s AS now_done,"
            " completed_at IS NOT NULL AS done, on_sample FROM s),"
            f" m AS (UPDATE {member_t} SET formal_votes = formal_votes + %s,"
            " formal_ties = formal_ties + %s, done_votes = done_votes + CASE WHEN c.now_done"
            " THEN c.on_sample WHEN c.done THEN %s ELSE 0 END,"
            f" {done} = {done} + CASE WHEN c.now_done THEN 1 ELSE 0 END"
            f" FROM c WHERE {member_t}.id = %s RETURNING 1) SELECT 1 FROM s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, at, int(new), ties, int(new), member_id])
            return cursor.fetchone() is not None
    with connection.cursor() as cursor:
        cursor.execute(touch, params)
        row = cursor.fetchone()
    if row is None:
        return False
    completed_at, on_sample = row
    completed_now = _as_datetime(completed_at) == now  # SQLite hands it back naive
    # Completed now: the slot's votes, this one included, are done; already: just this one.
    done_votes = int(on_sample) if completed_now else int(new and completed_at is not None)
    counters_add(
        member_id=member_id,
        votes=int(new),
        ties=ties,
        done_votes=done_votes,
        done_split=split if completed_now else "",
    )
    return True
