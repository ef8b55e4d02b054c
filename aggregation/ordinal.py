"""Agreement on ordinal labels: weighted Cohen's κ, Krippendorff's α, Gwet's AC1 / AC2.

Pure NumPy, no Django; the nominal statistics (Cohen's κ, Fleiss' κ, nominal α) live in
:mod:`aggregation.agreement`, whose rating layout and bootstrap this module shares. Votes come as
a rater x item matrix of category codes ``0 .. q-1`` (``-1`` = not rated); ``values`` gives the
number of each category on its scale, in order (a graded scale ``[-2, -1, 0, 1, 2]``, a 1-5
score ``[1, 2, 3, 4, 5]``, a score difference ``[-4 .. 4]``).

Definitions
-----------
- **Weighted Cohen's κ** of two raters on their shared items: ``1 - Σ w·O / Σ w·E`` with the
  disagreement weights ``|v_i - v_j|`` (linear) or ``(v_i - v_j)²`` (quadratic) and ``E`` the
  product of the two raters' marginals (as ``sklearn.metrics.cohen_kappa_score(weights=...)``
  on an equally spaced scale). The project figure is the unweighted mean over annotator pairs
  sharing at least ``min_overlap`` items, as the nominal κ.
- **Krippendorff's α** ``1 - D_o / D_e`` from the coincidence matrix of the items with two or
  more ratings, with the ordinal metric (ranks: ``(Σ_{g=c..k} n_g - (n_c + n_k)/2)²``) or the
  interval metric (``(v_c - v_k)²``), as the ``krippendorff`` package.
- **Gwet's AC1 / AC2** (Gwet 2014, the multi-rater form with missing ratings, as the irrCAC
  package): ``p_a`` is the mean over items with two or more ratings of
  ``Σ_k r_ik (r*_ik - 1) / (r_i (r_i - 1))`` with ``r*_ik = Σ_l w_kl r_il``; ``p_e`` is
  ``T_w / (q (q - 1)) · Σ_k π_k (1 - π_k)`` with ``π_k`` the mean over rated items of
  ``r_ik / r_i`` and ``T_w`` the sum of the weights. AC1 uses identity weights; AC2 the
  agreement weights ``1 - |v_k - v_l| / (v_max - v_min)`` (linear),
  ``1 - (v_k - v_l)² / (v_max - v_min)²`` (quadratic) or Gwet's ordinal weights
  ``1 - C(|k - l| + 1, 2) / max`` on the ranks. It does not collapse when one label dominates.

Every statistic is a ratio of sums over items, so the sample-cluster bootstrap
(:func:`aggregation.bootstrap.resample_counts`, seed 0, percentile 95%) is one weighted sum per
replicate, as in :mod:`aggregation.agreement`. Undefined cases give ``value: None`` with an
``undefined_reason``.

:func:`ordinal_figures` returns::

    {"scale": "graded", "values": [-2, -1, 0, 1, 2], "items": 1500, "votes": 4500,
     "cohen_linear": {"value": .., "ci": [..], "pairs_used": .., ...},
     "cohen_quadratic": {...}, "alpha_ordinal": {...}, "alpha_interval": {...},
     "ac1": {"value": .., "observed": p_a, "expected": p_e, ...},
     "ac2_linear": {...}, "ac2_quadratic": {...}, "ac2_ordinal": {...},
     "bootstrap": {"n_boot": 1000, "seed": 0, "unit": "sample", "level": 0.95, ...}}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.text import counted

from .agreement import (
    CI_LEVEL,
    DEFAULT_MIN_OVERLAP,
    DEFAULT_N_BOOT,
    Stat,
    _pair_observations,
    _ratings,
    percentile_ci,
    undefined,
)
from .bootstrap import resample_counts

_EPS = 1e-12
#: Gwet's AC coefficients and their agreement weights, in the order of the figures.
GWET = ("ac1", "ac2_linear", "ac2_quadratic", "ac2_ordinal")
STATISTICS = (
    "cohen_linear",
    "cohen_quadratic",
    "alpha_ordinal",
    "alpha_interval",
    *GWET,
)
_BLOCK = 64


def gwet_weights(values: Sequence[float], kind: str) -> np.ndarray:
    """Gwet's agreement weights (q x q) of a scale: identity, linear, quadratic or ordinal."""
    v = np.asarray(values, dtype=np.float64)
    q = len(v)
    if kind in ("identity", "ac1"):
        return np.eye(q)
    span = v.max() - v.min() if q > 1 else 1.0
    diff = v[:, None] - v[None, :]
    if kind == "linear":
        return 1 - np.abs(diff) / span
    if kind == "quadratic":
        return 1 - diff**2 / span**2
    if kind == "ordinal":
        ranks = np.arange(q)
        n_kl = np.abs(ranks[:, None] - ranks[None, :]) + 1
        m = n_kl * (n_kl - 1) / 2
        return 1 - m / m.max() if m.max() > 0 else np.ones((q, q))
    raise ValueError(f"unknown weights {kind!r}")


