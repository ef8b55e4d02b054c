"""The cluster bootstrap's resampling: one pure NumPy helper for agreement and judging."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from aggregation.bootstrap import resample_counts


def test_counts_are_draws_with_replacement_per_replicate():
    """Each replicate draws n clusters from n: counts sum to n and match the raw draws."""
    counts = resample_counts(np.random.default_rng(7), 9, 4)
    assert counts.shape == (4, 9) and (counts.sum(axis=1) == 9).all()
    draws = np.random.default_rng(7).integers(0, 9, size=(4, 9))
    for row, drawn in zip(counts, draws, strict=True):
        assert np.array_equal(row, np.bincount(drawn, minlength=9))


def test_no_clusters_draws_nothing():
    """An empty split gives empty replicates instead of an error."""
    assert resample_counts(np.random.default_rng(0), 0, 3).shape == (3, 0)


def test_both_users_stay_free_of_django():
    """Agreement and judging metrics import the helper without loading Django."""
    code = (
        "import sys, aggregation.agreement, judging.metrics; "
        "assert 'django' not in sys.modules, 'django imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_many_clusters_counted_row_by_row_give_the_same_counts():
    """Above the row-by-row threshold the counts still equal the raw draws of one call."""
    counts = resample_counts(np.random.default_rng(3), 5001, 3)
    draws = np.random.default_rng(3).integers(0, 5001, size=(3, 5001))
    for row, drawn in zip(counts, draws, strict=True):
        assert np.array_equal(row, np.bincount(drawn, minlength=5001))
    one_by_one = np.random.default_rng(3)
    rows = np.concatenate([resample_counts(one_by_one, 5001, 1) for _ in range(3)])
    assert np.array_equal(rows, counts)
