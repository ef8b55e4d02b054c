"""What a rejected import reports: every problem with its line (or row) and field."""

from __future__ import annotations

from dataclasses import dataclass

from core.text import counted

# All problems are listed; past this many the rest are only counted, so that a file of garbage
# cannot fill the memory with messages.
MAX_PROBLEMS = 10_000


@dataclass(frozen=True)
class Problem:
    line: int | None  # 1-based line (JSONL) or row (Parquet); None: the file as a whole
    field: str
    message: str
    unit: str = "line"

    @property
    def where(self) -> str:
        return f"{self.unit} {self.line}" if self.line is not None else "file"

    def __str__(self) -> str:
        return f"{self.where}, {self.field}: {self.message}"

    def as_dict(self) -> dict:
        return {"line": self.line, "unit": self.unit, "field": self.field, "message": self.message}


class ImportRejected(Exception):
    """The file is invalid; nothing was written. ``problems`` lists every error found."""

    def __init__(self, problems: list[Problem], *, more: int = 0) -> None:
        self.problems = list(problems)
        self.more = more
        count = len(self.problems) + more
        lines = [str(p) for p in self.problems[:50]]
        if count > len(lines):
            lines.append(f"... and {count - len(lines)} more")
        super().__init__(
            f"{counted(count, 'error')} in the file, nothing was imported:\n" + "\n".join(lines)
        )

    @property
    def count(self) -> int:
        return len(self.problems) + self.more


class ProblemList:
    """Collects problems up to :data:`MAX_PROBLEMS` and counts the rest."""

    def __init__(self) -> None:
        self.items: list[Problem] = []
        self.more = 0

    def add(self, problem: Problem) -> None:
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(problem)
        else:
            self.more += 1

    def extend(self, problems: list[Problem]) -> None:
        for problem in problems:
            self.add(problem)

    def __bool__(self) -> bool:
        return bool(self.items) or bool(self.more)

    def raise_if_any(self) -> None:
        """Raise with the problems in file order (checks against the database come in batches)."""
        if self:
            ordered = sorted(self.items, key=lambda p: (p.line is not None, p.line or 0))
            raise ImportRejected(ordered, more=self.more)
