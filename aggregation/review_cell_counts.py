"""The review queue's cells counted from label arrays (pure NumPy, no Django).

The same cells as the SQL count in ``aggregation.selectors.review_cells``: per sample holding a
kept label, the kinds and provenances of its kept labels as bit masks, whether any of its labels
is not kept unanimously and whether it is reviewed; counted once per sample (criterion None) and
once per kept label (under its criterion, with that label's own kind and provenance bits). The
aggregation job counts them from the labels it has just written instead of reading them back.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import rules

# One bit per kept outcome and per provenance: the cells' masks (the SQL count uses the same).
KIND_BITS = {rules.OUTCOMES[rules.KEPT_UNANIMOUS]: 1, rules.OUTCOMES[rules.KEPT_MAJORITY_TIE]: 2}
PROVENANCE_BITS = {value: 1 << i for i, value in enumerate(rules.PROVENANCES)}


class Cell(NamedTuple):
    criterion_id: int | None
    kinds: int
    provenances: int
    disagreement: bool
    reviewed: bool
    n: int


def _counted(keys: np.ndarray) -> tuple[list[int], list[int]]:
    """The distinct values of ``keys`` and how often each occurs."""
    values, counts = np.unique(keys, return_counts=True)
    return values.tolist(), counts.tolist()


def _cell(criterion: int | None, flags: int, shift: int, n: int) -> Cell:
    provenances = (flags >> 2) & ((1 << shift) - 1)
    return Cell(criterion, flags >> (2 + shift), provenances, bool(flags & 2), bool(flags & 1), n)


def cells_from_labels(
    sample: np.ndarray,
    criterion: np.ndarray,
    outcome: np.ndarray,
    provenance: np.ndarray | None,
    reviewed_samples: np.ndarray,
) -> list[Cell]:
    """The cells of a split whose labels are these arrays (one entry per label).

    ``outcome`` holds ``rules`` outcome codes, ``provenance`` ``rules.PROVENANCES`` positions
    (None: every label human); ``reviewed_samples`` the ids of the split's reviewed samples.
    """
    sample = np.asarray(sample, np.int64)
    outcome = np.asarray(outcome, np.int64)
    codes = (
        np.zeros(len(sample), np.int64) if provenance is None else np.asarray(provenance, np.int64)
    )
    samples, at = np.unique(sample, return_inverse=True)
    kind_bit = np.zeros(len(sample), np.int64)
    kind_bit[outcome == rules.KEPT_UNANIMOUS] = 1
    kind_bit[outcome == rules.KEPT_MAJORITY_TIE] = 2
    kept = kind_bit > 0
    provenance_bit = np.where(kept, np.left_shift(1, codes), 0)
    n = len(samples)

    def any_per_sample(flags: np.ndarray) -> np.ndarray:
        return np.bincount(at, weights=flags, minlength=n) > 0

    kinds = any_per_sample(kind_bit == 1) * 1 + any_per_sample(kind_bit == 2) * 2
    provenances = np.zeros(n, np.int64)
    for bit in PROVENANCE_BITS.values():
        provenances += any_per_sample(provenance_bit == bit) * bit
    disagreement = any_per_sample(outcome != rules.KEPT_UNANIMOUS).astype(np.int64)
    reviewed = np.isin(samples, np.asarray(reviewed_samples, np.int64)).astype(np.int64)
    # One integer per cell: kinds (2 bits), provenances (one bit each), disagreement, reviewed.
    shift = len(PROVENANCE_BITS)
    flags = (kinds << shift | provenances) << 2 | disagreement << 1 | reviewed
    cells: list[Cell] = []
    member = kinds > 0
    for key, count in zip(*_counted(flags[member]), strict=True):
        cells.append(_cell(None, key, shift, count))
    label_at = at[kept]
    label_flags = (kind_bit[kept] << shift | provenance_bit[kept]) << 2 | flags[label_at] & 3
    width = 2 + shift + 2
    label_keys = np.asarray(criterion, np.int64)[kept] << width | label_flags
    for key, count in zip(*_counted(label_keys), strict=True):
        cells.append(_cell(key >> width, key & ((1 << width) - 1), shift, count))
    return cells
