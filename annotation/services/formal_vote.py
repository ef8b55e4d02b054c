"""A new formal vote in one PostgreSQL statement: lock, checks, insert, slot and counters.

The general path (:func:`annotation.services.voting._vote_write`) takes five round trips:
BEGIN, the vote context locking the member row, the insert, the slot with the counters, and
COMMIT. The common vote (a calibrated annotator's first answer on an item of their own slot)
is written here by one statement of data-modifying CTEs, committed on its own.

Every rule of the general path holds in the statement: the member row is locked FOR UPDATE
first (the same lock order), the slot must be the annotator's (the UPDATE re-checks its row
once any concurrent claim commits), the sample formal and of the criterion's split, no vote
there yet, and a tie strictly below the cap of the locked counters. One thing differs: one
statement reads every other row from the snapshot it started with, so a vote of the same
annotator committed while it waited for the lock would be unseen (the slot's count, the vote
already there). Every vote moves the member row, so the statement checks that the row it
locked is the version its snapshot holds, and takes nothing when it is not. Whenever any check
fails nothing is written and the caller goes the general way, which says why.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from core.db import prepared_cursor

from .. import tiecap
from ..models import Choice, Criterion, Project, ProjectMember, Sample, Slot, Vote
from ..selectors.work import DONE_FIELD, project_criteria


def available() -> bool:
    """Whether the one-statement vote can run on this database (PostgreSQL)."""
    return connection.vendor == "postgresql"


def _sql(done: str, tie_allowed: str) -> str:
    member, slot = ProjectMember._meta.db_table, Slot._meta.db_table
    sample, vote = Sample._meta.db_table, Vote._meta.db_table
    voted = (
        f"(SELECT COUNT(*) FROM {vote} v WHERE v.sample_id = %(sample)s"
        " AND v.annotator_id = %(user)s AND v.round = 0)"
    )
    return (
        # The member row as the statement's snapshot holds it, and as locked (the latest).
        f"WITH snap AS (SELECT m.xmin::text AS sx FROM {member} m"
        "  WHERE m.project_id = %(project)s AND m.user_id = %(user)s),"
        f" m AS (SELECT m.id, m.formal_votes, m.formal_ties, m.xmin::text AS lx FROM {member} m"
        "  WHERE m.project_id = %(project)s AND m.user_id = %(user)s AND m.is_active"
        "  AND m.calibrated_at IS NOT NULL FOR UPDATE),"
        " ctx AS (SELECT m.id AS member_id, sl.id AS slot_id, sl.swap_ab FROM m"
        "  JOIN snap ON snap.sx = m.lx"
        f"  JOIN {slot} sl ON sl.sample_id = %(sample)s AND sl.annotator_id = %(user)s"
        f"  JOIN {sample} fs ON fs.id = sl.sample_id AND fs.project_id = %(project)s"
        "  AND NOT fs.is_seed AND fs.split = %(split)s"
        f"  WHERE NOT EXISTS (SELECT 1 FROM {vote} v WHERE v.sample_id = %(sample)s"
        "  AND v.criterion_id = %(criterion)s AND v.annotator_id = %(user)s AND v.round = 0)"
        f"  AND (%(tie)s = 0 OR {tie_allowed})),"
        # Renew the lease and complete the slot when this vote is its last criterion; the
        # count does not see this statement's insert, hence the + 1.
        f" s AS (UPDATE {slot} SET lease_expires_at = %(until)s, completed_at = CASE"
        f"  WHEN {slot}.completed_at IS NOT NULL THEN {slot}.completed_at"
        f"  WHEN {voted} + 1 >= %(n_criteria)s THEN %(now)s ELSE NULL END"
        f"  FROM ctx WHERE {slot}.id = ctx.slot_id AND {slot}.annotator_id = %(user)s"
        f"  RETURNING {slot}.completed_at IS NOT NULL AS done,"
        f"  {slot}.completed_at = %(now)s AS now_done, {voted} + 1 AS on_sample,"
        "  ctx.swap_ab, ctx.member_id),"
        f" ins AS (INSERT INTO {vote} (sample_id, criterion_id, annotator_id, round, choice,"
        "  grade, score_a, score_b, rationale, seconds, shown_swapped, unsure, created_at,"
        "  updated_at) SELECT %(sample)s, %(criterion)s, %(user)s, 0,"
        "  CASE WHEN s.swap_ab THEN %(choice_s)s::text ELSE %(choice)s::text END,"
        "  CASE WHEN s.swap_ab THEN %(grade_s)s::smallint ELSE %(grade)s::smallint END,"
        "  CASE WHEN s.swap_ab THEN %(score_a_s)s::smallint ELSE %(score_a)s::smallint END,"
        "  CASE WHEN s.swap_ab THEN %(score_b_s)s::smallint ELSE %(score_b)s::smallint END,"
        "  %(rationale)s, %(seconds)s, s.swap_ab, %(unsure)s, %(now)s, %(now)s FROM s"
        "  RETURNING id, shown_swapped),"
        f" mu AS (UPDATE {member} SET formal_votes = formal_votes + 1,"
        "  formal_ties = formal_ties + %(tie)s, done_votes = done_votes + CASE"
        "  WHEN s.now_done THEN s.on_sample WHEN s.done THEN 1 ELSE 0 END,"
        f"  {done} = {done} + CASE WHEN s.now_done THEN 1 ELSE 0 END"
        f"  FROM s WHERE {member}.id = s.member_id RETURNING 1)"
        " SELECT ins.id, ins.shown_swapped FROM ins"
    )


def formal_vote_insert(
    *,
    project: Project,
    annotator: Any,
    sample_id: int,
    criterion: Criterion,
    canonical: dict[bool, tuple[str, int | None, int | None, int | None]],
    rationale: str,
    seconds: float,
    unsure: bool,
) -> Vote | None:
    """Write a new formal vote in one statement, or nothing (None: take the general path).

    ``canonical`` maps the slot's display order (swapped or not) to the answer in canonical
    terms (choice, grade, score_a, score_b), as ``ShownAnswer.canonical`` gives it.
    """
    now = timezone.now()
    split = criterion.split
    plain, swapped = canonical[False], canonical[True]
    params = {
        "project": project.pk,
        "user": annotator.pk,
        "sample": sample_id,
        "criterion": criterion.pk,
        "split": split,
        "tie": int(plain[0] == Choice.TIE),
        "until": now + timedelta(minutes=project.lease_minutes),
        "now": now,
        "n_criteria": len(project_criteria(project).of(split)),
        "choice": plain[0],
        "grade": plain[1],
        "score_a": plain[2],
        "score_b": plain[3],
        "choice_s": swapped[0],
        "grade_s": swapped[1],
        "score_a_s": swapped[2],
        "score_b_s": swapped[3],
        "rationale": rationale,
        "seconds": seconds,
        "unsure": unsure,
    }
    tie_allowed = tiecap.new_tie_allowed_sql(
        ties="m.formal_ties", votes="m.formal_votes", cap=project.tie_cap
    )
    row = _run(_sql(DONE_FIELD[split], tie_allowed), params)
    if row is None:
        return None
    vote_id, shown_swapped = row
    choice, grade, score_a, score_b = canonical[bool(shown_swapped)]
    return _vote(
        vote_id,
        sample_id=sample_id,
        criterion=criterion,
        annotator_id=annotator.pk,
        answer=(choice, grade, score_a, score_b),
        rationale=rationale,
        seconds=seconds,
        shown_swapped=bool(shown_swapped),
        unsure=unsure,
        at=now,
    )


def _run(sql: str, params: dict[str, Any]) -> tuple[int, bool] | None:
    """The statement's row, or None when it wrote nothing (a unique clash included)."""
    try:
        # Inside a caller's transaction a savepoint keeps a clash from breaking it; on its own
        # the statement is its own transaction (no BEGIN / COMMIT round trips).
        if connection.in_atomic_block:
            with transaction.atomic(), prepared_cursor() as cursor:
                cursor.execute(sql, params)
                return cursor.fetchone()
        with prepared_cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    except IntegrityError:  # the same vote, written meanwhile: the general path revises it
        return None


def _vote(
    vote_id: int,
    *,
    sample_id: int,
    criterion: Criterion,
    annotator_id: int,
    answer: tuple[str, int | None, int | None, int | None],
    rationale: str,
    seconds: float,
    shown_swapped: bool,
    unsure: bool,
    at: datetime,
) -> Vote:
    """The Vote the statement stored, as the ORM would hand it back."""
    choice, grade, score_a, score_b = answer
    vote = Vote(
        pk=vote_id,
        sample_id=sample_id,
        criterion=criterion,
        annotator_id=annotator_id,
        round=Vote.FORMAL_ROUND,
        choice=choice,
        grade=grade,
        score_a=score_a,
        score_b=score_b,
        rationale=rationale,
        seconds=seconds,
        shown_swapped=shown_swapped,
        unsure=unsure,
        created_at=at,
        updated_at=at,
    )
    vote._state.adding = False
    vote._state.db = connection.alias
    return vote