def _cohen_disagreement(values: np.ndarray, kind: str) -> np.ndarray:
    diff = values[:, None] - values[None, :]
    return np.abs(diff) if kind == "linear" else diff**2


def _ordinal_delta(marginals: np.ndarray) -> np.ndarray:
    """Krippendorff's ordinal δ² (..., q, q) from the coincidence marginals (..., q)."""
    cum = np.cumsum(marginals, axis=-1)
    lo_cum = cum - marginals  # Σ_{g < c}
    # Σ_{g=c..k} n_g for c <= k is cum[k] - lo_cum[c]; symmetric for c > k.
    between = cum[..., None, :] - lo_cum[..., :, None]
    between = np.where(between >= 0, between, np.swapaxes(between, -1, -2))
    half = (marginals[..., :, None] + marginals[..., None, :]) / 2
    return (between - half) ** 2


class _Layout:
    """Where each feature sits in an item's dense vector."""

    def __init__(self, q: int):
        self.q = q
        self.coinc = slice(0, q * q)
        self.gwet_pa = slice(q * q, q * q + len(GWET))
        self.n2 = q * q + len(GWET)
        self.pi = slice(self.n2 + 1, self.n2 + 1 + q)
        self.n1 = self.n2 + 1 + q
        self.size = self.n1 + 1


def _dense_features(counts: np.ndarray, weights: list[np.ndarray], lay: _Layout) -> np.ndarray:
    """Per-item α coincidences and Gwet sums (items x features)."""
    q = lay.q
    m = counts.sum(axis=1)
    dense = np.zeros((len(counts), lay.size))
    pairable = m >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        coinc = (counts[:, :, None] * counts[:, None, :] - np.eye(q) * counts[:, :, None]) / (
            m - 1
        )[:, None, None]
        for w_i, w in enumerate(weights):
            weighted = counts @ w.T  # r*_ik = Σ_l w_kl r_il
            pa = (counts * (weighted - 1)).sum(axis=1) / (m * (m - 1))
            dense[:, lay.gwet_pa.start + w_i] = np.where(pairable, pa, 0.0)
        share = counts / m[:, None]
    dense[:, lay.coinc] = np.where(pairable[:, None], coinc.reshape(len(counts), q * q), 0.0)
    dense[:, lay.n2] = pairable
    rated = m >= 1
    dense[:, lay.pi] = np.where(rated[:, None], share, 0.0)
    dense[:, lay.n1] = rated
    return dense


