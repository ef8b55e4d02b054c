"""What changed between two dataset versions, row by row (plain Python, no Django).

Rows are matched by ``question_id``: a row only in the newer version is *added*, one only in the
older *removed*, and one in both with another preference *changed*. Counts are kept per
(split, criterion), as the version page shows them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

#: (question_id, split, criterion, preference), as frozen in a version.
Row = tuple[str, str, str, str]

ADDED, REMOVED, CHANGED = "added", "removed", "changed"


@dataclass(frozen=True)
class RowChange:
    question_id: str
    split: str
    criterion: str
    kind: str  # added | removed | changed
    before: str | None  # the older version's preference (None: not there)
    after: str | None


@dataclass
class CriterionChanges:
    split: str
    criterion: str
    added: int = 0
    removed: int = 0
    changed: int = 0
    unchanged: int = 0

    @property
    def total(self) -> int:
        return self.added + self.removed + self.changed


@dataclass
class VersionDiff:
    """Every changed row (in split, criterion, question id order) and the counts per criterion."""

    changes: list[RowChange] = field(default_factory=list)
    per_criterion: list[CriterionChanges] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(c.added for c in self.per_criterion)

    @property
    def removed(self) -> int:
        return sum(c.removed for c in self.per_criterion)

    @property
    def changed(self) -> int:
        return sum(c.changed for c in self.per_criterion)

    @property
    def is_empty(self) -> bool:
        return not self.changes


def rows_diff(before: Iterable[Row], after: Iterable[Row]) -> VersionDiff:
    """The changes from the rows ``before`` to the rows ``after``."""
    old = {r[0]: r for r in before}
    new = {r[0]: r for r in after}
    groups: dict[tuple[str, str], CriterionChanges] = {}
    changes: list[RowChange] = []

    def group(split: str, criterion: str) -> CriterionChanges:
        return groups.setdefault((split, criterion), CriterionChanges(split, criterion))

    for qid, (_, split, criterion, pref) in new.items():
        was = old.get(qid)
        if was is None:
            group(split, criterion).added += 1
            changes.append(RowChange(qid, split, criterion, ADDED, None, pref))
        elif was[3] != pref:
            group(split, criterion).changed += 1
            changes.append(RowChange(qid, split, criterion, CHANGED, was[3], pref))
        else:
            group(split, criterion).unchanged += 1
    for qid, (_, split, criterion, pref) in old.items():
        if qid not in new:
            group(split, criterion).removed += 1
            changes.append(RowChange(qid, split, criterion, REMOVED, pref, None))
    changes.sort(key=lambda c: (c.split, c.criterion, c.question_id))
    return VersionDiff(changes=changes, per_criterion=[groups[k] for k in sorted(groups)])
