"""How consistent a judge is with itself across runs, next to the annotators (NumPy, no Django).

A judge's runs on the same rows are raters of those rows: ``run_codes`` is a run x row matrix of
the scorecard's prediction codes (``judging.metrics``: A, B, invalid, ``-1`` missing).

- **Self-agreement** is Fleiss' κ of the runs (``aggregation.agreement.fleiss_kappa``, the
  statistic the aggregation reports for the annotators, so the two are read on one scale): the
  categories are A, B and invalid (an unusable answer is an answer too: two runs both invalid
  agree); rows some run did not answer are left out (``items_excluded``), as Fleiss' chance model
  needs the same number of ratings on every row.
- **Pairwise agreement** is the share of pairs of runs giving the same verdict on a row, over the
  rows every run answered (Fleiss' observed agreement, in percent).
- **Position consistency** (the two response orders agree) is the runner's own figure
  (``judging.runner.figures``), read from the run's stored figures, never recomputed here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aggregation.agreement import fleiss_kappa
from judging.metrics import INVALID, MISSING, A, B

#: Prediction code -> Fleiss category: A, B, invalid.
_CATEGORY = {A: 0, B: 1, INVALID: 2}


def run_categories(run_codes: np.ndarray) -> np.ndarray:
    """The run x row matrix as Fleiss categories (0 A, 1 B, 2 invalid; -1 missing)."""
    codes = np.asarray(run_codes, dtype=np.int64)
    out = np.full(codes.shape, MISSING, dtype=np.int64)
    for code, category in _CATEGORY.items():
        out[codes == code] = category
    return out


def pairwise_agreement(categories: np.ndarray) -> dict[str, Any]:
    """The share (percent) of agreeing run pairs over the rows every run answered."""
    cats = np.asarray(categories, dtype=np.int64)
    m = cats.shape[0]
    complete = (cats >= 0).all(axis=0)
    if m < 2 or not complete.any():
        return {"value": None, "items": int(complete.sum())}
    kept = cats[:, complete]
    counts = np.stack([(kept == c).sum(axis=0) for c in range(3)], axis=1)
    agreeing = float((counts * (counts - 1)).sum()) / 2
    pairs = kept.shape[1] * m * (m - 1) / 2
    return {"value": 100.0 * agreeing / pairs, "items": int(kept.shape[1])}


def self_agreement(run_codes: np.ndarray) -> dict[str, Any]:
    """Fleiss' κ of the judge's runs and their pairwise agreement on one set of rows."""
    cats = run_categories(run_codes)
    runs = int(cats.shape[0])
    pairwise = pairwise_agreement(cats)
    if runs < 2:
        return {
            "value": None,
            "undefined_reason": "one run: run the judge again on the same rows",
            "runs": runs,
            "pairwise": None,
            "items": 0,
        }
    kappa = fleiss_kappa(cats, m=runs, n_categories=3)
    return {
        "value": kappa["value"],
        "undefined_reason": kappa.get("undefined_reason"),
        "runs": runs,
        "pairwise": pairwise["value"],
        "items": int(kappa.get("items", pairwise["items"])),
    }
