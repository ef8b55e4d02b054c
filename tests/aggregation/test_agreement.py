"""Agreement statistics against published worked examples and reference libraries."""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from aggregation import agreement

TOL = 1e-9

# Fleiss (1971), Table 1: 30 patients, 6 psychiatrists each, 5 diagnoses
# (1 depression, 2 personality disorder, 3 schizophrenia, 4 neurosis, 5 other).
FLEISS_1971 = [
    (4, 4, 4, 4, 4, 4), (2, 2, 2, 5, 5, 5), (2, 3, 3, 3, 3, 5), (5, 5, 5, 5, 5, 5),
    (2, 2, 2, 4, 4, 4), (1, 1, 3, 3, 3, 3), (3, 3, 3, 3, 5, 5), (1, 1, 3, 3, 3, 4),
    (1, 1, 4, 4, 4, 4), (5, 5, 5, 5, 5, 5), (1, 4, 4, 4, 4, 4), (1, 2, 4, 4, 4, 4),
    (2, 2, 2, 3, 3, 3), (1, 4, 4, 4, 4, 4), (2, 2, 4, 4, 4, 5), (3, 3, 3, 3, 3, 5),
    (1, 1, 1, 4, 5, 5), (1, 1, 1, 1, 1, 2), (2, 2, 4, 4, 4, 4), (1, 3, 3, 5, 5, 5),
    (5, 5, 5, 5, 5, 5), (2, 4, 4, 4, 4, 4), (2, 2, 4, 5, 5, 5), (1, 1, 4, 4, 4, 4),
    (1, 4, 4, 4, 4, 5), (2, 2, 2, 2, 2, 4), (1, 1, 1, 1, 5, 5), (2, 2, 4, 4, 4, 4),
    (1, 3, 3, 3, 3, 3), (5, 5, 5, 5, 5, 5),
]  # fmt: skip

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: 4 observers,
# 12 units, values 1..5, "." = missing. Nominal alpha = 0.743.
KRIPPENDORFF_2011 = """
1 2 3 3 2 1 4 1 2 . . .
1 2 3 3 2 2 4 1 2 5 . 3
. 3 3 3 2 3 4 2 2 5 1 .
1 2 3 3 2 4 4 1 2 5 1 .
"""


def _kripp_matrix() -> np.ndarray:
    rows = [line.split() for line in KRIPPENDORFF_2011.strip().splitlines()]
    return np.array([[int(v) - 1 if v != "." else -1 for v in row] for row in rows])


def test_fleiss_1971_worked_example():
    matrix = np.array(FLEISS_1971).T - 1  # raters x patients, codes 0..4
    stat = agreement.fleiss_kappa(matrix, n_categories=5)
    assert round(stat["value"], 3) == 0.430
    assert round(stat["observed"], 4) == 0.5556  # P-bar in the paper
    assert round(stat["expected"], 4) == 0.2199  # P-bar-e
    assert stat["items"] == 30 and stat["items_excluded"] == 0
    assert stat["ratings_per_item"] == 6


def test_krippendorff_2011_nominal_example_with_missing_data():
    stat = agreement.krippendorff_alpha(_kripp_matrix(), n_categories=5)
    assert round(stat["value"], 3) == 0.743
    # Unit 12 has a single value and is not pairable; 40 pairable values remain.
    assert stat["items"] == 11 and stat["items_excluded"] == 1
    assert stat["pairable_values"] == 40
    assert stat["observed_disagreement"] == pytest.approx(0.2)


def _random_matrix(seed: int, raters: int = 9, items: int = 600, missing: float = 0.5):
    rng = np.random.default_rng(seed)
    truth = rng.choice(3, size=items, p=[0.45, 0.45, 0.1])
    noise = rng.random((raters, items)) < 0.35
    matrix = np.where(noise, rng.integers(0, 3, size=(raters, items)), truth[None, :])
    matrix[rng.random((raters, items)) < missing] = -1
    return matrix


