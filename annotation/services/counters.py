"""Per-member formal-work counters (ProjectMember.formal_votes, ..._ties, done_votes, done_<split>).

They are moved by the vote transaction (annotation.services.voting) under the member's row lock,
so the labeling screen and the tie cap read one row instead of counting the annotator's whole
history. :func:`counters_recount` is the definition: it recounts from the votes and slots, and
the migration that added the columns, the bulk builders (demo, benchmarks) and the tests use it.
"""

from __future__ import annotations

from django.db import connection

from ..models import Choice, ProjectMember, Sample, Slot, Vote
from ..selectors.work import DONE_FIELD


def counters_recount(*, project_id: int | None = None, user_id: int | None = None) -> int:
    """Recount the counters of every member (of one project, of one user); returns rows updated."""
    member, vote = ProjectMember._meta.db_table, Vote._meta.db_table
    slot, sample = Slot._meta.db_table, Sample._meta.db_table
    votes = (
        f"SELECT COUNT(*) FROM {vote} v JOIN {sample} s ON s.id = v.sample_id"
        f" WHERE v.annotator_id = {member}.user_id AND v.round = 0"
        f" AND s.project_id = {member}.project_id"
    )
    done = (
        f"SELECT COUNT(*) FROM {slot} sl JOIN {sample} s ON s.id = sl.sample_id"
        f" WHERE sl.annotator_id = {member}.user_id AND s.project_id = {member}.project_id"
        " AND sl.completed_at IS NOT NULL"
    )
    sets = [
        f"formal_votes = ({votes})",
        f"formal_ties = ({votes} AND v.choice = %s)",
        f"done_votes = ({votes} AND EXISTS (SELECT 1 FROM {slot} sl"
        " WHERE sl.sample_id = v.sample_id AND sl.annotator_id = v.annotator_id"
        " AND sl.completed_at IS NOT NULL))",
    ]
    params: list = [Choice.TIE.value]
    for split, name in DONE_FIELD.items():
        sets.append(f"{name} = ({done} AND s.split = %s)")
        params.append(split)
    where = []
    if project_id is not None:
        where.append("project_id = %s")
        params.append(project_id)
    if user_id is not None:
        where.append("user_id = %s")
        params.append(user_id)
    sql = f"UPDATE {member} SET " + ", ".join(sets)
    if where:
        sql += " WHERE " + " AND ".join(where)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def counters_add(
    *,
    member_id: int,
    votes: int = 0,
    ties: int = 0,
    done_votes: int = 0,
    done_split: str = "",
    done_slots: int = 1,
) -> None:
    """Move the counters of one member by these amounts (one UPDATE; nothing when all are 0).

    ``done_split`` names the split whose completed-slot count moves by ``done_slots`` (1 for a
    slot completed, -1 for one reopened).
    """
    changes = {"formal_votes": votes, "formal_ties": ties, "done_votes": done_votes}
    if done_split:
        changes[DONE_FIELD[done_split]] = done_slots
    changes = {name: delta for name, delta in changes.items() if delta}
    if not changes:
        return
    member = ProjectMember._meta.db_table
    sql = f"UPDATE {member} SET " + ", ".join(f"{name} = {name} + %s" for name in changes)
    with connection.cursor() as cursor:
        cursor.execute(sql + " WHERE id = %s", [*changes.values(), member_id])
