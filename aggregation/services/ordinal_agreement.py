"""Ordinal agreement of a graded or pointwise project's split, for its agreement snapshot.

The aggregation job calls :func:`ordinal_snapshot_figures` once per split with the votes that
count (the same queryset its labels come from) and stores the result as the snapshot's
``ordinal`` entry; a pairwise project gets None. What is rated:

- graded: each vote's grade (-2 .. +2, canonical A/B terms) on its (sample, criterion);
- pointwise: each response's score (1-5) as an item of its own (``scores``: (sample,
  criterion, response)), and the score difference ``score_a - score_b`` (-4 .. +4) on the
  (sample, criterion) (``differences``).

The statistics and their sample-cluster bootstrap are :mod:`aggregation.ordinal`'s.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from annotation import scales
from annotation.models import Project
from core.db import read_int_columns

from ..ordinal import ordinal_figures_from_votes

GRADE_VALUES = list(range(scales.GRADE_MIN, scales.GRADE_MAX + 1))
SCORE_VALUES = list(range(scales.SCORE_MIN, scales.SCORE_MAX + 1))
DIFFERENCE_VALUES = list(
    range(scales.SCORE_MIN - scales.SCORE_MAX, scales.SCORE_MAX - scales.SCORE_MIN + 1)
)


def ordinal_snapshot_figures(
    *, project: Project, votes: Any, **options: Any
) -> dict[str, Any] | None:
    """The ordinal figures of ``votes`` (a Vote queryset) for the project's scale, or None.

    ``options`` go to :func:`aggregation.ordinal.ordinal_figures` (``n_boot``, ``seed``,
    ``min_overlap``).
    """
    scale = project.label_scale
    if scale == scales.GRADED:
        cols = read_int_columns(
            votes.filter(grade__isnull=False),
            ["annotator_id", "sample_id", "criterion_id", "grade"],
        )
        item = _item_key(cols["sample_id"], cols["criterion_id"])
        return {
            "scale": scale,
            "grades": ordinal_figures_from_votes(
                annotator=cols["annotator_id"],
                item=item,
                sample=cols["sample_id"],
                value=cols["grade"],
                values=GRADE_VALUES,
                scale="graded",
                **options,
            ),
        }
    if scale == scales.POINTWISE:
        cols = read_int_columns(
            votes.filter(score_a__isnull=False, score_b__isnull=False),
            ["annotator_id", "sample_id", "criterion_id", "score_a", "score_b"],
        )
        item = _item_key(cols["sample_id"], cols["criterion_id"])
        both = np.concatenate
        return {
            "scale": scale,
            "scores": ordinal_figures_from_votes(
                annotator=both([cols["annotator_id"]] * 2),
                item=both([item * 2, item * 2 + 1]),
                sample=both([cols["sample_id"]] * 2),
                value=both([cols["score_a"], cols["score_b"]]),
                values=SCORE_VALUES,
                scale="pointwise scores",
                **options,
            ),
            "differences": ordinal_figures_from_votes(
                annotator=cols["annotator_id"],
                item=item,
                sample=cols["sample_id"],
                value=cols["score_a"] - cols["score_b"],
                values=DIFFERENCE_VALUES,
                scale="pointwise score differences",
                **options,
            ),
        }
    return None


def ordinal_inputs_digest(*, project: Project, votes: Any) -> str | None:
    """A digest of the grades or scores of ``votes`` (None for a pairwise project).

    The agreement snapshot is recomputed when its inputs change; a revised grade (A>B to A≫B)
    leaves the pairwise choice as it was, so the grades and scores enter the inputs too.
    """
    fields = {
        scales.GRADED: ["id", "grade"],
        scales.POINTWISE: ["id", "score_a", "score_b"],
    }.get(project.label_scale)
    if fields is None:
        return None
    present = votes.exclude(**{f"{fields[1]}__isnull": True}).order_by("id")
    cols = read_int_columns(present, fields)
    digest = hashlib.sha256(project.label_scale.encode())
    for name in fields:
        digest.update(np.ascontiguousarray(cols[name], dtype=np.int64).tobytes())
    return digest.hexdigest()


def _item_key(sample: np.ndarray, criterion: np.ndarray) -> np.ndarray:
    """One integer per (sample, criterion)."""
    width = int(criterion.max()) + 1 if len(criterion) else 1
    return sample.astype(np.int64) * width + criterion.astype(np.int64)
