"""Inter-annotator agreement on (sample, criterion) items: Cohen's κ, Fleiss' κ, Krippendorff's α.

Pure NumPy, no Django. Votes come as a rater x item matrix of category codes (``A`` = 0,
``B`` = 1, ``tie`` = 2 by default) with ``-1`` where the rater did not rate the item.

Why our own code and not scikit-learn / statsmodels / krippendorff: the bootstrap must resample
samples (all criteria of a sample move together) a thousand times over hundreds of thousands of
items. Every statistic here is a ratio of sums over items, so each item is reduced once to a few
sufficient statistics (pair confusion cells, category counts, coincidences) and a bootstrap
replicate is one weighted sum of those, not a re-run of a library over a resampled table. One code
path also gives one definition of "undefined" for every statistic. The three libraries are test
dependencies only: the tests check our point estimates against them to 1e-9.

Definitions
-----------
- **Cohen's κ** of two raters on the items both rated: ``(p_o - p_e) / (1 - p_e)`` with each
  rater's own marginals on those shared items (as ``sklearn.metrics.cohen_kappa_score``).
- **Mean pairwise Cohen's κ**: over annotator pairs sharing at least ``min_overlap`` items and
  with a defined κ. ``value`` is the unweighted mean over those pairs (each pair counts once);
  ``weighted_value`` is the mean weighted by the pair's number of shared items. Pairs that share
  at least one item but fewer than ``min_overlap``, or whose κ is undefined, are skipped and
  counted in ``pairs_skipped`` (``pairs_undefined`` of them had enough overlap but an
  undefined κ); pairs sharing no item are not pairs at all. ``smallest_overlap`` is the
  smallest overlap among the pairs used.
- **Fleiss' κ**: over the items with exactly ``m`` ratings (``m`` = ratings per item, the
  project's annotators per sample). Items with any other number of ratings are left out and
  counted in ``items_excluded``, because Fleiss' chance model assumes the same number of raters on
  every item (as ``statsmodels.stats.inter_rater.fleiss_kappa`` on the table of the kept items).
- **Krippendorff's α (nominal)**: ``1 - D_o / D_e`` from the coincidence matrix; items with fewer
  than two ratings are not pairable and are left out (``items_excluded``), any number of ratings
  of two or more counts (as the ``krippendorff`` package with ``level_of_measurement="nominal"``).
- **Undefined** cases (fewer than 2 shared items, a single category everywhere so that chance
  agreement is 1, no pair with enough overlap) give ``value: None`` and an ``undefined_reason``,
  never an exception and never a silent 0 or 1.

Bootstrap
---------
95% percentile intervals from ``n_boot`` replicates that resample **samples** (clusters) with
replacement, so that all criteria of a sample are drawn together; the generator is
``numpy.random.default_rng(seed)`` and replicate ``b`` draws ``rng.integers(0, S, size=S)``
cluster indices (S = number of samples). Replicates where a statistic is undefined are left out
of its interval (``ci_replicates`` says how many counted); an undefined point estimate has no
interval.

``AgreementSnapshot.figures`` (one per split; :func:`agreement_figures` builds everything but
``split`` and ``computed_at``, which the aggregation service adds)::

    {
      "split": "open_ended",
      "items": 1500,                # (sample, criterion) items with at least one formal vote
      "samples": 300, "votes": 4500, "annotators": 9,
      "categories": ["A", "B", "tie"],
      "ratings_per_item": 3,
      "cohen": {                    # mean pairwise Cohen's κ, all criteria of the split pooled
        "value": 0.71, "undefined_reason": None, "ci": [0.66, 0.75], "ci_replicates": 1000,
        "weighted_value": 0.72, "weighted_ci": [0.67, 0.76],
        "pairs_used": 36, "pairs_skipped": 0, "pairs_undefined": 0,
        "min_overlap": 20,          # the threshold a pair needs to be used
        "smallest_overlap": 88, "largest_overlap": 160,   # among the pairs used
        "weighting": "unweighted mean over annotator pairs; weighted_value: overlap-weighted",
        "items": 1500
      },
      "fleiss": {"value": 0.70, "undefined_reason": None, "ci": [...], "ci_replicates": 1000,
                 "items": 1490, "items_excluded": 10, "ratings_per_item": 3,
                 "observed": 0.83, "expected": 0.43},
      "alpha": {"value": 0.70, "undefined_reason": None, "ci": [...], "ci_replicates": 1000,
                "items": 1500, "items_excluded": 0, "pairable_values": 4500,
                "observed_disagreement": 0.17, "expected_disagreement": 0.57},
      "per_criterion": {"completeness": {"items": 300, "cohen": {...}, "fleiss": {...},
                                         "alpha": {...}}, ...},
      "per_annotator": {"ann1": {"items": 500,
                                 "cohen_vs_others": {...same keys as "cohen"...}}, ...},
      "pairwise": {"annotators": ["ann1", ...],          # sorted usernames
                   "kappa": [[None, 0.7, ...], ...],     # None on the diagonal and if undefined
                   "overlap": [[500, 120, ...], ...]},   # shared items; diagonal = items rated
      "bootstrap": {"n_boot": 1000, "seed": 0, "unit": "sample", "level": 0.95,
                    "method": "percentile"},
      "computed_at": "2026-12-02T13:50:00+00:00"
    }

Every statistic object has at least ``value`` (float or None), ``undefined_reason`` (str or
None) and ``ci`` (``[lo, hi]`` or None). ``cohen_vs_others`` of an annotator is the mean of the
κ of the pairs that include the annotator, with the same threshold and weighting as ``cohen``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from core.text import counted

from .bootstrap import resample_counts

CATEGORIES = ("A", "B", "tie")
MISSING = -1
DEFAULT_MIN_OVERLAP = 20
DEFAULT_N_BOOT = 1000
CI_LEVEL = 0.95
WEIGHTING = "unweighted mean over annotator pairs; weighted_value: overlap-weighted"
_EPS = 1e-12

Stat = dict[str, Any]


def undefined(reason: str, **extra: Any) -> Stat:
    """A statistic that cannot be computed, with the reason shown to the lead."""
    return {"value": None, "undefined_reason": reason, "ci": None, **extra}


# --- item-level sufficient statistics --------------------------------------------------------


@dataclass(frozen=True)
class _Ratings:
    """The votes of a rater x item matrix in long form, sorted by item then rater."""

    n_raters: int
    n_items: int
    n_categories: int
    item: np.ndarray  # item index of each rating
    rater: np.ndarray
    code: np.ndarray
    counts: np.ndarray  # (items, categories): ratings per category
    m: np.ndarray  # ratings per item


def _ratings(matrix: np.ndarray, n_categories: int) -> _Ratings:
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError("ratings must be a 2-D rater x item matrix")
    n_raters, n_items = matrix.shape
    present = matrix >= 0
    if np.any(matrix[present] >= n_categories):
        raise ValueError(f"category codes must be in 0..{n_categories - 1} (or -1 for missing)")
    item, rater = np.nonzero(present.T)  # row-major over items: sorted by item, then rater
    code = matrix[rater, item].astype(np.int64)
    counts = np.bincount(item * n_categories + code, minlength=n_items * n_categories).reshape(
        n_items, n_categories
    )
    return _Ratings(
        n_raters=n_raters,
        n_items=n_items,
        n_categories=n_categories,
        item=item.astype(np.int64),
        rater=rater.astype(np.int64),
        code=code,
        counts=counts,
        m=counts.sum(axis=1),
    )


def _pair_observations(r: _Ratings) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every (item, rater i < rater j) pair of ratings: item, i, j and the confusion cell."""
    items, raters, cells = [], [], []
    max_m = int(r.m.max()) if r.n_items else 0
    c = r.n_categories
    for d in range(1, max_m):
        same = r.item[:-d] == r.item[d:]
        if not same.any():
            break
        lo = np.nonzero(same)[0]
        hi = lo + d
        items.append(r.item[lo])
        raters.append(r.rater[lo] * r.n_raters + r.rater[hi])
        cells.append(r.code[lo] * c + r.code[hi])
    if not items:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    item = np.concatenate(items)
    pair = np.concatenate(raters)
    return item, pair // r.n_raters, pair % r.n_raters, np.concatenate(cells)


