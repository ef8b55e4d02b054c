"""Writing many rows at once: COPY on PostgreSQL, bulk_create / bulk_update elsewhere.

Callers give model field names and row tuples of Python values; the one rule of how a row
reaches the table lives here. A JSON field takes a Python value, or :class:`JsonText` when the
caller already holds the serialised JSON (it is then written as is on PostgreSQL).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any

import numpy as np
import psycopg
from django.core.exceptions import EmptyResultSet
from django.db import connection, models
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

from .background import OneAhead

BATCH = 5000


class JsonText(str):
    """JSON already serialised: written verbatim by COPY, parsed for other databases."""


class JsonTextField(models.JSONField):
    """A JSON value stored as its text, read back whole: no JSONB to build on insert.

    For values only ever read in full (no key lookups in queries: they raise FieldError). The
    text is kept as written, so a :class:`JsonText` is stored byte for byte.
    """

    def db_type(self, connection: Any) -> str:
        return "text"

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if value is None or isinstance(value, JsonText) or hasattr(value, "as_sql"):
            return value
        return json.dumps(value, cls=self.encoder)

    def get_transform(self, name: str) -> Any:
        return None


def _columns(model: type[models.Model], fields: Sequence[str]) -> list[models.Field]:
    return [model._meta.get_field(name) for name in fields]


def _copy_value(field: models.Field, value: Any) -> Any:
    if isinstance(field, models.JSONField) and value is not None:
        return value if isinstance(value, JsonText) else json.dumps(value)
    return value


def _python_value(field: models.Field, value: Any) -> Any:
    if isinstance(value, JsonText):
        return json.loads(value)
    return value


def _attnames(model: type[models.Model], fields: Sequence[str]) -> list[str]:
    return [f.attname for f in _columns(model, fields)]


def _copy_sql(model: type[models.Model], columns: Sequence[models.Field]) -> str:
    names = ", ".join(connection.ops.quote_name(f.column) for f in columns)
    return f"COPY {connection.ops.quote_name(model._meta.db_table)} ({names}) FROM STDIN"


def _copy_rows(copy: Any, columns: Sequence[models.Field], rows: Iterable[Sequence[Any]]) -> int:
    """Write ``rows`` into an open COPY; only JSON values need converting."""
    count = 0
    json_at = [(i, f) for i, f in enumerate(columns) if isinstance(f, models.JSONField)]
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"a row of {len(row)} values for {len(columns)} fields")
        if json_at:
            row = list(row)
            for i, field in json_at:
                row[i] = _copy_value(field, row[i])
        copy.write_row(row)
        count += 1
    return count


def insert_rows(
    model: type[models.Model], fields: Sequence[str], rows: Iterable[Sequence[Any]]
) -> int:
    """Insert ``rows`` (one value per field of ``fields``) in the caller's transaction.

    Foreign keys are given by id (``"run"`` or ``"run_id"`` both name the column). Returns the
    number of rows written.
    """
    columns = _columns(model, fields)
    count = 0
    if connection.vendor == "postgresql":
        # wrap_database_errors: the driver's errors reach callers as Django's (IntegrityError...)
        with (
            connection.wrap_database_errors,
            connection.cursor() as cursor,
            cursor.cursor.copy(_copy_sql(model, columns)) as copy,
        ):
            return _copy_rows(copy, columns, rows)
    pairs = list(zip(_attnames(model, fields), columns, strict=True))
    iterator = iter(rows)
    while batch := list(islice(iterator, BATCH)):
        model.objects.bulk_create(
            model(**{a: _python_value(f, v) for (a, f), v in zip(pairs, row, strict=True)})
            for row in batch
        )
        count += len(batch)
    return count


class RowsInserter:
    """:func:`insert_rows` of batch after batch, each written while the caller goes on.

    On PostgreSQL each batch is COPYed by one background thread on the caller's own database
    connection, so in its transaction (the driver lets one operation at a time use the
    connection: the caller's next query waits for the COPY). The caller's work between batches
    overlaps the server's insert. A batch's error is raised by the next :meth:`write` or by
    :meth:`close`, which waits for the last batch and must be called before the transaction
    ends. Elsewhere each batch is inserted before :meth:`write` returns.
    """

    def __init__(self, model: type[models.Model], fields: Sequence[str]) -> None:
        self._model, self._fields = model, fields
        self._columns = _columns(model, fields)
        self._worker: OneAhead | None = None
        self.count = 0
        if connection.vendor == "postgresql":
            connection.ensure_connection()
            self._raw = connection.connection
            self._sql = _copy_sql(model, self._columns)
            self._worker = OneAhead("rows-insert")

    def _copy(self, rows: Sequence[Sequence[Any]]) -> int:
        with self._raw.cursor() as cursor, cursor.copy(self._sql) as copy:
            return _copy_rows(copy, self._columns, rows)

    def write(self, rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` (a list the caller no longer changes)."""
        if self._worker is None:
            self.count += insert_rows(self._model, self._fields, rows)
            return
        # wrap_database_errors: the previous batch's error reaches the caller as Django's.
        with connection.wrap_database_errors:
            self.count += self._worker.submit(self._copy, rows) or 0

    def close(self) -> int:
        """Wait for the last batch (raising its error); the number of rows written."""
        if self._worker is not None:
            worker, self._worker = self._worker, None
            with connection.wrap_database_errors:
                self.count += worker.close() or 0
        return self.count


def update_rows(
    model: type[models.Model], fields: Sequence[str], rows: Iterable[tuple[int, Sequence[Any]]]
) -> int:
    """Set ``fields`` of the rows given as ``(primary key, values)``, in the caller's transaction.

    PostgreSQL: COPY into a temporary table, then one ``UPDATE ... FROM``; elsewhere bulk_update.
    """
    columns = _columns(model, fields)
    rows = list(rows)
    if not rows:
        return 0
    if connection.vendor == "postgresql":
        quote = connection.ops.quote_name
        table = quote(model._meta.db_table)
        pk_column = quote(model._meta.pk.column)
        temp = quote(f"{model._meta.db_table}_updates")
        names = [quote(f.column) for f in columns]
        with connection.wrap_database_errors, connection.cursor() as cursor:
            raw = cursor.cursor
            raw.execute(
                f"CREATE TEMP TABLE {temp} ON COMMIT DROP AS "
                f"SELECT {pk_column}, {', '.join(names)} FROM {table} WITH NO DATA"
            )
            with raw.copy(f"COPY {temp} ({pk_column}, {', '.join(names)}) FROM STDIN") as copy:
                for pk, values in rows:
                    copy.write_row(
                        [pk, *(_copy_value(f, v) for f, v in zip(columns, values, strict=True))]
                    )
            assignments = ", ".join(f"{n} = u.{n}" for n in names)
            raw.execute(
                f"UPDATE {table} t SET {assignments} FROM {temp} u "
                f"WHERE t.{pk_column} = u.{pk_column}"
            )
            raw.execute(f"DROP TABLE {temp}")
        return len(rows)
    attnames = _attnames(model, fields)
    objects = []
    for pk, values in rows:
        obj = model(pk=pk)
        for a, f, v in zip(attnames, columns, values, strict=True):
            setattr(obj, a, _python_value(f, v))
        objects.append(obj)
    model.objects.bulk_update(objects, [f.name for f in columns], batch_size=2000)
    return len(rows)


# --- Reading many integer rows at once ----------------------------------------------------------

_BINARY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


def read_int_columns(queryset: Any, fields: Sequence[str]) -> dict[str, np.ndarray]:
    """The integer ``fields`` of every row of ``queryset`` as int64 arrays, one per field.

    PostgreSQL sends each column as one value: ``string_agg`` of the 8-byte big-endian form of
    every row's value (all aggregates of one query see the rows in the same order), so NumPy
    takes each column at once and nothing is done per row in Python (a COPY
    costs a message, and a Python iteration, per row). Elsewhere the rows come through
    ``values_list``. NULLs are not allowed.
    """
    if connection.vendor != "postgresql":
        rows = list(queryset.values_list(*fields))
        if not rows:
            return {f: np.zeros(0, np.int64) for f in fields}
        table = np.asarray(rows, dtype=np.int64).reshape(len(rows), len(fields))
        return {f: table[:, i].copy() for i, f in enumerate(fields)}
    try:
        inner, params = queryset.values_list(*fields).query.sql_with_params()
    except EmptyResultSet:  # e.g. .none() or pk__in=[]
        return {f: np.zeros(0, np.int64) for f in fields}
    names = ", ".join(f"c{i}" for i in range(len(fields)))
    aggregates = ", ".join(
        f"string_agg(int8send(c{i}::int8), ''::bytea), count(c{i})" for i in range(len(fields))
    )
    sql = f"SELECT count(*), {aggregates} FROM ({inner}) AS q ({names})"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    n = row[0]
    out = {}
    for i, field in enumerate(fields):
        data, present = row[1 + 2 * i], row[2 + 2 * i]
        if present != n:
            raise ValueError(f"{field} holds NULLs")
        out[field] = np.frombuffer(data or b"", dtype=">i8").astype(np.int64)
    return out


# --- Writing many integer rows at once ---------------------------------------------------------

_ARRAY_HEADER = np.dtype(
    [("ndim", ">i4"), ("flags", ">i4"), ("oid", ">i4"), ("n", ">i4"), ("lb", ">i4")]
)
_INT8_OID = 20


Spans = tuple[np.ndarray, np.ndarray, np.ndarray]  # values, and each row's start and stop in them


def _binary_rows(columns: dict[str, np.ndarray], arrays: dict[str, Spans]) -> bytes:
    """The rows of a binary COPY: int8 ``columns``, then int8[] ``arrays``.

    Rows are grouped by their arrays' lengths (every row of a group has one width, so NumPy
    lays a group out at once); the order of rows in the stream is not kept.
    """
    names = list(columns)
    n_rows = len(columns[names[0]]) if names else len(next(iter(arrays.values()))[1])
    lengths = np.zeros((n_rows, len(arrays)), np.int64)
    for j, (_, starts, stops) in enumerate(arrays.values()):
        lengths[:, j] = np.asarray(stops) - np.asarray(starts)
    if not n_rows:
        return b""
    shapes, group = np.unique(lengths, axis=0, return_inverse=True)
    group = group.reshape(-1)
    parts = []
    for g, shape in enumerate(shapes):
        rows = np.flatnonzero(group == g)
        layout: list[tuple] = [("fields", ">i2")]
        for i in range(len(names)):
            layout += [(f"cl{i}", ">i4"), (f"c{i}", ">i8")]
        for j, size in enumerate(shape.tolist()):
            layout += [(f"al{j}", ">i4"), (f"ah{j}", _ARRAY_HEADER)]
            if size:
                layout += [(f"av{j}", np.dtype([("l", ">i4"), ("v", ">i8")]), (size,))]
        out = np.zeros(len(rows), dtype=np.dtype(layout))
        out["fields"] = len(names) + len(shape)
        for i, name in enumerate(names):
            out[f"cl{i}"] = 8
            out[f"c{i}"] = columns[name][rows]
        for j, (values, starts, _) in enumerate(arrays.values()):
            size = int(shape[j])
            out[f"al{j}"] = 20 + 12 * size if size else 12
            header = out[f"ah{j}"]
            header["ndim"] = 1 if size else 0
            header["oid"] = _INT8_OID
            header["n"] = size
            header["lb"] = 1
            if size:
                at = np.asarray(starts)[rows][:, None] + np.arange(size)[None, :]
                out[f"av{j}"]["l"] = 8
                out[f"av{j}"]["v"] = values[at]
        data = out.tobytes()
        if not all(shape):
            # An empty array is written with ndim 0 and no dimension fields (12 bytes).
            data = _drop_empty_dims(out, shape)
        parts.append(data)
    return b"".join(parts)


def _drop_empty_dims(out: np.ndarray, shape: np.ndarray) -> bytes:
    """Rows whose empty arrays carry no dimension fields: remove those 8 bytes per empty array."""
    keep = np.ones(out.dtype.itemsize, bool)
    for j, size in enumerate(shape.tolist()):
        if not size:
            offset = out.dtype.fields[f"ah{j}"][1] + 12
            keep[offset : offset + 8] = False
    raw = np.frombuffer(out.tobytes(), np.uint8).reshape(len(out), out.dtype.itemsize)
    return raw[:, keep].tobytes()


def temp_int_table(
    name: str,
    columns: dict[str, np.ndarray],
    arrays: dict[str, Spans] | None = None,
) -> None:
    """A temporary table ``name`` (dropped at commit) filled from NumPy in one binary COPY.

    ``columns`` become int8 columns; ``arrays`` int8[] columns, each given as its flat values
    and per-row starts and stops (row i holds ``values[starts[i]:stops[i]]``). PostgreSQL
    only; call inside a transaction.
    """
    arrays = arrays or {}
    quote = connection.ops.quote_name
    definition = [f"{quote(c)} int8 NOT NULL" for c in columns]
    definition += [f"{quote(a)} int8[] NOT NULL" for a in arrays]
    names = ", ".join(quote(c) for c in [*columns, *arrays])
    body = _binary_rows(columns, arrays)
    header = _BINARY_SIGNATURE + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
    with connection.wrap_database_errors, connection.cursor() as cursor:
        raw = cursor.cursor
        raw.execute(f"DROP TABLE IF EXISTS {quote(name)}")
        raw.execute(f"CREATE TEMP TABLE {quote(name)} ({', '.join(definition)}) ON COMMIT DROP")
        with raw.copy(f"COPY {quote(name)} ({names}) FROM STDIN (FORMAT binary)") as copy:
            copy.write(header + body + b"\xff\xff")


def prepared_cursor() -> Any:
    """A cursor for a hot statement that PostgreSQL parses and plans once per connection.

    On PostgreSQL the statement's parameters are bound by the server and the statement is
    prepared on its first execution on the connection (psycopg keeps up to 100 per
    connection): its planning (about 0.4 ms for the vote and the next item, against 0.05 ms to
    run them) is then not paid again. ``DB_PREPARED_STATEMENTS=0`` (a pooler in transaction
    mode) binds on the server without preparing. Elsewhere this is the ordinary cursor. Query
    logging (DEBUG, CaptureQueriesContext) sees its statements as any other.
    """
    if connection.vendor != "postgresql":
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        cursor = _PreparingCursor(connection.connection)
    if connection.queries_logged:
        return _PreparedDebugCursor(cursor, connection)
    return connection.make_cursor(cursor)


class _PreparingCursor(psycopg.Cursor):
    """Prepares every statement it runs (unless the connection turned preparing off)."""

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        return super().execute(query, params, **{**kwargs, "prepare": True})


class _PreparedDebugCursor(CursorDebugWrapper):
    """Logs a prepared statement with its parameters in place, as a client-side one is logged
    (psycopg does not keep the text of a statement it ran prepared)."""

    def execute(self, sql: str, params: Any = None) -> Any:
        with self.debug_sql(self.db.ops.compose_sql(sql, params)):
            return CursorWrapper.execute(self, sql, params)


def without_jit() -> Any:
    """Turn PostgreSQL's JIT off for this connection until the block ends.

    The planner's cost estimates of the aggregation's large joins pass the JIT threshold, and
    compiling them costs more than running them (a second per query, measured).
    """
    return _JitOff()


class _JitOff:
    def __enter__(self) -> None:
        self.active = connection.vendor == "postgresql"
        if self.active:
            with connection.cursor() as cursor:
                cursor.execute("SET jit = off")

    def __exit__(self, *exc: object) -> None:
        if self.active and connection.connection is not None:
            with connection.cursor() as cursor:
                cursor.execute("RESET jit")
