"""Reads shared by the queue and the voting services, each a single query."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.core.cache import cache, caches
from django.core.cache.backends.locmem import LocMemCache
from django.db import connection
from django.db.models import CharField, Func, JSONField, TextField, Value
from django.utils import timezone

from core.db import prepared_cursor

from .. import tiecap
from ..models import (
    Criterion,
    Project,
    ProjectMember,
    Sample,
    SampleStatus,
    Skip,
    Slot,
    Split,
    Vote,
)

SPLITS = list(Split.values)
_Read = TypeVar("_Read")
#: The member's counter of completed slots of each split (annotation.services.counters).
DONE_FIELD = {split: f"done_{split}" for split in SPLITS}


class ProjectCriteria:
    """A project's criteria by split (in screen order) and by id."""

    def __init__(self, criteria: list[Criterion]) -> None:
        self.by_id = {c.pk: c for c in criteria}
        self.by_split: dict[str, list[Criterion]] = {split: [] for split in SPLITS}
        for criterion in criteria:
            self.by_split.setdefault(criterion.split, []).append(criterion)

    def of(self, split: str) -> list[Criterion]:
        return self.by_split.get(split, [])


def project_criteria(project: Project) -> ProjectCriteria:
    """The criteria, loaded once per Project instance (a request's submit and next share it)."""
    cached = getattr(project, "_work_criteria", None)
    if cached is None:
        rows = Criterion.objects.filter(project=project).order_by("split", "order", "key")
        cached = ProjectCriteria(list(rows))
        project._work_criteria = cached
    return cached


class _LiveCriteriaJson(Func):
    """A Project query's live criteria as one JSON array of objects, every column of the row."""

    output_field = TextField()

    def __init__(self) -> None:
        super().__init__()

    def _sql(self, connection: Any, aggregate: str, build: str) -> tuple[str, list[Any]]:
        qn = connection.ops.quote_name
        pairs = ", ".join(
            f"'{f.column}', c.{qn(f.column)}" for f in Criterion._meta.concrete_fields
        )
        sql = (
            f"(SELECT {aggregate}({build}({pairs})) FROM {Criterion._meta.db_table} c"
            f" WHERE c.project_id = {Project._meta.db_table}.id AND c.removed_at IS NULL)"
        )
        return sql, []

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        return self._sql(connection, "json_group_array", "json_object")

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        sql, params = self._sql(connection, "json_agg", "json_build_object")
        return f"{sql}::text", params


def _field_value(field: Any, value: Any) -> Any:
    """A criterion column as read from the JSON of :func:`project_for_labeling`.

    SQLite's json_object() embeds a JSON column (the rubric) as its text, PostgreSQL's
    json_build_object() as JSON: both come back as the decoded value.
    """
    if isinstance(field, JSONField) and isinstance(value, str):
        return json.loads(value)
    return field.to_python(value)


class _ProjectRead:
    """The project row by slug with its live criteria as JSON: the statement and its builder."""

    def __init__(self, conn: Any) -> None:
        criteria = _LiveCriteriaJson()
        if conn.vendor == "postgresql":
            criteria_sql, _ = criteria.as_postgresql(None, conn)
        else:
            criteria_sql, _ = criteria.as_sql(None, conn)
        table = Project._meta.db_table
        self.projects = _ModelRows(conn, Project)
        columns = ", ".join(self.projects.columns(conn, conn.ops.quote_name(table)))
        self.sql = f"SELECT {columns}, {criteria_sql} FROM {table} WHERE slug = %s"


_built_reads: dict[tuple[type, str], Any] = {}


def _built(read: type[_Read]) -> _Read:
    """A hand-written read (its statement and row builders) for the current database, built
    once per process: compiling it on every request cost a third of the read."""
    key = (read, connection.vendor)
    built = _built_reads.get(key)
    if built is None:
        built = _built_reads[key] = read(connection)
    return built


def project_for_labeling(slug: str) -> Project | None:
    """The project with its criteria (as :func:`project_criteria` loads them), in one query."""
    read = _built(_ProjectRead)
    with prepared_cursor() as cursor:
        cursor.execute(read.sql, [slug])
        row = cursor.fetchone()
    if row is None:
        return None
    project = read.projects.instance(row[:-1])
    fields = Criterion._meta.concrete_fields
    names = [f.attname for f in fields]
    criteria = [
        Criterion.from_db("default", names, [_field_value(f, data[f.column]) for f in fields])
        for data in json.loads(row[-1] or "[]")
    ]
    criteria.sort(key=lambda c: (c.split, c.order, c.key))
    project._work_criteria = ProjectCriteria(criteria)
    return project


def formal_votes(project: Project, user: Any):
    return Vote.objects.filter(
        annotator_id=user.pk, round=Vote.FORMAL_ROUND, sample__project_id=project.pk
    )


