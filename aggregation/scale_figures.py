"""The graded and pointwise figures of each label: median grade, mean scores and soft label.

Pure Python/NumPy, no Django. The label itself always comes from the pairwise choice each vote
stands for (:mod:`annotation.scales`, then :mod:`aggregation.rules`); these figures are kept
beside it for the export:

- graded: the median of the votes' grades (the mean of the two middle grades for an even
  count) and the soft label ``{"2": n, "1": n, "0": n, "-1": n, "-2": n}`` (votes per grade,
  +2 = A much better);
- pointwise: the mean score of each response and the soft label
  ``{"a": {"1": n, ..., "5": n}, "b": {...}}`` (votes per score, per response).

Everything is computed for all items at once from per-vote arrays: ``item`` (the vote's item
index, 0..n_items-1) and the vote's grade or scores. A vote without a value (coded ``MISSING``)
is left out, and an item with no value gets None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

MISSING = -99
GRADES = (2, 1, 0, -1, -2)
SCORES = (1, 2, 3, 4, 5)


@dataclass
class ScaleFigures:
    """Per-item figures; NaN (means, median) and all-zero rows (distributions) mean none."""

    median_grade: np.ndarray  # float64, NaN without grades
    mean_score_a: np.ndarray  # float64, NaN without scores
    mean_score_b: np.ndarray
    grade_counts: np.ndarray | None  # (n_items, 5): votes per grade in GRADES order
    score_counts_a: np.ndarray | None  # (n_items, 5): votes per score 1..5
    score_counts_b: np.ndarray | None
    _lists: tuple | None = field(default=None, init=False, repr=False)

    def row(self, i: int) -> tuple[float | None, float | None, float | None, Any]:
        """(median_grade, mean_score_a, mean_score_b, soft_label) of item ``i``."""
        if self._lists is None:
            # Python lists once: reading NumPy scalars item by item costs ten times more.
            self._lists = (
                _numbers(self.median_grade),
                _numbers(self.mean_score_a),
                _numbers(self.mean_score_b),
                self.grade_counts.tolist() if self.grade_counts is not None else None,
                self.score_counts_a.tolist() if self.score_counts_a is not None else None,
                self.score_counts_b.tolist() if self.score_counts_b is not None else None,
            )
        median, mean_a, mean_b, grades, scores_a, scores_b = self._lists
        soft: Any = None
        if grades is not None and any(grades[i]):
            soft = dict(zip(GRADE_KEYS, grades[i], strict=True))
        elif scores_a is not None and any(scores_a[i]):
            soft = {
                "a": dict(zip(SCORE_KEYS, scores_a[i], strict=True)),
                "b": dict(zip(SCORE_KEYS, scores_b[i], strict=True)),
            }
        return median[i], mean_a[i], mean_b[i], soft


GRADE_KEYS = tuple(str(g) for g in GRADES)
SCORE_KEYS = tuple(str(s) for s in SCORES)


def _numbers(values: np.ndarray) -> list[float | None]:
    """Rounded floats, None for NaN."""
    rounded = np.round(values, 4)
    return [None if v != v else v for v in rounded.tolist()]


def medians(item: np.ndarray, values: np.ndarray, n_items: int) -> np.ndarray:
    """The median of ``values`` per item (mean of the two middle ones for an even count)."""
    item = np.asarray(item, dtype=np.int64)
    values = np.asarray(values, dtype=np.int64)
    valid = values != MISSING
    item, values = item[valid], values[valid]
    order = np.lexsort((values, item))
    ordered = values[order].astype(np.float64)
    counts = np.bincount(item, minlength=n_items)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    out = np.full(n_items, np.nan)
    has = counts > 0
    low = starts[has] + (counts[has] - 1) // 2
    high = starts[has] + counts[has] // 2
    out[has] = (ordered[low] + ordered[high]) / 2
    return out


def means(item: np.ndarray, values: np.ndarray, n_items: int) -> np.ndarray:
    """The mean of ``values`` per item."""
    item = np.asarray(item, dtype=np.int64)
    values = np.asarray(values, dtype=np.int64)
    valid = values != MISSING
    counts = np.bincount(item[valid], minlength=n_items)
    sums = np.bincount(item[valid], weights=values[valid], minlength=n_items)
    out = np.full(n_items, np.nan)
    np.divide(sums, counts, out=out, where=counts > 0)
    return out


def level_counts(
    item: np.ndarray, values: np.ndarray, n_items: int, levels: tuple[int, ...]
) -> np.ndarray:
    """(n_items, len(levels)): how many of each item's values equal each level."""
    item = np.asarray(item, dtype=np.int64)
    values = np.asarray(values, dtype=np.int64)
    lookup = {level: i for i, level in enumerate(levels)}
    position = np.full(len(values), -1, np.int64)
    for level, i in lookup.items():
        position[values == level] = i
    valid = position >= 0
    flat = np.bincount(item[valid] * len(levels) + position[valid], minlength=n_items * len(levels))
    return flat.reshape(n_items, len(levels))


def graded_figures(item: np.ndarray, grades: np.ndarray, n_items: int) -> ScaleFigures:
    """Median grade and grade distribution of every item."""
    none = np.full(n_items, np.nan)
    return ScaleFigures(
        median_grade=medians(item, grades, n_items),
        mean_score_a=none,
        mean_score_b=none,
        grade_counts=level_counts(item, grades, n_items, GRADES),
        score_counts_a=None,
        score_counts_b=None,
    )


def pointwise_figures(
    item: np.ndarray, score_a: np.ndarray, score_b: np.ndarray, n_items: int
) -> ScaleFigures:
    """Mean score and score distribution of each response of every item."""
    return ScaleFigures(
        median_grade=np.full(n_items, np.nan),
        mean_score_a=means(item, score_a, n_items),
        mean_score_b=means(item, score_b, n_items),
        grade_counts=None,
        score_counts_a=level_counts(item, score_a, n_items, SCORES),
        score_counts_b=level_counts(item, score_b, n_items, SCORES),
    )
