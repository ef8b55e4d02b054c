"""Input file errors that name the line (or row) and the field at fault."""

from __future__ import annotations

from typing import Any

from core.text import counted


class InputFileError(ValueError):
    """A bad line in an input file; ``line`` is 1-based (a JSONL/CSV line or a Parquet row)."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None):
        self.message = message
        self.line = line
        self.field = field
        where = []
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class DatasetFileError(InputFileError):
    """A dataset file that does not follow the published Multi-Crit row format."""


class PredictionsFileError(InputFileError):
    """A predictions file that cannot be read or does not match the dataset."""


class PredictionsFileRejected(PredictionsFileError):
    """A predictions file with bad lines: ``problems`` lists every one found, in file order.

    ``line``, ``field`` and ``message`` are the first problem's, so a caller that shows one
    error shows the first; ``more`` counts the problems past the listed ones.
    """

    def __init__(self, problems: list[Any], *, more: int = 0):
        self.problems = sorted(problems, key=lambda p: (p.line is None, p.line or 0))
        self.more = more
        first = self.problems[0]
        super().__init__(first.message, line=first.line, field=first.field or None)
        if self.count > 1:
            others = self.count - 1
            self.args = (f"{self.args[0]} (and {counted(others, 'more error')})",)

    @property
    def count(self) -> int:
        return len(self.problems) + self.more