def _tables() -> dict[str, str]:
    return {
        "member": ProjectMember._meta.db_table,
        "sample": Sample._meta.db_table,
        "slot": Slot._meta.db_table,
        "vote": Vote._meta.db_table,
        "skip": Skip._meta.db_table,
    }


def member_progress(project: Project, user: Any) -> ProjectMember | None:
    """The active membership with its formal counters, in one query, whatever its history.

    Adds ``f_votes`` and ``f_ties`` (all formal votes in the project: the tie cap's n and t),
    ``f_done`` (formal votes on samples whose slot the user holds), ``n_open`` (slots held and
    not completed), ``n_skips`` (1 when a skipped item has not been voted on since, else 0) and
    ``slots_<split>`` (slots held per split). The history part comes from the member's
    counters (kept by the vote transaction, see annotation.services.counters); only the open
    slots, a batch at most, are counted here, on the (annotator, completed_at) index.
    """
    if not getattr(user, "is_authenticated", False):
        return None
    t = _tables()
    on_split = ", ".join(
        f"COALESCE(SUM(CASE WHEN s.split = %s THEN 1 ELSE 0 END), 0) AS open_{split}"
        for split in SPLITS
    )
    sql = (
        f"SELECT m.*, o.*, {_skipped_sql()} AS n_skips"
        f" FROM {t['member']} m, (SELECT COUNT(*) AS n_open, {on_split},"
        f" COALESCE(SUM((SELECT COUNT(*) FROM {t['vote']} v WHERE v.sample_id = sl.sample_id"
        " AND v.annotator_id = sl.annotator_id AND v.round = 0)), 0) AS open_votes"
        f" FROM {t['slot']} sl JOIN {t['sample']} s ON s.id = sl.sample_id"
        " WHERE sl.annotator_id = %s AND sl.completed_at IS NULL AND s.project_id = %s) o"
        " WHERE m.project_id = %s AND m.user_id = %s AND m.is_active = %s"
    )
    params = [*SPLITS, user.pk, project.pk, project.pk, user.pk, True]
    rows = list(ProjectMember.objects.raw(sql, params))
    if not rows:
        return None
    member = rows[0]
    opened = {split: int(getattr(member, f"open_{split}")) for split in SPLITS}
    return _progress(member, int(member.n_open), int(member.open_votes), opened)


def _skipped_sql() -> str:
    """1 when the member ``m`` has a skipped item not voted on since, else 0 (SQL)."""
    t = _tables()
    return (
        "CASE WHEN EXISTS (SELECT 1"
        f" FROM {t['skip']} k JOIN {t['sample']} ks ON ks.id = k.sample_id"
        " WHERE k.annotator_id = m.user_id AND ks.project_id = m.project_id AND NOT EXISTS ("
        f" SELECT 1 FROM {t['vote']} v WHERE v.sample_id = k.sample_id AND v.criterion_id ="
        " k.criterion_id AND v.annotator_id = k.annotator_id AND v.round = k.round))"
        " THEN 1 ELSE 0 END"
    )


def _progress(
    member: ProjectMember, n_open: int, open_votes: int, opened: dict[str, int]
) -> ProjectMember:
    """Add the progress attributes: the counters plus what the open slots hold."""
    member.f_votes, member.f_ties = member.formal_votes, member.formal_ties
    member.f_done = member.done_votes + open_votes
    for split in SPLITS:
        done = getattr(member, DONE_FIELD[split], 0)
        setattr(member, f"slots_{split}", done + opened.get(split, 0))
    member.n_open = n_open
    return member


def open_slots(project: Project, user: Any):
    """The user's open slots with their samples and the criteria already voted, oldest first."""
    return (
        Slot.objects.filter(
            annotator_id=user.pk, completed_at__isnull=True, sample__project=project
        )
        .select_related("sample")
        .annotate(voted_criteria=voted_criteria(user))
        .order_by("claimed_at", "sample_id")
    )


def open_slots_progress(project: Project, user: Any) -> tuple[ProjectMember | None, list[Slot]]:
    """:func:`member_progress` and :func:`open_slots` in one query while the user holds open
    slots (every labeling request but the one that claims a batch), else two.

    The statement is :func:`open_slots`'s, written once per database vendor (building the ORM
    query cost a third of this read on every request); rows become the same Slot and Sample
    instances, each column through the converters the ORM would apply.
    """
    if not getattr(user, "is_authenticated", False):
        return None, []
    read = _built(_OpenSlotsRead)
    params = [user.pk, project.pk, user.pk, True, user.pk, project.pk]
    with prepared_cursor() as cursor:
        cursor.execute(read.sql, params)
        raw = cursor.fetchall()
    if not raw:
        return member_progress(project, user), []
    if raw[0][-1] is None:
        return None, []
    rows = [read.slot(values) for values in raw]
    data = json.loads(raw[0][-1])
    fields = ProjectMember._meta.concrete_fields
    values = [_aware(f.to_python(data[f.column])) for f in fields]
    member = ProjectMember.from_db("default", [f.attname for f in fields], values)
    member.n_skips = int(data["n_skips"])
    voted = sum(len([c for c in (r.voted_criteria or "").split(",") if c]) for r in rows)
    opened: dict[str, int] = {}
    for row in rows:
        opened[row.sample.split] = opened.get(row.sample.split, 0) + 1
    return _progress(member, len(rows), voted, opened), rows


