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
from django.core.exceptions import EmptyResultSet
from django.db import connection, models

BATCH = 5000


class JsonText(str):
    """JSON already serialised: written verbatim by COPY, parsed for other databases."""


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
        names = ", ".join(connection.ops.quote_name(f.column) for f in columns)
        sql = f"COPY {connection.ops.quote_name(model._meta.db_table)} ({names}) FROM STDIN"
        # wrap_database_errors: the driver's errors reach callers as Django's (IntegrityError...)
        with (
            connection.wrap_database_errors,
            connection.cursor() as cursor,
            cursor.cursor.copy(sql) as copy,
        ):
            for row in rows:
                copy.write_row([_copy_value(f, v) for f, v in zip(columns, row, strict=True)])
                count += 1
        return count
    pairs = list(zip(_attnames(model, fields), columns, strict=True))
    iterator = iter(rows)
    while batch := list(islice(iterator, BATCH)):
        model.objects.bulk_create(
            model(**{a: _python_value(f, v) for (a, f), v in zip(pairs, row, strict=True)})
            for row in batch
        )
        count += len(batch)
    return count


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

    PostgreSQL streams them with ``COPY ... TO STDOUT (FORMAT binary)``: every row has the same
    width, so NumPy reads the whole stream as one structured array without a Python object per
    value. Elsewhere the rows come through ``values_list``. NULLs are not allowed.
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
    casts = ", ".join(f"c{i}::int8" for i in range(len(fields)))
    names = ", ".join(f"c{i}" for i in range(len(fields)))
    sql = f"COPY (SELECT {casts} FROM ({inner}) AS q ({names})) TO STDOUT (FORMAT binary)"
    buffer = bytearray()
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.cursor.copy(sql, params) as copy,
    ):
        for block in copy:
            buffer += block
    return _parse_binary_int8(bytes(buffer), fields)


def _parse_binary_int8(data: bytes, fields: Sequence[str]) -> dict[str, np.ndarray]:
    if not data.startswith(_BINARY_SIGNATURE):
        raise ValueError("not a PostgreSQL binary COPY stream")
    extension = int.from_bytes(data[15:19], "big")
    body = data[19 + extension : -2]  # the trailer is the field count -1
    layout = [("n", ">i2")]
    for i in range(len(fields)):
        layout += [(f"l{i}", ">i4"), (f"v{i}", ">i8")]
    rows = np.frombuffer(body, dtype=np.dtype(layout))
    for i in range(len(fields)):
        if len(rows) and (rows[f"l{i}"] != 8).any():
            raise ValueError(f"{fields[i]} holds NULLs or is not an integer column")
    return {f: rows[f"v{i}"].astype(np.int64) for i, f in enumerate(fields)}
