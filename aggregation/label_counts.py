"""A split's labels as arrays, and the dashboard's label counts from them (pure NumPy).

The same figures as ``aggregation.selectors.dashboard.label_figures_compute`` counts in SQL
(rows per split, criterion, outcome and preference; per split the samples with labels, with a
kept label and with kept labels on both sides), made from the labels the aggregation job has
just written, so that storing them needs no pass over the label table.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import rules


class LabelArrays(NamedTuple):
    """A split's labels as the aggregation job wrote them, one entry per label.

    ``outcome`` and ``preference`` hold ``rules`` codes (OUTCOMES / PREFERENCES), ``provenance``
    positions in ``rules.PROVENANCES`` (None: every label human).
    """

    sample: np.ndarray
    criterion: np.ndarray
    outcome: np.ndarray
    preference: np.ndarray
    provenance: np.ndarray | None


def label_figures(splits: dict[str, LabelArrays], include_seeds: bool) -> dict[str, Any]:
    """The figures as DashboardSnapshot stores them, from each split's labels."""
    rows: list[dict[str, Any]] = []
    per_sample: dict[str, dict[str, int]] = {}
    kept_codes = np.array(rules.KEPT)
    for split, labels in splits.items():
        if not len(labels.sample):
            continue
        outcome = labels.outcome.astype(np.int64)
        preference = labels.preference.astype(np.int64) - rules.PREF_NONE
        n_pref = len(rules.PREFERENCES)
        key = (labels.criterion * len(rules.OUTCOMES) + outcome) * n_pref + preference
        keys, counts = np.unique(key, return_counts=True)
        for k, n in zip(keys.tolist(), counts.tolist(), strict=True):
            rest, pref = divmod(k, n_pref)
            crit_id, out = divmod(rest, len(rules.OUTCOMES))
            rows.append(
                {
                    "sample__split": split,
                    "criterion_id": crit_id,
                    "outcome": rules.OUTCOMES[out],
                    "preference": rules.PREFERENCES[pref + rules.PREF_NONE],
                    "n": n,
                }
            )
        kept = np.isin(outcome, kept_codes)
        samples, position = np.unique(labels.sample, return_inverse=True)
        side_a = np.bincount(position[kept & (preference == rules.PREF_A - rules.PREF_NONE)])
        side_b = np.bincount(position[kept & (preference == rules.PREF_B - rules.PREF_NONE)])
        n_a = np.zeros(len(samples), np.int64)
        n_b = np.zeros(len(samples), np.int64)
        n_a[: len(side_a)] = side_a
        n_b[: len(side_b)] = side_b
        per_sample[split] = {
            "labelled": len(samples),
            "kept": int(((n_a + n_b) > 0).sum()),
            "conflict": int(((n_a > 0) & (n_b > 0)).sum()),
        }
    return {"include_seeds": include_seeds, "rows": rows, "per_sample": per_sample}
