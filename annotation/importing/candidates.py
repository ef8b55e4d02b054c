"""A sample as a reader hands it over: where it came from, its fields, and read problems."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import Problem


@dataclass
class Candidate:
    line: int  # first line (JSONL) or row (Multi-Crit rows) of the sample
    data: dict[str, Any] | None  # our field names; None when the line could not be read
    problems: list[Problem] = field(default_factory=list)
    unit: str = "line"
    names: dict[str, str] = field(default_factory=dict)  # our field name -> the file's name
    source: int = 0  # which of the import's files it came from (its images resolve there)
