"""Two judges compared on the same rows: paired tests, pure NumPy / SciPy (no Django).

Bootstrap intervals of each judge on its own overlap almost always at the benchmark's size; a
paired test on the same rows can still separate two judges. Per split:

- **per criterion**, the exact McNemar test: ``b`` = rows judge A gets right and judge B wrong,
  ``c`` = the reverse; under the null a discordant row is A's with probability 1/2, so the
  two-sided p is ``min(1, 2 * P(X <= min(b, c)))`` for ``X ~ Binomial(b + c, 1/2)`` (1 when
  ``b + c = 0``). Invalid and missing verdicts and human ties count as wrong, as in the metrics;
- **headline differences** (A minus B, percentage points) of PAcc, CMR, TOS, Avg and Overall,
  with a paired cluster bootstrap: the prompt-cluster bootstrap of :mod:`judging.metrics`, run on
  both judges' per-prompt statistics side by side, so each replicate draws the same prompts for
  both judges. The interval is the 2.5th-97.5th percentile of the replicate differences; the
  two-sided bootstrap p is ``min(1, 2 * min(1 + #(d <= 0), 1 + #(d >= 0)) / (n + 1))`` over the
  ``n`` replicates with a defined difference (a replicate without a conflict prompt has no TOS);
- **Holm's step-down adjustment** over every figure of one comparison (the criteria and the
  headline differences); a figure is significant when its adjusted p is at most ``alpha``.

Deterministic for a given seed: the bootstrap draws come from ``np.random.default_rng(seed)``
exactly as the scorecard's do.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.stats import binom

from .metrics import (
    _bootstrap_totals,
    _ci,
    _point_estimates,
    _ratio,
    encode_predictions,
    published_round,
)

ALPHA = 0.05
N_BOOT = 2000
#: The headline figures compared by the bootstrap, in the leaderboard's column order.
HEADLINE_KEYS: tuple[str, ...] = ("pacc", "cmr", "tos", "avg", "overall")
A_BETTER = "A better"
B_BETTER = "B better"
NOT_DISTINGUISHABLE = "not distinguishable"
UNDEFINED = "n/a"
#: How the headline figures are named on the pages and in the exports.
HEADLINE_LABELS = {"pacc": "PAcc", "cmr": "CMR", "tos": "TOS", "avg": "Avg", "overall": "Overall"}


def p_text(p: float | None) -> str:
    """A p-value for reading: 4 decimals, ``<0.0001`` below, ``n/a`` when untested."""
    if p is None:
        return UNDEFINED
    return "<0.0001" if p < 0.0001 else f"{p:.4f}"


def mcnemar_exact(b: Any, c: Any) -> np.ndarray:
    """Two-sided exact McNemar p-values, elementwise over discordant counts ``b`` and ``c``."""
    b, c = np.asarray(b, dtype=np.int64), np.asarray(c, dtype=np.int64)
    p = 2.0 * binom.cdf(np.minimum(b, c), b + c, 0.5)
    return np.minimum(p, 1.0)


def holm(pvalues: Any) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the given order (NaN: outside the family)."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    present = np.flatnonzero(np.isfinite(p))
    m = len(present)
    if m == 0:
        return out
    order = present[np.argsort(p[present], kind="stable")]
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(stepped, 1.0)
    return out


def bootstrap_pvalue(diffs: np.ndarray) -> float | None:
    """Two-sided bootstrap p of a zero difference from the replicate differences (NaN skipped)."""
    d = diffs[np.isfinite(diffs)]
    if d.size == 0:
        return None
    tail = min(int((d <= 0).sum()), int((d >= 0).sum()))
    return float(min(1.0, 2.0 * (tail + 1) / (d.size + 1)))


@dataclass
class Figure:
    """One tested figure: each judge's value, their difference, the test and its verdict.

    ``key`` is a criterion key (``test`` = ``mcnemar``) or a headline key (``bootstrap``).
    Percentages; ``diff`` = A minus B in points. ``only_a`` / ``only_b`` are McNemar's b and c.
    """

    key: str
    test: str
    a: float | None
    b: float | None
    diff: float | None
    n: int
    p: float | None
    ci: list[float] | None = None
    only_a: int | None = None
    only_b: int | None = None
    p_holm: float | None = None
    significant: bool = False
    verdict: str = UNDEFINED

    @property
    def label(self) -> str:
        return HEADLINE_LABELS.get(self.key, self.key)

    @property
    def p_text(self) -> str:
        return p_text(self.p)

    @property
    def p_holm_text(self) -> str:
        return p_text(self.p_holm)


@dataclass
class PairedComparison:
    """Every figure of one comparison of judge A with judge B on one split."""

    split: str
    criteria: list[Figure]
    headline: list[Figure]
    alpha: float = ALPHA
    n_boot: int = N_BOOT
    seed: int = 0
    family: int = field(default=0)

    def figure(self, key: str) -> Figure | None:
        """The headline figure ``key`` or the criterion ``key`` (headline first)."""
        for fig in (*self.headline, *self.criteria):
            if fig.key == key:
                return fig
        return None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _two(value: Any) -> float | None:
    return None if value is None else float(published_round(value))


def _criteria(rows: Any, codes_a: np.ndarray, codes_b: np.ndarray, split: str) -> list[Figure]:
    """The exact McNemar test per criterion, in the protocol's order."""
    point = _point_estimates(rows, codes_a, split)
    view = rows.split_codes(split)
    right_a = codes_a[view.mask] == view.human
    right_b = codes_b[view.mask] == view.human
    k = len(view.criterion_keys)
    only_a = np.bincount(view.criterion, weights=right_a & ~right_b, minlength=k).astype(int)
    only_b = np.bincount(view.criterion, weights=right_b & ~right_a, minlength=k).astype(int)
    n = np.bincount(view.criterion, minlength=k)
    ok_a = np.bincount(view.criterion, weights=right_a, minlength=k)
    ok_b = np.bincount(view.criterion, weights=right_b, minlength=k)
    p = mcnemar_exact(only_a, only_b)
    out = []
    for key in point.result["per_criterion"]:
        j = point.columns[key]
        acc_a = _two(ok_a[j] / n[j] * 100.0)
        acc_b = _two(ok_b[j] / n[j] * 100.0)
        out.append(
            Figure(
                key=key,
                test="mcnemar",
                a=acc_a,
                b=acc_b,
                diff=_two(acc_a - acc_b),
                n=int(n[j]),
                p=float(p[j]),
                only_a=int(only_a[j]),
                only_b=int(only_b[j]),
            )
        )
    return out