def _from_totals(
    cohen_t: np.ndarray,
    dense_t: np.ndarray,
    values: np.ndarray,
    weights: list[np.ndarray],
    lay: _Layout,
    n_pairs: int,
    min_overlap: int,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every statistic from totals with a leading replicate axis; also the parts behind them."""
    q = lay.q
    reps = dense_t.shape[0]
    out: dict[str, np.ndarray] = {}
    parts: dict[str, np.ndarray] = {}

    conf = cohen_t.reshape(reps, n_pairs, q, q)
    n = conf.sum(axis=(-2, -1))
    expected = conf.sum(axis=-1)[..., :, None] * conf.sum(axis=-2)[..., None, :]
    for kind in ("linear", "quadratic"):
        w = _cohen_disagreement(values, kind)
        with np.errstate(divide="ignore", invalid="ignore"):
            observed = (conf * w).sum(axis=(-2, -1))
            chance = (expected * w).sum(axis=(-2, -1)) / n
            kappa = 1 - observed / chance
        kappa = np.where((n >= 2) & (chance > _EPS), kappa, np.nan)
        used = (n >= min_overlap) & ~np.isnan(kappa)
        n_used = used.sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(used, kappa, 0.0).sum(axis=-1) / n_used
        out[f"cohen_{kind}"] = np.where(n_used > 0, mean, np.nan)
        parts[f"cohen_{kind}_pairs"] = kappa
    parts["overlap"] = n

    coinc = dense_t[:, lay.coinc].reshape(reps, q, q)
    marg = coinc.sum(axis=-1)
    total = marg.sum(axis=-1)
    for level in ("ordinal", "interval"):
        if level == "interval":
            delta = np.broadcast_to((values[:, None] - values[None, :]) ** 2, (reps, q, q))
        else:
            delta = _ordinal_delta(marg)
        with np.errstate(divide="ignore", invalid="ignore"):
            d_o = (coinc * delta).sum(axis=(-2, -1)) / total
            d_e = (marg[..., :, None] * marg[..., None, :] * delta).sum(axis=(-2, -1)) / (
                total * (total - 1)
            )
            alpha = 1 - d_o / d_e
        out[f"alpha_{level}"] = np.where((total >= 2) & (d_e > _EPS), alpha, np.nan)
        parts[f"alpha_{level}_do"], parts[f"alpha_{level}_de"] = d_o, d_e
    parts["pairable"] = total

    n2 = dense_t[:, lay.n2]
    n1 = dense_t[:, lay.n1]
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = dense_t[:, lay.pi] / n1[:, None]
    spread = (pi * (1 - pi)).sum(axis=-1)
    for w_i, name in enumerate(GWET):
        w = weights[w_i]
        with np.errstate(divide="ignore", invalid="ignore"):
            pa = dense_t[:, lay.gwet_pa.start + w_i] / n2
            pe = w.sum() * spread / (q * (q - 1)) if q > 1 else np.full(reps, np.nan)
            ac = (pa - pe) / (1 - pe)
        out[name] = np.where((n2 >= 1) & (1 - pe > _EPS), ac, np.nan)
        parts[f"{name}_pa"], parts[f"{name}_pe"] = pa, pe
    parts["n2"] = n2
    return out, parts


def _stat(
    name: str, point: dict, parts: dict, boot: dict | None, min_overlap: int, items: int
) -> Stat:
    """One statistic's object: value, reason when undefined, interval, what it used."""
    value = float(point[name][0])
    info: dict[str, Any] = {}
    reason = None
    if name.startswith("cohen_"):
        kappa = parts[f"{name}_pairs"][0]
        overlap = parts["overlap"][0]
        shared = overlap > 0
        used = (overlap >= min_overlap) & ~np.isnan(kappa)
        info = {
            "pairs_used": int(used.sum()),
            "pairs_skipped": int((shared & ~used).sum()),
            "min_overlap": int(min_overlap),
            "items": items,
        }
        if not shared.any():
            reason = "no two annotators share an item"
        elif not (overlap >= min_overlap).any():
            reason = f"no annotator pair shares at least {counted(min_overlap, 'item')}"
        else:
            reason = "every annotator pair's κ is undefined (a single grade)"
    elif name.startswith("alpha_"):
        pairable = float(parts["pairable"][0])
        info = {"pairable_values": round(pairable)}
        reason = (
            "no item has two or more ratings"
            if pairable < 2
            else "a single grade everywhere: expected disagreement is 0"
        )
        if not np.isnan(value):
            info["observed_disagreement"] = float(parts[f"{name}_do"][0])
            info["expected_disagreement"] = float(parts[f"{name}_de"][0])
    else:
        n2 = int(parts["n2"][0])
        info = {"items": n2}
        reason = (
            "no item has two or more ratings"
            if n2 < 1
            else "chance agreement is 1 (a single grade on a scale of one value)"
        )
        if not np.isnan(value):
            info["observed"] = float(parts[f"{name}_pa"][0])
            info["expected"] = float(parts[f"{name}_pe"][0])
    if np.isnan(value):
        return undefined(reason, **info)
    stat: Stat = {"value": value, "undefined_reason": None, "ci": None, **info}
    if boot is not None:
        stat["ci"], stat["ci_replicates"] = percentile_ci(boot[name])
    return stat


def ordinal_figures(
    matrix: np.ndarray,
    *,
    values: Sequence[float],
    clusters: Sequence[int] | np.ndarray | None = None,
    min_overlap: int = DEFAULT_MIN_OVERLAP,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    scale: str | None = None,
) -> dict[str, Any]:
    """Every ordinal agreement figure of a rater x item code matrix (layout in the docstring).

    ``values``: the scale's value of each code, in order. ``clusters``: the sample of each item
    (the bootstrap unit; default each item its own). ``n_boot=0`` skips the intervals.
    """
    vals = np.asarray(values, dtype=np.float64)
    q = len(vals)
    if q < 2 or np.any(np.diff(vals) <= 0):
        raise ValueError("values must be 2 or more increasing numbers")
    r = _ratings(np.asarray(matrix), q)
    lay = _Layout(q)
    weights = [gwet_weights(vals, k) for k in ("identity", "linear", "quadratic", "ordinal")]
    cluster_arr = np.arange(r.n_items) if clusters is None else np.asarray(clusters)
    if len(cluster_arr) != r.n_items:
        raise ValueError("clusters need one entry per item (matrix column)")
    _, item_cluster = np.unique(cluster_arr, return_inverse=True)
    n_clusters = int(item_cluster.max()) + 1 if r.n_items else 0

    p_item, p_i, p_j, p_cell = _pair_observations(r)
    keys, pair_index = np.unique(p_i * r.n_raters + p_j, return_inverse=True)
    n_pairs = len(keys)
    cohen_feature = pair_index.reshape(-1) * q * q + p_cell
    cohen_size = max(n_pairs, 1) * q * q
    dense = _dense_features(r.counts.astype(np.float64), weights, lay)

    cohen_t = np.bincount(cohen_feature, minlength=cohen_size).astype(np.float64)[None]
    point, parts = _from_totals(
        cohen_t, dense.sum(axis=0)[None], vals, weights, lay, max(n_pairs, 1), min_overlap
    )
    if n_pairs == 0:  # no shared items at all: the placeholder pair shares nothing
        parts["overlap"][:] = 0

    boot = None
    if n_boot and n_clusters:
        per_cluster = np.zeros((n_clusters, lay.size))
        np.add.at(per_cluster, item_cluster, dense)
        obs_cluster = item_cluster[p_item]
        rng = np.random.default_rng(seed)
        cohen_b = np.empty((n_boot, cohen_size))
        dense_b = np.empty((n_boot, lay.size))
        for start in range(0, n_boot, _BLOCK):
            stop = min(start + _BLOCK, n_boot)
            # One replicate per draw, as the nominal statistics draw theirs (same streams).
            w = np.concatenate([resample_counts(rng, n_clusters, 1) for _ in range(start, stop)])
            w = w.astype(np.float64)
            dense_b[start:stop] = w @ per_cluster
            for b in range(start, stop):
                cohen_b[b] = np.bincount(
                    cohen_feature, weights=w[b - start][obs_cluster], minlength=cohen_size
                )
        boot, _ = _from_totals(cohen_b, dense_b, vals, weights, lay, max(n_pairs, 1), min_overlap)

    rated = r.m > 0
    items = int(rated.sum())
    figures: dict[str, Any] = {
        "scale": scale,
        "values": [float(v) if not float(v).is_integer() else int(v) for v in vals],
        "items": items,
        "samples": len(np.unique(item_cluster[rated])) if items else 0,
        "votes": len(r.item),
    }
    for name in STATISTICS:
        figures[name] = _stat(name, point, parts, boot, min_overlap, items)
    figures["bootstrap"] = {
        "n_boot": int(n_boot),
        "seed": int(seed),
        "unit": "sample",
        "level": CI_LEVEL,
        "method": "percentile",
    }
    return figures


def weighted_cohen_kappa(
    a: Sequence[int] | np.ndarray,
    b: Sequence[int] | np.ndarray,
    *,
    values: Sequence[float],
    weights: str = "linear",
) -> Stat:
    """Weighted Cohen's κ of two raters' codes (-1 = not rated) on their shared items."""
    if weights not in ("linear", "quadratic"):
        raise ValueError("weights must be 'linear' or 'quadratic'")
    figures = ordinal_figures(np.vstack([a, b]), values=values, min_overlap=2, n_boot=0)
    return figures[f"cohen_{weights}"]


def krippendorff_alpha(matrix: np.ndarray, *, values: Sequence[float], level: str) -> Stat:
    """Krippendorff's α (``ordinal`` or ``interval``) of a rater x item code matrix."""
    if level not in ("ordinal", "interval"):
        raise ValueError("level must be 'ordinal' or 'interval'")
    return ordinal_figures(matrix, values=values, n_boot=0)[f"alpha_{level}"]


def gwet_ac(matrix: np.ndarray, *, values: Sequence[float], weights: str = "identity") -> Stat:
    """Gwet's AC1 (``identity``) or AC2 (``linear``, ``quadratic``, ``ordinal``)."""
    name = "ac1" if weights == "identity" else f"ac2_{weights}"
    if name not in GWET:
        raise ValueError(f"unknown weights {weights!r}")
    return ordinal_figures(matrix, values=values, n_boot=0)[name]


def codes_of(values_matrix: np.ndarray, values: Sequence[float]) -> np.ndarray:
    """Category codes (-1 where NaN) of a matrix of scale values."""
    vals = np.asarray(values, dtype=np.float64)
    x = np.asarray(values_matrix, dtype=np.float64)
    codes = np.full(x.shape, -1, dtype=np.int64)
    present = ~np.isnan(x)
    idx = np.searchsorted(vals, x[present])
    idx_c = np.clip(idx, 0, len(vals) - 1)
    if np.any(vals[idx_c] != x[present]):
        raise ValueError("a rating is not on the scale")
    codes[present] = idx_c
    return codes


def ordinal_figures_from_votes(
    *,
    annotator: np.ndarray,
    item: np.ndarray,
    sample: np.ndarray,
    value: np.ndarray,
    values: Sequence[float],
    **options: Any,
) -> dict[str, Any]:
    """:func:`ordinal_figures` of votes in long form: one (annotator, item, sample, value) each.

    ``item`` is any integer key of what is rated (a (sample, criterion) label, or one response
    of it); ``sample`` is the item's bootstrap cluster. A rater's second vote on an item is an
    error (the caller passes the votes that count).
    """
    annotator = np.asarray(annotator, np.int64)
    item = np.asarray(item, np.int64)
    sample = np.asarray(sample, np.int64)
    raters, rater = np.unique(annotator, return_inverse=True)
    items, column = np.unique(item, return_inverse=True)
    if len(np.unique(rater * max(len(items), 1) + column)) != len(item):
        raise ValueError("a rater has two votes on one item")
    matrix = np.full((len(raters), len(items)), -1, dtype=np.int64)
    matrix[rater, column] = codes_of(np.asarray(value, np.float64), values)
    clusters = np.zeros(len(items), np.int64)
    clusters[column] = sample
    return ordinal_figures(matrix, values=values, clusters=clusters, **options)
