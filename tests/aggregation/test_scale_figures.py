"""The graded and pointwise figures of labels: medians, means and soft labels, vectorised."""

from __future__ import annotations

import numpy as np
import pytest

from aggregation import scale_figures as sf


def test_median_of_odd_and_even_counts_and_missing_values():
    item = np.array([0, 0, 0, 1, 1, 2, 2, 3])
    grades = np.array([2, -1, 1, 2, -2, sf.MISSING, sf.MISSING, 0])
    medians = sf.medians(item, grades, 5)
    assert medians[:2].tolist() == [1.0, 0.0]
    assert np.isnan(medians[2]) and medians[3] == 0.0 and np.isnan(medians[4])


def test_medians_match_numpy_per_item():
    rng = np.random.default_rng(7)
    item = rng.integers(0, 200, 3000)
    grades = rng.integers(-2, 3, 3000)
    got = sf.medians(item, grades, 200)
    for i in range(200):
        values = grades[item == i]
        if len(values):
            assert got[i] == np.median(values)
        else:
            assert np.isnan(got[i])


def test_means_and_level_counts():
    item = np.array([0, 0, 1, 1, 1])
    scores = np.array([5, 4, 1, 1, sf.MISSING])
    assert sf.means(item, scores, 2).tolist() == [4.5, 1.0]
    counts = sf.level_counts(item, scores, 2, sf.SCORES)
    assert counts.tolist() == [[0, 0, 0, 1, 1], [2, 0, 0, 0, 0]]


def test_graded_row_and_pointwise_row():
    graded = sf.graded_figures(np.array([0, 0, 0]), np.array([2, 1, 1]), 2)
    assert graded.row(0) == (1.0, None, None, {"2": 1, "1": 2, "0": 0, "-1": 0, "-2": 0})
    assert graded.row(1) == (None, None, None, None)
    point = sf.pointwise_figures(np.array([0, 0, 0]), np.array([5, 4, 4]), np.array([2, 2, 3]), 1)
    median, mean_a, mean_b, soft = point.row(0)
    assert median is None
    assert (mean_a, mean_b) == (pytest.approx(4.3333), pytest.approx(2.3333))
    assert soft == {
        "a": {"1": 0, "2": 0, "3": 0, "4": 2, "5": 1},
        "b": {"1": 0, "2": 2, "3": 1, "4": 0, "5": 0},
    }
