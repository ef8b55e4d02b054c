"""A floor for a job that must store rows: the same rows written with COPY into a copy of the
table they go to, with its indexes and checks and without them (no triggers either way)."""

from __future__ import annotations

import statistics
import time
from typing import Any


def copy_in_floor(
    cursor: Any, table: str, select: str, rounds: int = 3
) -> tuple[int, float, float]:
    """Rows of ``select`` (on ``table``'s columns) written into ``LIKE table`` with a binary COPY,
    ``rounds`` times each way: (rows, median seconds with the indexes and checks, without).

    ``cursor``: a psycopg cursor; the scratch table is dropped at the end.
    """
    sink = bytearray()
    with cursor.copy(f"COPY ({select}) TO STDOUT (FORMAT binary)") as copy:
        for block in copy:
            sink += block
    data = bytes(sink)
    seconds: dict[str, list[float]] = {"INCLUDING ALL": [], "": []}
    for _ in range(rounds):
        for like in seconds:
            cursor.execute("DROP TABLE IF EXISTS bench_copy_floor")
            cursor.execute(f"CREATE TABLE bench_copy_floor (LIKE {table} {like})")
            started = time.perf_counter()
            with cursor.copy("COPY bench_copy_floor FROM STDIN (FORMAT binary)") as copy:
                copy.write(data)
            seconds[like].append(time.perf_counter() - started)
    cursor.execute("SELECT COUNT(*) FROM bench_copy_floor")
    rows = cursor.fetchone()[0]
    cursor.execute("DROP TABLE bench_copy_floor")
    return rows, statistics.median(seconds["INCLUDING ALL"]), statistics.median(seconds[""])