@dataclass(frozen=True)
class _Layout:
    """Where each group's features sit in a totals vector."""

    n_groups: int
    n_pairs: int
    n_categories: int
    pair_i: np.ndarray  # rater index of each observed pair (i < j)
    pair_j: np.ndarray

    @property
    def cohen_size(self) -> int:
        return self.n_pairs * self.n_categories**2

    @property
    def dense_size(self) -> int:
        # Fleiss: sum of P_i, item count, category counts; alpha: category counts, disagreement.
        return 2 + self.n_categories + self.n_categories + 1


def _features(
    r: _Ratings, groups: np.ndarray, n_groups: int, m: int
) -> tuple[_Layout, dict[str, np.ndarray]]:
    """Reduce every item to its sufficient statistics, per group.

    Returns the layout and long arrays: Cohen entries (item, feature) with weight 1, and a dense
    per-item matrix of the Fleiss and alpha features (placed at the item's group).
    """
    c = r.n_categories
    p_item, p_i, p_j, p_cell = _pair_observations(r)
    pair_key = p_i * r.n_raters + p_j
    keys, pair_index = np.unique(pair_key, return_inverse=True)
    layout = _Layout(
        n_groups=n_groups,
        n_pairs=len(keys),
        n_categories=c,
        pair_i=keys // r.n_raters if len(keys) else np.zeros(0, dtype=np.int64),
        pair_j=keys % r.n_raters if len(keys) else np.zeros(0, dtype=np.int64),
    )
    cohen_feature = groups[p_item] * layout.cohen_size + pair_index * c * c + p_cell

    counts = r.counts.astype(np.float64)
    mm = r.m.astype(np.float64)
    dense = np.zeros((r.n_items, layout.dense_size))
    if m >= 2:
        fleiss_ok = r.m == m
        dense[:, 0] = np.where(fleiss_ok, ((counts**2).sum(axis=1) - m) / (m * (m - 1)), 0.0)
        dense[:, 1] = fleiss_ok
        dense[:, 2 : 2 + c] = counts * fleiss_ok[:, None]
    pairable = r.m >= 2
    dense[:, 2 + c : 2 + 2 * c] = counts * pairable[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        disagreement = (mm**2 - (counts**2).sum(axis=1)) / (mm - 1)
    dense[:, 2 + 2 * c] = np.where(pairable, disagreement, 0.0)
    return layout, {"cohen_item": p_item, "cohen_feature": cohen_feature, "dense": dense}


# --- statistics from totals (vectorised over a leading replicate axis) ------------------------


def _kappa_from_confusion(conf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """κ, shared-item count and chance agreement from (..., C, C) confusion tables."""
    n = conf.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        po = np.trace(conf, axis1=-2, axis2=-1) / n
        pe = (conf.sum(axis=-1) * conf.sum(axis=-2)).sum(axis=-1) / n**2
        kappa = (po - pe) / (1 - pe)
    kappa = np.where((n >= 2) & (1 - pe > _EPS), kappa, np.nan)
    return kappa, n, pe


def _pair_reason(n: float, pe: float) -> str:
    if n < 2:
        return "fewer than 2 shared items"
    return "a single category in both raters' votes: chance agreement is 1"


def _mean_kappa(
    kappa: np.ndarray, overlap: np.ndarray, member: np.ndarray, min_overlap: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unweighted and overlap-weighted mean κ per row of ``member`` (rows x pairs)."""
    used = (overlap >= min_overlap) & ~np.isnan(kappa)
    k0 = np.where(used, kappa, 0.0)
    w = np.where(used, overlap, 0.0)
    n_used = used.astype(np.float64) @ member.T
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = (k0 @ member.T) / n_used
        weighted = ((k0 * w) @ member.T) / (w @ member.T)
    mean = np.where(n_used > 0, mean, np.nan)
    weighted = np.where(n_used > 0, weighted, np.nan)
    return mean, weighted, n_used


def _fleiss_from(t: np.ndarray, c: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_items = t[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        p_bar = t[..., 0] / n_items
        p = t[..., 2 : 2 + c] / (n_items[..., None] * m)
        pe = (p**2).sum(axis=-1)
        kappa = (p_bar - pe) / (1 - pe)
    kappa = np.where((n_items >= 2) & (1 - pe > _EPS) & (m >= 2), kappa, np.nan)
    return kappa, p_bar, pe


def _alpha_from(t: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    nc = t[..., 2 + c : 2 + 2 * c]
    n = nc.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        d_o = t[..., 2 + 2 * c] / n
        d_e = (n**2 - (nc**2).sum(axis=-1)) / (n * (n - 1))
        alpha = 1 - d_o / d_e
    alpha = np.where((n >= 2) & (d_e > _EPS), alpha, np.nan)
    return alpha, d_o, d_e


@dataclass
class _Computed:
    """Every statistic of one totals vector (or a stack of replicate totals)."""

    cohen_mean: np.ndarray  # (..., groups + 1): the last column pools all groups
    cohen_weighted: np.ndarray
    annot_mean: np.ndarray  # (..., groups + 1, raters)
    annot_weighted: np.ndarray
    fleiss: np.ndarray  # (..., groups + 1)
    alpha: np.ndarray


def _compute(
    cohen_t: np.ndarray, dense_t: np.ndarray, layout: _Layout, n_raters: int, m: int, min_ov: int
) -> tuple[_Computed, dict[str, np.ndarray]]:
    """Statistics per group and pooled, from totals of shape (reps, groups, ...)."""
    c = layout.n_categories
    conf = cohen_t.reshape(*cohen_t.shape[:2], layout.n_pairs, c, c)
    conf = np.concatenate([conf, conf.sum(axis=1, keepdims=True)], axis=1)
    dense = np.concatenate([dense_t, dense_t.sum(axis=1, keepdims=True)], axis=1)
    kappa, overlap, pe = _kappa_from_confusion(conf)
    pooled_member = np.ones((1, layout.n_pairs))
    rater_member = np.zeros((n_raters, layout.n_pairs))
    rater_member[layout.pair_i, np.arange(layout.n_pairs)] = 1
    rater_member[layout.pair_j, np.arange(layout.n_pairs)] = 1
    mean, weighted, _ = _mean_kappa(kappa, overlap, pooled_member, min_ov)
    a_mean, a_weighted, _ = _mean_kappa(kappa, overlap, rater_member, min_ov)
    fleiss, p_bar, f_pe = _fleiss_from(dense, c, m)
    alpha, d_o, d_e = _alpha_from(dense, c)
    computed = _Computed(
        cohen_mean=mean[..., 0],
        cohen_weighted=weighted[..., 0],
        annot_mean=a_mean,
        annot_weighted=a_weighted,
        fleiss=fleiss,
        alpha=alpha,
    )
    detail = {
        "kappa": kappa,
        "overlap": overlap,
        "pe": pe,
        "dense": dense,
        "p_bar": p_bar,
        "f_pe": f_pe,
        "d_o": d_o,
        "d_e": d_e,
        "rater_member": rater_member,
    }
    return computed, detail


# --- bootstrap ---------------------------------------------------------------------------------


def _replicate_totals(
    features: dict[str, np.ndarray],
    layout: _Layout,
    item_cluster: np.ndarray,
    item_group: np.ndarray,
    n_clusters: int,
    n_boot: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Totals of every replicate: each a cluster-weighted sum, by matrix products over blocks.

    A replicate's totals are its cluster weights (draw counts) times the clusters' summed
    features. Cohen cells: the observations of one annotator pair sit in the few clusters the
    pair rated, so per pair a (clusters x group-cells) count matrix multiplies a block of
    replicates' weights of those clusters (float32: counts and totals are integers below
    2**24, so the sums are exact). The Fleiss and alpha features, summed per (cluster, group),
    take one float64 product per block of replicates.
    """
    g = layout.n_groups
    c2 = layout.n_categories**2
    dense = features["dense"]
    per_cluster = np.zeros((n_clusters * g, dense.shape[1]))
    np.add.at(per_cluster, item_cluster * g + item_group, dense)
    per_cluster = per_cluster.reshape(n_clusters, g * dense.shape[1])
    pairs = _pair_blocks(features, layout, item_cluster, n_clusters)
    cohen = np.zeros((n_boot, g, layout.n_pairs, c2))
    dense_t = np.empty((n_boot, g * dense.shape[1]))
    rng = np.random.default_rng(seed)
    block = max(1, min(256, 2_000_000 // n_clusters))  # replicates at a time
    used = np.flatnonzero(np.diff(pairs.bounds))
    # Many annotators, each pair in few clusters: one weighted sum per replicate is cheaper
    # than a product per pair.
    per_pair = len(used) * _ROWS_PER_PRODUCT <= len(pairs.cluster)
    obs_cluster = item_cluster[features["cohen_item"]]
    with threadpool_limits(1, user_api="blas"):  # a worker shares its cores: one thread
        for start in range(0, n_boot, block):
            stop = min(n_boot, start + block)
            weights = resample_counts(rng, n_clusters, stop - start).astype(np.float64)
            dense_t[start:stop] = weights @ per_cluster
            if not per_pair:
                size = g * layout.cohen_size
                for b, w in enumerate(weights, start):
                    totals = np.bincount(
                        features["cohen_feature"], weights=w[obs_cluster], minlength=size
                    )
                    cohen[b] = totals.reshape(g, layout.n_pairs, c2)
                continue
            by_cluster = np.ascontiguousarray(weights.T, dtype=pairs.dtype)
            for p in used:
                lo, hi = pairs.bounds[p], pairs.bounds[p + 1]
                sums = pairs.counts[lo:hi].T @ by_cluster[pairs.cluster[lo:hi]]  # (g * c2, reps)
                cohen[start:stop, :, p, :] = sums.T.reshape(stop - start, g, c2)
    return cohen.reshape(n_boot, g, layout.cohen_size), dense_t.reshape(n_boot, g, -1)


# A product per annotator pair pays off when the pairs average at least this many clusters.
_ROWS_PER_PRODUCT = 32


@dataclass(frozen=True)
class _PairBlocks:
    """Per annotator pair, the clusters it rated and their (group, cell) observation counts."""

    cluster: np.ndarray  # row -> cluster, rows sorted by pair then cluster
    counts: np.ndarray  # (rows, groups * cells)
    bounds: np.ndarray  # pair p's rows: bounds[p]:bounds[p + 1]
    dtype: type


def _pair_blocks(
    features: dict[str, np.ndarray], layout: _Layout, item_cluster: np.ndarray, n_clusters: int
) -> _PairBlocks:
    """Each pair's rows: the clusters it rated, with its observations per (group, cell)."""
    c2 = layout.n_categories**2
    feature = features["cohen_feature"]
    group, rest = np.divmod(feature, layout.cohen_size)
    pair, cell = np.divmod(rest, c2)
    key = pair * n_clusters + item_cluster[features["cohen_item"]]
    rows, row = np.unique(key, return_inverse=True)
    counts = np.zeros((len(rows), layout.n_groups * c2))
    np.add.at(counts, (row, group * c2 + cell), 1)
    bounds = np.searchsorted(rows // n_clusters, np.arange(layout.n_pairs + 1))
    # float32 sums are exact while every total stays below 2**24.
    exact32 = n_clusters * (counts.max() if len(counts) else 0) < 2**24
    dtype = np.float32 if exact32 else np.float64
    return _PairBlocks(rows % n_clusters, counts.astype(dtype), bounds, dtype)


def percentile_ci(values: np.ndarray) -> tuple[list[float] | None, int]:
    """The CI_LEVEL percentile interval of bootstrap replicates (NaNs left out), and how many
    replicates it used; None when none is defined."""
    ok = values[~np.isnan(values)]
    if not len(ok):
        return None, 0
    half = (1 - CI_LEVEL) / 2 * 100
    lo, hi = np.percentile(ok, [half, 100 - half])
    return [float(lo), float(hi)], len(ok)


def _float(x: Any) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


# --- public functions ----------------------------------------------------------------------------


def cohen_kappa(
    a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray, *, n_categories: int = 3
) -> Stat:
    """Cohen's κ of two raters' codes on the items both rated (-1 = not rated)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        raise ValueError("the two raters must have one code per item each")
    shared = (a >= 0) & (b >= 0)
    conf = np.bincount(a[shared] * n_categories + b[shared], minlength=n_categories**2).reshape(
        n_categories, n_categories
    )
    kappa, n, pe = _kappa_from_confusion(conf.astype(np.float64))
    if np.isnan(kappa):
        return undefined(_pair_reason(float(n), float(pe)), items=int(n))
    po = float(np.trace(conf) / n)
    return {
        "value": float(kappa),
        "undefined_reason": None,
        "ci": None,
        "items": int(n),
        "observed": po,
        "expected": float(pe),
    }


def fleiss_kappa(matrix: np.ndarray, *, m: int | None = None, n_categories: int = 3) -> Stat:
    """Fleiss' κ over the items with exactly ``m`` ratings (default: the most common count)."""
    figures = agreement_figures(matrix, m=m, n_categories=n_categories, n_boot=0)
    return figures["fleiss"]


def krippendorff_alpha(matrix: np.ndarray, *, n_categories: int = 3) -> Stat:
    """Krippendorff's α (nominal) with missing ratings (-1)."""
    return agreement_figures(matrix, n_categories=n_categories, n_boot=0)["alpha"]


def mean_pairwise_cohen(
    matrix: np.ndarray, *, min_overlap: int = DEFAULT_MIN_OVERLAP, n_categories: int = 3
) -> Stat:
    """Mean Cohen's κ over rater pairs sharing at least ``min_overlap`` items."""
    figures = agreement_figures(
        matrix, min_overlap=min_overlap, n_categories=n_categories, n_boot=0
    )
    return figures["cohen"]


def agreement_figures(
    matrix: np.ndarray,
    *,
    clusters: Sequence[int] | np.ndarray | None = None,
    groups: Sequence[int] | np.ndarray | None = None,
    group_names: Sequence[str] | None = None,
    rater_names: Sequence[str] | None = None,
    m: int | None = None,
    min_overlap: int = DEFAULT_MIN_OVERLAP,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    n_categories: int = 3,
) -> dict[str, Any]:
    """Every agreement figure of one split (the layout in the module docstring).

    ``matrix``: raters x items codes (-1 missing). ``clusters``: the sample of each item (the
    bootstrap unit; default: each item its own). ``groups``: the criterion index of each item,
    named by ``group_names`` (default: one group). ``m``: ratings per item for Fleiss' κ
    (default: the most common count among items with two or more ratings). ``n_boot=0`` skips
    the intervals.
    """
    matrix = np.asarray(matrix)
    r = _ratings(matrix, n_categories)
    n_items = r.n_items
    groups_arr = (
        np.zeros(n_items, dtype=np.int64) if groups is None else np.asarray(groups, np.int64)
    )
    if group_names is None:
        group_names = [str(i) for i in range(int(groups_arr.max()) + 1 if n_items else 1)]
    n_groups = len(group_names)
    cluster_arr = np.arange(n_items) if clusters is None else np.asarray(clusters)
    if len(groups_arr) != n_items or len(cluster_arr) != n_items:
        raise ValueError("clusters and groups need one entry per item (matrix column)")
    _, item_cluster = np.unique(cluster_arr, return_inverse=True)
    item_cluster = item_cluster.astype(np.int64)
    n_clusters = int(item_cluster.max()) + 1 if n_items else 0
    if rater_names is None:
        rater_names = [str(i) for i in range(r.n_raters)]
    if m is None:
        multi = r.m[r.m >= 2]
        m = int(np.bincount(multi).argmax()) if len(multi) else 2

    layout, features = _features(r, groups_arr, n_groups, m)
    cohen_t = np.bincount(features["cohen_feature"], minlength=n_groups * layout.cohen_size).astype(
        np.float64
    )
    dense_t = np.zeros((n_groups, layout.dense_size))
    np.add.at(dense_t, groups_arr, features["dense"])
    point, detail = _compute(
        cohen_t.reshape(1, n_groups, layout.cohen_size),
        dense_t[None],
        layout,
        r.n_raters,
        m,
        min_overlap,
    )
    boot: _Computed | None = None
    if n_boot and n_clusters:
        rep_cohen, rep_dense = _replicate_totals(
            features, layout, item_cluster, groups_arr, n_clusters, n_boot, seed
        )
        boot, _ = _compute(rep_cohen, rep_dense, layout, r.n_raters, m, min_overlap)

    # Item counts per group and pooled (last column).
    rated = r.m > 0
    items_g = np.bincount(groups_arr[rated], minlength=n_groups)
    items_all = np.append(items_g, items_g.sum())
    fleiss_excl_g = np.bincount(groups_arr[rated & (r.m != m)], minlength=n_groups)
    fleiss_excl = np.append(fleiss_excl_g, fleiss_excl_g.sum())
    alpha_excl_g = np.bincount(groups_arr[rated & (r.m < 2)], minlength=n_groups)
    alpha_excl = np.append(alpha_excl_g, alpha_excl_g.sum())

    pooled = n_groups  # index of the pooled column
    fit = _Fit(
        point=point,
        detail=detail,
        boot=boot,
        min_overlap=min_overlap,
        m=m,
        n_categories=n_categories,
        n_pairs=layout.n_pairs,
        items_all=items_all,
        fleiss_excl=fleiss_excl,
        alpha_excl=alpha_excl,
    )
    overall = _scope(fit, pooled)
    per_criterion = {
        name: {"items": int(items_all[g]), **_scope(fit, g)} for g, name in enumerate(group_names)
    }
    rated_by = np.bincount(r.rater, minlength=r.n_raters)
    per_annotator = _per_annotator(fit, rater_names, rated_by, pooled)
    kappa_m, overlap_m = _pairwise(fit, layout, rated_by, pooled)

    return {
        "items": int(rated.sum()),
        "samples": len(np.unique(item_cluster[rated])),
        "votes": len(r.item),
        "annotators": int((rated_by > 0).sum()),
        "categories": list(CATEGORIES[:n_categories])
        if n_categories <= len(CATEGORIES)
        else [str(i) for i in range(n_categories)],
        "ratings_per_item": int(m),
        **overall,
        "per_criterion": per_criterion,
        "per_annotator": per_annotator,
        "pairwise": {"annotators": list(rater_names), "kappa": kappa_m, "overlap": overlap_m},
        "bootstrap": {
            "n_boot": int(n_boot),
            "seed": int(seed),
            "unit": "sample",
            "level": CI_LEVEL,
            "method": "percentile",
        },
    }


@dataclass(frozen=True)
class _Fit:
    """One split's point figures, their bootstrap replicates and the item counts they report."""

    point: _Computed
    detail: dict[str, np.ndarray]
    boot: _Computed | None
    min_overlap: int
    m: int
    n_categories: int
    n_pairs: int
    items_all: np.ndarray  # per group, the pooled count last
    fleiss_excl: np.ndarray
    alpha_excl: np.ndarray


def _with_ci(stat: Stat, values: np.ndarray | None, key: str = "ci") -> Stat:
    """Add the percentile interval of ``values`` to a defined statistic, in place."""
    if stat["value"] is not None and values is not None:
        stat[key], n_ok = percentile_ci(values)
        if key == "ci":
            stat["ci_replicates"] = n_ok
    return stat


def _cohen_stat(
    fit: _Fit,
    g: int,
    pairs: np.ndarray,
    mean: float,
    weighted: float,
    rep: tuple[np.ndarray, np.ndarray] | None = None,
) -> Stat:
    """Mean pairwise Cohen's κ over ``pairs`` of group ``g``, with what it used and skipped."""
    kappa = fit.detail["kappa"][0, g][pairs]
    overlap = fit.detail["overlap"][0, g][pairs]
    shared = overlap > 0
    enough = overlap >= fit.min_overlap
    defined = ~np.isnan(kappa)
    used = enough & defined
    info = {
        "pairs_used": int(used.sum()),
        "pairs_skipped": int((shared & ~used).sum()),
        "pairs_undefined": int((enough & ~defined).sum()),
        "min_overlap": int(fit.min_overlap),
        "smallest_overlap": int(overlap[used].min()) if used.any() else None,
        "largest_overlap": int(overlap[used].max()) if used.any() else None,
        "weighting": WEIGHTING,
        "items": int(fit.items_all[g]),
    }
    if not used.any():
        if not shared.any():
            reason = "no two annotators share an item"
        elif not enough.any():
            reason = f"no annotator pair shares at least {counted(fit.min_overlap, 'item')}"
        else:
            reason = "every annotator pair's κ is undefined (a single category)"
        return undefined(reason, weighted_value=None, weighted_ci=None, **info)
    stat = {
        "value": float(mean),
        "undefined_reason": None,
        "ci": None,
        "weighted_value": float(weighted),
        "weighted_ci": None,
        **info,
    }
    if rep is not None:
        _with_ci(stat, rep[0])
        _with_ci(stat, rep[1], "weighted_ci")
    return stat


def _fleiss_stat(fit: _Fit, g: int) -> Stat:
    """Fleiss' κ of group ``g`` over the items with exactly ``m`` ratings."""
    value = fit.point.fleiss[0, g]
    n_used = int(fit.detail["dense"][0, g, 1])
    m = fit.m
    info = {
        "items": n_used,
        "items_excluded": int(fit.fleiss_excl[g]),
        "ratings_per_item": int(m),
    }
    if np.isnan(value):
        if m < 2:
            reason = "Fleiss' κ needs at least 2 ratings per item"
        elif n_used < 2:
            reason = f"fewer than 2 items with exactly {m} ratings"
        else:
            reason = "a single category everywhere: chance agreement is 1"
        return undefined(reason, **info)
    stat = {
        "value": float(value),
        "undefined_reason": None,
        "ci": None,
        **info,
        "observed": float(fit.detail["p_bar"][0, g]),
        "expected": float(fit.detail["f_pe"][0, g]),
    }
    return _with_ci(stat, None if fit.boot is None else fit.boot.fleiss[:, g])


def _alpha_stat(fit: _Fit, g: int) -> Stat:
    """Krippendorff's α of group ``g`` over the items with two or more ratings."""
    value = fit.point.alpha[0, g]
    c = fit.n_categories
    pairable = fit.detail["dense"][0, g, 2 + c : 2 + 2 * c].sum()
    info = {
        "items": int(fit.items_all[g] - fit.alpha_excl[g]),
        "items_excluded": int(fit.alpha_excl[g]),
        "pairable_values": int(pairable),
    }
    if np.isnan(value):
        if pairable < 2:
            reason = "no item has two or more ratings"
        else:
            reason = "a single category everywhere: expected disagreement is 0"
        return undefined(reason, **info)
    stat = {
        "value": float(value),
        "undefined_reason": None,
        "ci": None,
        **info,
        "observed_disagreement": float(fit.detail["d_o"][0, g]),
        "expected_disagreement": float(fit.detail["d_e"][0, g]),
    }
    return _with_ci(stat, None if fit.boot is None else fit.boot.alpha[:, g])


def _scope(fit: _Fit, g: int) -> dict[str, Stat]:
    """The three statistics of group ``g`` (the pooled column for all criteria)."""
    boot = fit.boot
    rep = None if boot is None else (boot.cohen_mean[:, g], boot.cohen_weighted[:, g])
    return {
        "cohen": _cohen_stat(
            fit,
            g,
            np.arange(fit.n_pairs),
            fit.point.cohen_mean[0, g],
            fit.point.cohen_weighted[0, g],
            rep,
        ),
        "fleiss": _fleiss_stat(fit, g),
        "alpha": _alpha_stat(fit, g),
    }


def _per_annotator(
    fit: _Fit, rater_names: Sequence[str], rated_by: np.ndarray, pooled: int
) -> dict[str, Any]:
    """Each annotator who rated: their mean Cohen's κ against every other annotator."""
    per_annotator: dict[str, Any] = {}
    member = fit.detail["rater_member"].astype(bool)
    for a, name in enumerate(rater_names):
        if not rated_by[a]:
            continue
        rep = None
        if fit.boot is not None:
            rep = (fit.boot.annot_mean[:, pooled, a], fit.boot.annot_weighted[:, pooled, a])
        stat = _cohen_stat(
            fit,
            pooled,
            np.nonzero(member[a])[0],
            fit.point.annot_mean[0, pooled, a],
            fit.point.annot_weighted[0, pooled, a],
            rep,
        )
        stat["items"] = int(rated_by[a])
        per_annotator[name] = {"items": int(rated_by[a]), "cohen_vs_others": stat}
    return per_annotator


def _pairwise(
    fit: _Fit, layout: _Layout, rated_by: np.ndarray, pooled: int
) -> tuple[list[list[float | None]], list[list[int]]]:
    """The pooled κ and shared items of every annotator pair; the diagonal counts own items."""
    n_raters = len(rated_by)
    kappa_m: list[list[float | None]] = [[None] * n_raters for _ in range(n_raters)]
    overlap_m = [[0] * n_raters for _ in range(n_raters)]
    for p in range(layout.n_pairs):
        i, j = int(layout.pair_i[p]), int(layout.pair_j[p])
        k = _float(fit.detail["kappa"][0, pooled, p])
        n = int(fit.detail["overlap"][0, pooled, p])
        kappa_m[i][j] = kappa_m[j][i] = k
        overlap_m[i][j] = overlap_m[j][i] = n
    for a in range(n_raters):
        overlap_m[a][a] = int(rated_by[a])
    return kappa_m, overlap_m


AUDIT_SCOPE_NOTE = (
    "Fleiss' κ and Krippendorff's α on the audit share only (its samples always get every "
    "vote); Cohen's κ on every shared item"
)


def audit_scoped(full: dict[str, Any], audit: dict[str, Any]) -> dict[str, Any]:
    """``full``'s figures with Fleiss' κ and α (overall and per criterion) taken from ``audit``.

    Under early stopping or routing the items outside the audit share miss votes on purpose
    (the ones that could not change the label, or a verified panel label), which would bias the
    chance-corrected statistics that need every rating; the audit share gets the full protocol.
    Cohen's κ, per pair on the items the pair shares, keeps every item. ``fleiss_alpha_scope``
    says so, with the audit share's size.
    """
    out = dict(full)
    out["fleiss"] = audit["fleiss"]
    out["alpha"] = audit["alpha"]
    per = {}
    for name, scoped in full.get("per_criterion", {}).items():
        audited = audit.get("per_criterion", {}).get(name)
        row = dict(scoped)
        if audited is not None:
            row["fleiss"], row["alpha"] = audited["fleiss"], audited["alpha"]
        else:
            row["fleiss"] = undefined("no audit item")
            row["alpha"] = undefined("no audit item")
        per[name] = row
    out["per_criterion"] = per
    out["fleiss_alpha_scope"] = {
        "scope": "audit",
        "items": audit.get("items", 0),
        "samples": audit.get("samples", 0),
        "note": AUDIT_SCOPE_NOTE,
    }
    return out