def _protocol_matrix(seed: int, samples: int = 120, criteria: int = 5, raters: int = 9):
    """Every sample rated by the same 3 of 9 raters on all its criteria, a few votes missing."""
    rng = np.random.default_rng(seed)
    n = samples * criteria
    chosen = np.argsort(rng.random((samples, raters)), axis=1)[:, :3]
    matrix = np.full((raters, n), -1)
    truth = rng.choice(3, size=n, p=[0.5, 0.42, 0.08])
    for item in range(n):
        for r in chosen[item // criteria]:
            matrix[r, item] = truth[item] if rng.random() < 0.8 else rng.integers(0, 3)
    drop = rng.random(n) < 0.05
    matrix[chosen[np.nonzero(drop)[0] // criteria, 0], np.nonzero(drop)[0]] = -1
    clusters = np.arange(n) // criteria
    groups = np.arange(n) % criteria
    return matrix, clusters, groups


def _ref_cohen(a: np.ndarray, b: np.ndarray) -> float:
    shared = (a >= 0) & (b >= 0)
    return cohen_kappa_score(a[shared], b[shared])


def _ref_alpha(matrix: np.ndarray) -> float:
    data = np.where(matrix < 0, np.nan, matrix).astype(float)
    return krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")


def _ref_fleiss(matrix: np.ndarray, m: int) -> float:
    counts = np.stack([(matrix == c).sum(axis=0) for c in range(3)], axis=1)
    return sm_fleiss_kappa(counts[counts.sum(axis=1) == m])


def _ref_mean_pairwise(matrix: np.ndarray, min_overlap: int, raters=None):
    values, weights = [], []
    n = matrix.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            if raters is not None and i not in raters and j not in raters:
                continue
            shared = (matrix[i] >= 0) & (matrix[j] >= 0)
            if shared.sum() >= min_overlap:
                kappa = _ref_cohen(matrix[i], matrix[j])
                if np.isnan(kappa):  # a pair with a single category: skipped, as documented
                    continue
                values.append(kappa)
                weights.append(shared.sum())
    return np.mean(values), np.average(values, weights=weights), len(values)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_cohen_matches_scikit_learn(seed):
    matrix = _random_matrix(seed, raters=2, missing=0.3)
    stat = agreement.cohen_kappa(matrix[0], matrix[1])
    assert abs(stat["value"] - _ref_cohen(matrix[0], matrix[1])) < TOL
    assert stat["items"] == int(((matrix[0] >= 0) & (matrix[1] >= 0)).sum())


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_mean_pairwise_cohen_matches_scikit_learn(seed):
    matrix = _random_matrix(seed)
    stat = agreement.mean_pairwise_cohen(matrix, min_overlap=140)
    mean, weighted, used = _ref_mean_pairwise(matrix, 140)
    assert abs(stat["value"] - mean) < TOL
    assert abs(stat["weighted_value"] - weighted) < TOL
    assert stat["pairs_used"] == used
    assert stat["pairs_used"] + stat["pairs_skipped"] == 36
    assert stat["smallest_overlap"] >= 140 and stat["min_overlap"] == 140


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_fleiss_matches_statsmodels(seed):
    matrix, _, _ = _protocol_matrix(seed)
    stat = agreement.fleiss_kappa(matrix, m=3)
    assert abs(stat["value"] - _ref_fleiss(matrix, 3)) < TOL
    two = int(((matrix >= 0).sum(axis=0) == 2).sum())
    assert two > 0 and stat["items_excluded"] == two


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_alpha_matches_krippendorff_package(seed):
    matrix = _random_matrix(seed, missing=0.6)
    assert abs(agreement.krippendorff_alpha(matrix)["value"] - _ref_alpha(matrix)) < TOL


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_figures_per_criterion_and_per_annotator_match_the_references(seed):
    matrix, clusters, groups = _protocol_matrix(seed)
    names = [f"ann{i}" for i in range(9)]
    fig = agreement.agreement_figures(
        matrix,
        clusters=clusters,
        groups=groups,
        group_names=list("abcde"),
        rater_names=names,
        m=3,
        min_overlap=10,
        n_boot=0,
    )
    assert abs(fig["fleiss"]["value"] - _ref_fleiss(matrix, 3)) < TOL
    assert abs(fig["alpha"]["value"] - _ref_alpha(matrix)) < TOL
    assert abs(fig["cohen"]["value"] - _ref_mean_pairwise(matrix, 10)[0]) < TOL
    for g, key in enumerate("abcde"):
        sub = matrix[:, groups == g]
        figs = fig["per_criterion"][key]
        assert figs["items"] == sub.shape[1]
        assert abs(figs["fleiss"]["value"] - _ref_fleiss(sub, 3)) < TOL
        assert abs(figs["alpha"]["value"] - _ref_alpha(sub)) < TOL
        mean, weighted, _ = _ref_mean_pairwise(sub, 10)
        assert abs(figs["cohen"]["value"] - mean) < TOL
        assert abs(figs["cohen"]["weighted_value"] - weighted) < TOL
    for a, name in enumerate(names):
        mean, weighted, used = _ref_mean_pairwise(matrix, 10, raters={a})
        stat = fig["per_annotator"][name]["cohen_vs_others"]
        assert abs(stat["value"] - mean) < TOL and stat["pairs_used"] == used
        assert fig["per_annotator"][name]["items"] == int((matrix[a] >= 0).sum())
    pairwise = fig["pairwise"]
    assert pairwise["annotators"] == names
    assert abs(pairwise["kappa"][2][5] - _ref_cohen(matrix[2], matrix[5])) < TOL
    assert pairwise["kappa"][5][2] == pairwise["kappa"][2][5]
    assert pairwise["kappa"][4][4] is None
    assert pairwise["overlap"][1][3] == int(((matrix[1] >= 0) & (matrix[3] >= 0)).sum())
    assert pairwise["overlap"][0][0] == int((matrix[0] >= 0).sum())


def test_undefined_when_a_single_category_everywhere():
    matrix = np.zeros((3, 10), dtype=int)
    fig = agreement.agreement_figures(matrix, min_overlap=2, n_boot=50)
    for name in ("cohen", "fleiss", "alpha"):
        assert fig[name]["value"] is None, name
        assert fig[name]["ci"] is None
        assert "single category" in fig[name]["undefined_reason"]
    assert fig["cohen"]["pairs_undefined"] == 3 and fig["cohen"]["pairs_used"] == 0
    assert all(v is None for row in fig["pairwise"]["kappa"] for v in row)
    pair = agreement.cohen_kappa([0, 0, 0], [0, 0, 0])
    assert pair["value"] is None and "single category" in pair["undefined_reason"]


def test_one_constant_rater_is_defined_not_undefined():
    # Chance agreement below 1: κ is 0, a real value.
    stat = agreement.cohen_kappa([0, 0, 0, 0], [0, 1, 0, 1])
    assert stat["value"] == 0.0 and stat["undefined_reason"] is None


def test_undefined_when_fewer_than_two_shared_items():
    stat = agreement.cohen_kappa([0, 1, -1, -1], [0, -1, 1, 2])
    assert stat["value"] is None and stat["undefined_reason"] == "fewer than 2 shared items"
    assert stat["items"] == 1
    matrix = np.array([[0, 1, -1, -1], [0, -1, 1, 2], [-1, -1, -1, -1]])
    fig = agreement.agreement_figures(matrix, min_overlap=1, n_boot=0)
    assert fig["cohen"]["value"] is None
    assert fig["fleiss"]["value"] is None  # only item 0 has two ratings
    assert "fewer than 2 items" in fig["fleiss"]["undefined_reason"]


def test_undefined_when_no_pair_reaches_the_minimum_overlap():
    matrix = _random_matrix(0)
    stat = agreement.mean_pairwise_cohen(matrix, min_overlap=10_000)
    assert stat["value"] is None
    assert stat["undefined_reason"] == "no annotator pair shares at least 10,000 items"
    assert stat["pairs_used"] == 0 and stat["pairs_skipped"] == 36


def test_empty_and_unpairable_input_does_not_crash():
    for matrix in (np.zeros((0, 0), dtype=int), np.full((3, 4), -1), np.array([[0, 1, 2]])):
        fig = agreement.agreement_figures(matrix, n_boot=20)
        for name in ("cohen", "fleiss", "alpha"):
            assert fig[name]["value"] is None and fig[name]["undefined_reason"]


def test_bad_codes_are_refused():
    with pytest.raises(ValueError, match="category codes"):
        agreement.agreement_figures(np.array([[0, 3]]))


def test_bootstrap_is_deterministic_with_the_seed():
    matrix, clusters, groups = _protocol_matrix(0)
    kw = {"clusters": clusters, "groups": groups, "m": 3, "min_overlap": 10, "n_boot": 200}
    one = agreement.agreement_figures(matrix, seed=7, **kw)
    two = agreement.agreement_figures(matrix, seed=7, **kw)
    other = agreement.agreement_figures(matrix, seed=8, **kw)
    assert one == two
    assert one["fleiss"]["ci"] != other["fleiss"]["ci"]
    for name in ("cohen", "fleiss", "alpha"):
        lo, hi = one[name]["ci"]
        assert lo < one[name]["value"] < hi
        assert one[name]["ci_replicates"] == 200
    assert one["bootstrap"] == {
        "n_boot": 200,
        "seed": 7,
        "unit": "sample",
        "level": 0.95,
        "method": "percentile",
    }


def test_bootstrap_resamples_samples_not_items():
    """Our intervals equal a literal resampling of whole samples, recomputed by the libraries."""
    matrix, clusters, groups = _protocol_matrix(3, samples=60)
    n_boot, seed = 40, 11
    fig = agreement.agreement_figures(
        matrix, clusters=clusters, groups=groups, m=3, min_overlap=5, n_boot=n_boot, seed=seed
    )
    rng = np.random.default_rng(seed)
    n_samples = clusters.max() + 1
    refs: dict[str, list[float]] = {"fleiss": [], "alpha": [], "cohen": []}
    for _ in range(n_boot):
        drawn = rng.integers(0, n_samples, size=n_samples)
        columns = np.concatenate([np.nonzero(clusters == s)[0] for s in drawn])
        sample = matrix[:, columns]
        refs["fleiss"].append(_ref_fleiss(sample, 3))
        refs["alpha"].append(_ref_alpha(sample))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            refs["cohen"].append(_ref_mean_pairwise(sample, 5)[0])
    for name, values in refs.items():
        expected = np.percentile(values, [2.5, 97.5])
        assert np.allclose(fig[name]["ci"], expected, atol=TOL, rtol=0), name
    # Resampling items instead gives other intervals: the unit matters.
    per_item = agreement.agreement_figures(
        matrix, groups=groups, m=3, min_overlap=5, n_boot=n_boot, seed=seed
    )
    assert per_item["fleiss"]["ci"] != fig["fleiss"]["ci"]


def _loop_replicate_totals(matrix, clusters, groups, m, n_boot, seed):
    """Every replicate's totals the plain way: one weighted sum over items per replicate."""
    r = agreement._ratings(np.asarray(matrix), 3)
    n_groups = int(groups.max()) + 1
    layout, features = agreement._features(r, groups, n_groups, m)
    _, item_cluster = np.unique(clusters, return_inverse=True)
    n_clusters = int(item_cluster.max()) + 1
    rng = np.random.default_rng(seed)
    cohen, dense = [], []
    for _ in range(n_boot):
        w = agreement.resample_counts(rng, n_clusters, 1)[0].astype(np.float64)
        obs_w = w[item_cluster[features["cohen_item"]]]
        size = n_groups * layout.cohen_size
        cohen.append(np.bincount(features["cohen_feature"], weights=obs_w, minlength=size))
        per_group = np.zeros((n_groups, layout.dense_size))
        np.add.at(per_group, groups, features["dense"] * w[item_cluster][:, None])
        dense.append(per_group)
    args = (features, layout, item_cluster, groups, n_clusters, n_boot, seed)
    return np.array(cohen), np.array(dense), agreement._replicate_totals(*args)


@pytest.mark.parametrize("rows_per_product", [0, 10**9])  # products per pair / sums per replicate
@pytest.mark.parametrize("samples", [40, 2100])
def test_replicate_totals_equal_a_plain_loop_over_replicates(
    samples, rows_per_product, monkeypatch
):
    """Both ways give every replicate's totals exactly as one weighted sum per replicate.

    Edge cases: items with one rating or none, a rater pair met in a single sample, samples
    with two items of the same criterion, and (at 2,100 samples) the row-by-row draw counts.
    """
    monkeypatch.setattr(agreement, "_ROWS_PER_PRODUCT", rows_per_product)
    matrix, clusters, groups = _protocol_matrix(5, samples=samples)
    matrix[:, 7] = -1  # an unrated item
    matrix[:, 11] = -1
    matrix[2, 11] = 1  # a single rating
    matrix[:, 13] = -1
    matrix[[0, 8], 13] = [2, 0]  # a pair that may meet nowhere else
    groups = groups.copy()
    groups[groups == 4] = 3  # two items of one criterion per sample
    ref_cohen, ref_dense, (cohen, dense) = _loop_replicate_totals(
        matrix, clusters, groups, 3, 30, 4
    )
    assert np.array_equal(cohen.reshape(len(ref_cohen), -1), ref_cohen)
    assert np.allclose(dense, ref_dense, rtol=1e-12, atol=1e-9)


def test_replicate_totals_per_item_clusters_and_one_group():
    """Without clusters (each item its own) and groups, the same totals as the plain loop."""
    matrix = _random_matrix(2, items=300)
    items = matrix.shape[1]
    ref_cohen, ref_dense, (cohen, dense) = _loop_replicate_totals(
        matrix, np.arange(items), np.zeros(items, np.int64), 2, 25, 9
    )
    assert np.array_equal(cohen.reshape(len(ref_cohen), -1), ref_cohen)
    assert np.allclose(dense, ref_dense, rtol=1e-12, atol=1e-9)


def test_replicate_totals_with_many_annotators_each_pair_in_few_samples():
    """Thirty annotators: the pairs meet in a few samples each, and the totals still agree."""
    matrix, clusters, groups = _protocol_matrix(6, samples=80, raters=30)
    ref_cohen, ref_dense, (cohen, dense) = _loop_replicate_totals(
        matrix, clusters, groups, 3, 20, 1
    )
    assert np.array_equal(cohen.reshape(len(ref_cohen), -1), ref_cohen)
    assert np.allclose(dense, ref_dense, rtol=1e-12, atol=1e-9)
