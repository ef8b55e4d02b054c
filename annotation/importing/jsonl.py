"""Reader of our JSONL sample format: one JSON object (one sample) per line, streamed."""

from __future__ import annotations

from collections.abc import Iterator

from .candidates import Candidate
from .errors import Problem
from .limits import JsonInputError, bounded_lines, json_loads, line_too_long
from .sources import ImportSource


def json_line(
    raw: bytes | None, line: int, unit: str = "line"
) -> tuple[dict | None, Problem | None]:
    """Parse one line (None: over the line limit) into a JSON object or a problem naming it."""
    if raw is None:
        return None, Problem(line, "json", line_too_long(), unit)
    try:
        obj = json_loads(raw)
    except JsonInputError as exc:
        return None, Problem(line, "json", str(exc), unit)
    if not isinstance(obj, dict):
        return None, Problem(
            line, "json", f"expected a JSON object, got {type(obj).__name__}", unit
        )
    return obj, None


def lines_count(source: ImportSource) -> int:
    """Non-empty lines, counted without parsing (for the progress total)."""
    count = 0
    with source.open_data() as handle:
        for _, raw in bounded_lines(handle):
            if raw is None or raw.strip():
                count += 1
    return count


def jsonl_candidates(source: ImportSource) -> Iterator[Candidate]:
    with source.open_data() as handle:
        for line, raw in bounded_lines(handle):
            if raw is not None and not raw.strip():
                continue
            obj, problem = json_line(raw, line)
            if problem is not None:
                yield Candidate(line=line, data=None, problems=[problem])
            else:
                yield Candidate(line=line, data=obj)