def replicate_figures(point: Any, tot: np.ndarray) -> dict[str, np.ndarray]:
    """Each replicate's headline figures (percent, NaN when undefined) from bootstrap totals.

    ``tot`` holds the replicates' column sums of ``point.stats`` (the layout of the metrics).
    """
    n_crit = point.n_crit
    crit_acc = _ratio(tot[:, 7 : 7 + n_crit], tot[:, 7 + n_crit :])
    rounded = published_round(crit_acc[:, point.order])
    present = np.isfinite(rounded)
    count = present.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        avg = np.where(count > 0, np.where(present, rounded, 0.0).sum(axis=1) / count, np.nan)
    return {
        "overall": _ratio(tot[:, 0], tot[:, 1]),
        "pacc": _ratio(tot[:, 2], np.full(tot.shape[0], point.n_prompts)),
        "tos": _ratio(tot[:, 3], tot[:, 4]),
        "cmr": _ratio(tot[:, 5], tot[:, 6]),
        "avg": published_round(avg),
    }


def _headline(
    rows: Any, codes_a: np.ndarray, codes_b: np.ndarray, split: str, n_boot: int, seed: int
) -> list[Figure]:
    """The headline differences with the paired cluster bootstrap (one draw for both judges)."""
    pa, pb = _point_estimates(rows, codes_a, split), _point_estimates(rows, codes_b, split)
    reps: dict[str, np.ndarray] | None = None
    if n_boot > 0 and pa.n_prompts > 0:
        width = pa.stats.shape[1]
        tot = _bootstrap_totals(np.hstack([pa.stats, pb.stats]), n_boot, seed)
        ra, rb = replicate_figures(pa, tot[:, :width]), replicate_figures(pb, tot[:, width:])
        reps = {key: ra[key] - rb[key] for key in HEADLINE_KEYS}
    units = {"pacc": "prompts", "tos": "conflict_prompts", "cmr": "conflict_pairs"}
    out = []
    for key in HEADLINE_KEYS:
        a, b = pa.result[key]["value"], pb.result[key]["value"]
        defined = a is not None and b is not None
        out.append(
            Figure(
                key=key,
                test="bootstrap",
                a=a,
                b=b,
                diff=_two(a - b) if defined else None,
                n=int(pa.result["counts"][units.get(key, "rows")]),
                p=bootstrap_pvalue(reps[key]) if reps is not None and defined else None,
                ci=_ci(reps[key]) if reps is not None and defined else None,
            )
        )
    return out


def _verdict(fig: Figure, alpha: float) -> None:
    if fig.p_holm is None or fig.diff is None:
        return
    fig.significant = fig.p_holm <= alpha and fig.diff != 0
    if not fig.significant:
        fig.verdict = NOT_DISTINGUISHABLE
    else:
        fig.verdict = A_BETTER if fig.diff > 0 else B_BETTER


def paired_compare(
    rows: Any,
    pred_a: Any,
    pred_b: Any,
    *,
    split: str,
    n_boot: int = N_BOOT,
    seed: int = 0,
    alpha: float = ALPHA,
) -> PairedComparison:
    """Judge A against judge B on ``split`` of ``rows`` (a ScoreInput); predictions align to it.

    Predictions are labels or metric codes (several runs already voted).
    """
    codes_a, codes_b = encode_predictions(pred_a), encode_predictions(pred_b)
    for codes in (codes_a, codes_b):
        if codes.shape != (len(rows),):
            raise ValueError(f"predictions has shape {codes.shape}, expected ({len(rows)},)")
    criteria = _criteria(rows, codes_a, codes_b, split)
    headline = _headline(rows, codes_a, codes_b, split, n_boot, seed)
    figures = [*criteria, *headline]
    raw = np.array([np.nan if f.p is None else f.p for f in figures])
    adjusted = holm(raw)
    for fig, adj in zip(figures, adjusted, strict=True):
        fig.p_holm = None if np.isnan(adj) else float(adj)
        _verdict(fig, alpha)
    return PairedComparison(
        split=split,
        criteria=criteria,
        headline=headline,
        alpha=alpha,
        n_boot=int(n_boot),
        seed=int(seed),
        family=int(np.isfinite(raw).sum()),
    )