class _ModelRows:
    """Model instances from the columns of a hand-written statement, each column through the
    converters the ORM applies when it reads that field (built once per model and database)."""

    def __init__(self, conn: Any, model: Any) -> None:
        self.model = model
        self.fields = model._meta.concrete_fields
        self.names = [f.attname for f in self.fields]
        self.converters = []
        for field in self.fields:
            col = field.get_col(model._meta.db_table)
            self.converters.append(
                (col, conn.ops.get_db_converters(col) + col.get_db_converters(conn))
            )
        self.db = conn.alias

    def columns(self, conn: Any, alias: str) -> list[str]:
        """The model's columns in the order :meth:`instance` reads them."""
        return [f"{alias}.{conn.ops.quote_name(f.column)}" for f in self.fields]

    def instance(self, values: Sequence[Any]) -> Any:
        """The instance of one row's columns, as the ORM would build it."""
        out = []
        for value, (col, funcs) in zip(values, self.converters, strict=True):
            for func in funcs:
                value = func(value, col, connection)
            out.append(value)
        return self.model.from_db(self.db, self.names, out)


class _OpenSlotsRead:
    """:func:`open_slots` plus the membership JSON as one SQL statement, and its row builder."""

    def __init__(self, conn: Any) -> None:
        qn = conn.ops.quote_name
        t = _tables()
        self.slots, self.samples = _ModelRows(conn, Slot), _ModelRows(conn, Sample)
        columns = self.slots.columns(conn, "sl") + self.samples.columns(conn, "s")
        if conn.vendor == "postgresql":
            join, member = "string_agg(v.criterion_id::text, ',')", "json_build_object"
        else:
            join, member = "group_concat(v.criterion_id)", "json_object"
        pairs = ", ".join(
            f"'{f.column}', m.{qn(f.column)}" for f in ProjectMember._meta.concrete_fields
        )
        member_json = (
            f"(SELECT {member}({pairs}, 'n_skips', {_skipped_sql()}) FROM {t['member']} m"
            " WHERE m.project_id = %s AND m.user_id = %s AND m.is_active = %s)"
        )
        if conn.vendor == "postgresql":
            member_json += "::text"
        self.sql = (
            f"SELECT {', '.join(columns)},"
            f" (SELECT {join} FROM {t['vote']} v WHERE v.sample_id = sl.sample_id"
            " AND v.annotator_id = %s AND v.round = 0),"
            f" {member_json}"
            f" FROM {t['slot']} sl JOIN {t['sample']} s ON s.id = sl.sample_id"
            " WHERE sl.annotator_id = %s AND sl.completed_at IS NULL AND s.project_id = %s"
            " ORDER BY sl.claimed_at ASC, sl.sample_id ASC"
        )
        self.sample_cache = Slot._meta.get_field("sample")

    def slot(self, values: tuple[Any, ...]) -> Slot:
        """A Slot with its Sample and ``voted_criteria``, as :func:`open_slots` returns them."""
        n = len(self.slots.fields)
        m = n + len(self.samples.fields)
        slot = self.slots.instance(values[:n])
        sample = self.samples.instance(values[n:m])
        self.sample_cache.set_cached_value(slot, sample)
        slot.voted_criteria = values[m]
        return slot


def _aware(value: Any) -> Any:
    """A datetime read from JSON, aware (SQLite's are naive UTC); other values unchanged."""
    if isinstance(value, datetime) and timezone.is_naive(value):
        return timezone.make_aware(value, UTC)
    return value


def formal_total(member: ProjectMember, criteria: ProjectCriteria) -> int:
    """Votes the slots the annotator holds (completed or not) ask for."""
    return sum(getattr(member, f"slots_{split}", 0) * len(criteria.of(split)) for split in SPLITS)


# The project's size changes with imports and calibrations, not with each vote: counting it on
# every labeling request cost 35 ms at 100,000 samples, so it is kept this long.
POOL_CACHE_SECONDS = 60


# In front of a shared cache, each process also keeps the figures this long: a labeling request
# then makes no cache round trip for them (the figures are a minute old at most either way).
POOL_MEMO_SECONDS = 5.0
_pool_memo: dict[int, tuple[float, dict[str, int]]] = {}


