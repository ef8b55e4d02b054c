"""Ordinal agreement of a graded or pointwise project's split, for its agreement snapshot.

The aggregation job calls :func:`ordinal_snapshot_figures` once per split with the vote arrays
its labels come from (read once, with the grades or scores) and stores the result as the snapshot's
``ordinal`` entry; a pairwise project gets None. What is rated:

- graded: each vote's grade (-2 .. +2, canonical A/B terms) on its (sample, criterion);
- pointwise: each response's score (1-5) as an item of its own (``scores``: (sample,
  criterion, response)), and the score difference ``score_a - score_b`` (-4 .. +4) on the
  (sample, criterion) (``differences``).

The statistics and their sample-cluster bootstrap are :mod:`aggregation.ordinal`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotation import scales

from ..ordinal import ordinal_figures_from_votes
from ..scale_figures import MISSING

GRADE_VALUES = list(range(scales.GRADE_MIN, scales.GRADE_MAX + 1))
SCORE_VALUES = list(range(scales.SCORE_MIN, scales.SCORE_MAX + 1))
DIFFERENCE_VALUES = list(
    range(scales.SCORE_MIN - scales.SCORE_MAX, scales.SCORE_MAX - scales.SCORE_MIN + 1)
)


def ordinal_snapshot_figures(
    *, scale: str, votes: dict[str, np.ndarray], **options: Any
) -> dict[str, Any] | None:
    """The ordinal figures of a split's votes for the project's ``scale``, or None (pairwise).

    ``votes`` are the arrays the aggregation job read (``ann``, ``sample``, ``crit`` and the
    scale's ``v_grade`` or ``v_score_a`` / ``v_score_b``, with scale_figures.MISSING where a vote
    has none); ``options`` go to :func:`aggregation.ordinal.ordinal_figures` (``n_boot``,
    ``seed``, ``min_overlap``).
    """
    if scale == scales.GRADED:
        keep = votes["v_grade"] != MISSING
        ann, sample, crit = (votes[c][keep] for c in ("ann", "sample", "crit"))
        return {
            "scale": scale,
            "grades": ordinal_figures_from_votes(
                annotator=ann,
                item=_item_key(sample, crit),
                sample=sample,
                value=votes["v_grade"][keep],
                values=GRADE_VALUES,
                scale="graded",
                **options,
            ),
        }
    if scale == scales.POINTWISE:
        keep = (votes["v_score_a"] != MISSING) & (votes["v_score_b"] != MISSING)
        ann, sample, crit = (votes[c][keep] for c in ("ann", "sample", "crit"))
        score_a, score_b = votes["v_score_a"][keep], votes["v_score_b"][keep]
        item = _item_key(sample, crit)
        both = np.concatenate
        return {
            "scale": scale,
            "scores": ordinal_figures_from_votes(
                annotator=both([ann] * 2),
                item=both([item * 2, item * 2 + 1]),
                sample=both([sample] * 2),
                value=both([score_a, score_b]),
                values=SCORE_VALUES,
                scale="pointwise scores",
                **options,
            ),
            "differences": ordinal_figures_from_votes(
                annotator=ann,
                item=item,
                sample=sample,
                value=score_a - score_b,
                values=DIFFERENCE_VALUES,
                scale="pointwise score differences",
                **options,
            ),
        }
    return None


def _item_key(sample: np.ndarray, criterion: np.ndarray) -> np.ndarray:
    """One integer per (sample, criterion)."""
    width = int(criterion.max()) + 1 if len(criterion) else 1
    return sample.astype(np.int64) * width + criterion.astype(np.int64)
