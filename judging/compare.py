"""Two judges side by side on one split: per-criterion figures and the rows where they differ.

Plain NumPy on the metric codes of :mod:`judging.metrics` (A, B, INVALID, MISSING), so it is
tested without a database. A row's verdict is the judge's combined one (its runs majority-voted,
as on the scorecard); invalid and missing are both "no valid verdict" and count as wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .metrics import INVALID, MISSING, A, B, majority_vote_codes


def covering_runs(codes: Sequence[np.ndarray], mask: np.ndarray) -> list[int]:
    """Positions of the runs with at least one prediction among the ``mask`` rows.

    A run covers a split when it predicts a row of it; only covering runs are voted there.
    """
    return [i for i, c in enumerate(codes) if (c[mask] != MISSING).any()]


def split_verdicts(codes: Sequence[np.ndarray], mask: np.ndarray) -> np.ndarray | None:
    """The judge's verdicts on all rows: its covering runs majority-voted (one run: as is)."""
    covered = [codes[i] for i in covering_runs(codes, mask)]
    if not covered:
        return None
    return covered[0] if len(covered) == 1 else majority_vote_codes(np.stack(covered))


def _valid(codes: np.ndarray) -> np.ndarray:
    """Codes with invalid and missing merged into INVALID (no valid verdict)."""
    return np.where((codes == A) | (codes == B), codes, INVALID).astype(np.int8)


@dataclass(frozen=True)
class CriterionComparison:
    """One criterion's rows: how often each judge is right, and where they differ."""

    criterion: str
    rows: int
    a_correct: int
    b_correct: int
    differ: int
    only_a: int  # rows only judge A gets right
    only_b: int

    @property
    def a_accuracy(self) -> float | None:
        return round(100 * self.a_correct / self.rows, 2) if self.rows else None

    @property
    def b_accuracy(self) -> float | None:
        return round(100 * self.b_correct / self.rows, 2) if self.rows else None

    @property
    def agreement(self) -> float | None:
        """Share of rows with the same verdict (percent)."""
        return round(100 * (self.rows - self.differ) / self.rows, 2) if self.rows else None


def compare(
    *,
    criterion: np.ndarray,
    human: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    order: Sequence[str],
) -> tuple[list[CriterionComparison], np.ndarray]:
    """Per-criterion comparison (in ``order``) and the mask of rows where the verdicts differ.

    ``human`` holds A or B codes; ``a`` and ``b`` any metric codes, aligned to the rows.
    """
    va, vb = _valid(np.asarray(a)), _valid(np.asarray(b))
    human = np.asarray(human)
    right_a, right_b = va == human, vb == human
    differ = va != vb
    out = []
    for key in order:
        rows = np.asarray(criterion) == key
        out.append(
            CriterionComparison(
                criterion=key,
                rows=int(rows.sum()),
                a_correct=int((right_a & rows).sum()),
                b_correct=int((right_b & rows).sum()),
                differ=int((differ & rows).sum()),
                only_a=int((right_a & ~right_b & rows).sum()),
                only_b=int((right_b & ~right_a & rows).sum()),
            )
        )
    return out, differ


def total(per_criterion: Sequence[CriterionComparison]) -> CriterionComparison:
    """The criteria summed (micro): all rows of the split."""
    return CriterionComparison(
        criterion="",
        rows=sum(c.rows for c in per_criterion),
        a_correct=sum(c.a_correct for c in per_criterion),
        b_correct=sum(c.b_correct for c in per_criterion),
        differ=sum(c.differ for c in per_criterion),
        only_a=sum(c.only_a for c in per_criterion),
        only_b=sum(c.only_b for c in per_criterion),
    )