def project_pool(project: Project) -> dict[str, int]:
    """Active formal samples per split, and ``calibrated`` active members (cached, one query)."""
    shared = not isinstance(caches["default"], LocMemCache)  # an in-process cache needs no memo
    if shared:
        memo = _pool_memo.get(project.pk)
        if memo is not None and memo[0] > time.monotonic():
            return memo[1]
    key = f"work-pool:{project.pk}"
    pool = cache.get(key)
    if pool is None:
        t = _tables()
        sql = (
            "SELECT "
            + ", ".join(
                f"(SELECT COUNT(*) FROM {t['sample']} s WHERE s.project_id = %s AND s.split = %s"
                " AND s.is_seed = %s AND s.status = %s)"
                for _ in SPLITS
            )
            + f", (SELECT COUNT(*) FROM {t['member']} m WHERE m.project_id = %s"
            " AND m.is_active = %s AND m.calibrated_at IS NOT NULL)"
        )
        params: list[Any] = []
        for split in SPLITS:
            params += [project.pk, split, False, SampleStatus.ACTIVE.value]
        params += [project.pk, True]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        pool = dict(zip([*SPLITS, "calibrated"], (int(n) for n in row), strict=True))
        cache.set(key, pool, POOL_CACHE_SECONDS)
    if shared:
        _pool_memo[project.pk] = (time.monotonic() + POOL_MEMO_SECONDS, pool)
    return pool


def formal_share(project: Project, member: ProjectMember, criteria: ProjectCriteria) -> int:
    """Votes of the annotator's whole assignment: their share of the project, or what they hold.

    Every formal sample needs ``k`` annotators, spread over the calibrated ones, so the share of
    a split is ``ceil(samples * k / calibrated)`` samples (at most every sample) times its
    criteria. It does not move when a batch is claimed, so progress never jumps back then;
    an annotator who has claimed beyond their share sees what they hold instead.
    """
    pool = project_pool(project)
    k = project.annotators_per_sample
    people = max(1, pool["calibrated"])
    share = sum(
        min(pool[split], -(-pool[split] * k // people)) * len(criteria.of(split))
        for split in SPLITS
    )
    return max(share, formal_total(member, criteria))


def formal_allowance(project: Project, member: ProjectMember) -> int:
    return tiecap.allowance(ties=member.f_ties, votes=member.f_votes, cap=project.tie_cap)


def formal_tie_wait(project: Project, member: ProjectMember) -> int | None:
    """Formal votes still to cast before a new tie is allowed (0: now; None: never)."""
    return tiecap.votes_until_tie(ties=member.f_ties, votes=member.f_votes, cap=project.tie_cap)


class _VotedCriteria(Func):
    """Comma-joined criterion ids of one user's formal votes on the row's sample ('' or None)."""

    output_field = CharField()

    def __init__(self, user_id: int) -> None:
        super().__init__(Value(user_id))

    def _sql(self, compiler: Any, connection: Any, join: str) -> tuple[str, list[Any]]:
        user_sql, user_params = compiler.compile(self.source_expressions[0])
        slot, vote = _tables()["slot"], _tables()["vote"]
        sql = (
            f"(SELECT {join} FROM {vote} v WHERE v.sample_id = {slot}.sample_id"
            f" AND v.annotator_id = {user_sql} AND v.round = 0)"
        )
        return sql, list(user_params)

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        return self._sql(compiler, connection, "group_concat(v.criterion_id)")

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        return self._sql(compiler, connection, "string_agg(v.criterion_id::text, ',')")


def voted_criteria(user: Any) -> Func:
    """For a Slot query: the criteria the user has voted on (formal round) of the slot's sample."""
    return _VotedCriteria(user.pk)


def skip_order(user: Any, sample_ids: list[int], round_: int) -> dict[tuple[int, int], int]:
    """The user's skipped (sample, criterion) items among ``sample_ids``: rank of the latest skip.

    Items skipped longer ago rank lower, so they come back first.
    """
    rows = (
        Skip.objects.filter(annotator_id=user.pk, round=round_, sample_id__in=sample_ids)
        .order_by("pk")
        .values_list("sample_id", "criterion_id")
    )
    latest: dict[tuple[int, int], int] = {}
    for rank, key in enumerate(rows):
        latest.pop(key, None)
        latest[key] = rank
    return latest


def seed_swapped(project: Project, user_id: int, sample_id: int) -> bool:
    """A stable per-annotator A/B order for seed items (they have no slot to store it in)."""
    if not project.shuffle_ab:
        return False
    digest = hashlib.blake2s(f"{project.pk}:{user_id}:{sample_id}".encode()).digest()
    return bool(digest[0] & 1)
