"""Reader of our JSONL sample format: one JSON object (one sample) per line, streamed."""

from __future__ import annotations

import json
from collections.abc import Iterator

from .candidates import Candidate
from .errors import Problem
from .sources import ImportSource


def json_line(raw: bytes, line: int, unit: str = "line") -> tuple[dict | None, Problem | None]:
    """Parse one line into a JSON object or a problem naming the line."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, Problem(line, "json", "the line is not valid UTF-8", unit)
    except json.JSONDecodeError as exc:
        return None, Problem(line, "json", f"invalid JSON: {exc.msg} (column {exc.colno})", unit)
    if not isinstance(obj, dict):
        return None, Problem(
            line, "json", f"expected a JSON object, got {type(obj).__name__}", unit
        )
    return obj, None


def lines_count(source: ImportSource) -> int:
    """Non-empty lines, counted without parsing (for the progress total)."""
    count = 0
    with source.open_data() as handle:
        for raw in handle:
            if raw.strip():
                count += 1
    return count


def jsonl_candidates(source: ImportSource) -> Iterator[Candidate]:
    with source.open_data() as handle:
        for line, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            obj, problem = json_line(raw, line)
            if problem is not None:
                yield Candidate(line=line, data=None, problems=[problem])
            else:
                yield Candidate(line=line, data=obj)
