"""Prediction-powered judge evaluation (PPI++), pure NumPy.

A judge's accuracy is known exactly only where humans labeled every row. When a random subset of
a pool has human labels and a *reference* (a judge panel or a strong judge) answered on the whole
pool, prediction-powered inference (Angelopoulos et al., Science 2023; PPI++, Angelopoulos, Duchi
and Zrnic 2023) combines the two: the reference's agreement with the judge on the whole pool,
corrected by the gap measured where human labels exist.

For a target θ (a mean over the pool) with ``Y`` known on the ``n`` labeled items and a proxy
``Ŷ`` known everywhere, the PPI++ estimate with tuning ``λ`` is

    θ̂_λ = λ · mean(Ŷ over the N unlabeled items) + mean(Y − λŶ over the n labeled items)

and its CLT interval is ``θ̂_λ ± z · sqrt(λ² Var(Ŷ_u) / N + Var(Y − λŶ_l) / n)``. The two terms
come from disjoint items, so they are independent, as PPI++ states it. Power tuning picks the
variance-minimising ``λ = Cov(Y, Ŷ_l) / ((1 + n/N) · Var(Ŷ))`` (``Var(Ŷ)`` over all n + N items),
clipped to [0, 1]: ``λ = 0`` is the human-only mean, ``λ = 1`` plain PPI. The *effective number of
human labels* is the human-only sample size whose interval would be as wide: ``Var(Y) / se²``.

Targets (one split's rows, integer codes of :mod:`judging.metrics`):

- per-criterion accuracy: ``Y = 1{judge = human}`` on labeled rows, ``Ŷ = 1{judge = reference}``
  (a valid verdict equal to the reference's) on every row;
- PAcc: the unit is the prompt: ``Y`` = every row of the prompt right, ``Ŷ`` = every row agrees
  with the reference; a prompt is labeled when all its rows are.

Every group (criterion) is computed at once with ``np.bincount``. Figures are percentages.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from judging.metrics import INVALID, ScoreInput, criteria_in_order, published_round

#: The default interval level.
LEVEL = 0.95


def z_value(level: float) -> float:
    """The two-sided normal quantile for ``level`` (1.96 at 0.95)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"the interval level is between 0 and 1, not {level!r}")
    return NormalDist().inv_cdf(0.5 + level / 2)


@dataclass(frozen=True)
class PPIResult:
    """PPI++ and human-only figures per group (arrays of the groups' length, NaN = n/a)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    lam: np.ndarray
    se: np.ndarray
    effective_n: np.ndarray
    labeled: np.ndarray
    unlabeled: np.ndarray
    human_estimate: np.ndarray
    human_low: np.ndarray
    human_high: np.ndarray


def _sums(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    return np.bincount(group, weights=values, minlength=n_groups).astype(np.float64)


def _divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def tuned_lambda(
    n: np.ndarray, big_n: np.ndarray, cov: np.ndarray, var_all: np.ndarray
) -> np.ndarray:
    """PPI++ power tuning: ``Cov(Y, Ŷ) / ((1 + n/N) Var(Ŷ))`` clipped to [0, 1] (0 if undefined)."""
    lam = _divide(cov, (1.0 + _divide(n, big_n)) * var_all)
    return np.clip(np.nan_to_num(lam, nan=0.0, posinf=0.0, neginf=0.0), 0.0, 1.0)


def ppi_grouped(
    group_labeled: np.ndarray,
    y: np.ndarray,
    yhat_labeled: np.ndarray,
    group_unlabeled: np.ndarray,
    yhat_unlabeled: np.ndarray,
    n_groups: int,
    *,
    level: float = LEVEL,
    lam: float | None = None,
) -> PPIResult:
    """PPI++ mean estimates of every group at once (``lam`` None: tuned per group).

    Variances are the plug-in ones (divided by the count), as the CLT interval uses them; the
    tuning's ``Var(Ŷ)`` is the sample variance of all n + N proxies.
    """
    gl, gu = np.asarray(group_labeled, np.int64), np.asarray(group_unlabeled, np.int64)
    y, hl = np.asarray(y, np.float64), np.asarray(yhat_labeled, np.float64)
    hu = np.asarray(yhat_unlabeled, np.float64)
    n, big_n = np.bincount(gl, minlength=n_groups), np.bincount(gu, minlength=n_groups)
    n, big_n = n.astype(np.float64), big_n.astype(np.float64)
    mean_y, mean_hl = _divide(_sums(gl, y, n_groups), n), _divide(_sums(gl, hl, n_groups), n)
    mean_hu = _divide(_sums(gu, hu, n_groups), big_n)
    var_y = np.maximum(_divide(_sums(gl, y * y, n_groups), n) - mean_y**2, 0.0)
    var_hl = np.maximum(_divide(_sums(gl, hl * hl, n_groups), n) - mean_hl**2, 0.0)
    var_hu = np.maximum(_divide(_sums(gu, hu * hu, n_groups), big_n) - mean_hu**2, 0.0)
    cov = _divide(_sums(gl, y * hl, n_groups), n) - mean_y * mean_hl
    total = n + big_n
    sum_all = _sums(gl, hl, n_groups) + _sums(gu, hu, n_groups)
    sq_all = _sums(gl, hl * hl, n_groups) + _sums(gu, hu * hu, n_groups)
    var_all = np.maximum(_divide(sq_all - _divide(sum_all**2, total), total - 1), 0.0)
    tuned = lam is None
    lams = tuned_lambda(n, big_n, cov, var_all) if tuned else np.full(n_groups, float(lam))
    lams = np.where(big_n > 0, lams, 0.0)  # no unlabeled item: nothing to borrow from
    estimate = mean_y + lams * np.where(big_n > 0, mean_hu - mean_hl, 0.0)
    rect = np.maximum(var_y + lams**2 * var_hl - 2 * lams * cov, 0.0)
    se = np.sqrt(_divide(rect, n) + np.where(big_n > 0, _divide(lams**2 * var_hu, big_n), 0.0))
    human_se = np.sqrt(_divide(var_y, n))
    z = z_value(level)
    undefined = n < 2
    estimate = np.where(undefined, np.nan, estimate)
    mean_y = np.where(undefined, np.nan, mean_y)
    se = np.where(undefined, np.nan, se)
    human_se = np.where(undefined, np.nan, human_se)
    return PPIResult(
        estimate=estimate,
        low=estimate - z * se,
        high=estimate + z * se,
        lam=np.where(undefined, np.nan, lams),
        se=se,
        effective_n=_divide(np.where(undefined, np.nan, var_y), se**2),
        labeled=n.astype(np.int64),
        unlabeled=big_n.astype(np.int64),
        human_estimate=mean_y,
        human_low=mean_y - z * human_se,
        human_high=mean_y + z * human_se,
    )


def ppi_mean(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_unlabeled: np.ndarray,
    *,
    level: float = LEVEL,
    lam: float | None = None,
) -> PPIResult:
    """PPI++ estimate of one mean: ``y``, ``yhat`` on the labeled items; the unlabeled proxies."""
    y = np.asarray(y)
    yhat_unlabeled = np.asarray(yhat_unlabeled)
    return ppi_grouped(
        np.zeros(len(y), np.int64),
        y,
        yhat,
        np.zeros(len(yhat_unlabeled), np.int64),
        yhat_unlabeled,
        1,
        level=level,
        lam=lam,
    )


def correct_and_agree(
    human: np.ndarray, judge: np.ndarray, reference: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the judge equals the human label (Y); a valid judge verdict equals the reference's
    (Ŷ). Codes as in :mod:`judging.metrics` (a human tie is never equalled)."""
    judge = np.asarray(judge)
    valid = judge > INVALID
    return valid & (judge == np.asarray(human)), valid & (judge == np.asarray(reference))


def _split_and_estimate(
    groups: np.ndarray,
    y: np.ndarray,
    yhat: np.ndarray,
    labeled: np.ndarray,
    n_groups: int,
    *,
    level: float,
    lam: float | None,
) -> PPIResult:
    """``ppi_grouped`` with the units split into the labeled ones and the rest of the pool."""
    labeled = np.asarray(labeled, dtype=bool)
    return ppi_grouped(
        groups[labeled],
        y[labeled],
        yhat[labeled],
        groups[~labeled],
        yhat[~labeled],
        n_groups,
        level=level,
        lam=lam,
    )


def ppi_accuracy(
    criterion: np.ndarray,
    human: np.ndarray,
    judge: np.ndarray,
    reference: np.ndarray,
    labeled: np.ndarray,
    n_criteria: int,
    *,
    level: float = LEVEL,
    lam: float | None = None,
) -> PPIResult:
    """Per-criterion accuracy: one group per criterion code (``criterion`` in 0..n_criteria-1)."""
    y, yhat = correct_and_agree(human, judge, reference)
    groups = np.asarray(criterion, np.int64)
    return _split_and_estimate(groups, y, yhat, labeled, n_criteria, level=level, lam=lam)


def prompt_outcomes(
    prompt: np.ndarray, y: np.ndarray, yhat: np.ndarray, labeled: np.ndarray, n_prompts: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per prompt: every row right, every row agreeing with the reference, every row labeled."""
    prompt = np.asarray(prompt, np.int64)
    rows = np.bincount(prompt, minlength=n_prompts)

    def every(flags: np.ndarray) -> np.ndarray:
        return (rows > 0) & (np.bincount(prompt, weights=flags, minlength=n_prompts) == rows)

    return every(y), every(yhat), every(np.asarray(labeled, dtype=bool))


def ppi_pacc(
    prompt: np.ndarray,
    human: np.ndarray,
    judge: np.ndarray,
    reference: np.ndarray,
    labeled: np.ndarray,
    n_prompts: int,
    *,
    level: float = LEVEL,
    lam: float | None = None,
) -> PPIResult:
    """PAcc, the prompt as the unit (``prompt`` codes in 0..n_prompts-1)."""
    y, yhat = correct_and_agree(human, judge, reference)
    y_p, yhat_p, labeled_p = prompt_outcomes(prompt, y, yhat, labeled, n_prompts)
    groups = np.zeros(n_prompts, np.int64)  # one group: every prompt
    return _split_and_estimate(groups, y_p, yhat_p, labeled_p, 1, level=level, lam=lam)


def _pct(value: float) -> float | None:
    return None if not np.isfinite(value) else float(published_round(100.0 * value))


def _ci(low: float, high: float) -> list[float | None] | None:
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    return [_pct(max(low, 0.0)), _pct(min(high, 1.0))]


def entry(result: PPIResult, i: int = 0, *, full: float | None = None) -> dict[str, Any]:
    """One group's figures, percentages (interval clipped to 0..100), as the scorecard keeps them.

    ``full``: the figure on every human label, when all are known (for checking).
    """
    lam, eff = result.lam[i], result.effective_n[i]
    out: dict[str, Any] = {
        "estimate": _pct(result.estimate[i]),
        "ci": _ci(result.low[i], result.high[i]),
        "lambda": None if not np.isfinite(lam) else round(float(lam), 3),
        "effective_n": None if not np.isfinite(eff) else round(float(eff), 1),
        "labeled": int(result.labeled[i]),
        "pool": int(result.labeled[i] + result.unlabeled[i]),
        "human_only": {
            "estimate": _pct(result.human_estimate[i]),
            "ci": _ci(result.human_low[i], result.human_high[i]),
        },
    }
    if full is not None:
        out["full"] = _pct(full)
    return out


def split_figures(
    rows: ScoreInput,
    split: str,
    judge: np.ndarray,
    reference: np.ndarray,
    labeled: np.ndarray,
    *,
    reference_name: str,
    level: float = LEVEL,
    with_full: bool = False,
) -> dict[str, Any]:
    """The PPI figures of one split: per criterion (protocol order) and PAcc.

    ``judge``, ``reference`` (prediction codes) and ``labeled`` (bool) are per row of ``rows``;
    ``with_full`` adds each figure on every human label (when all labels are known).
    """
    view = rows.split_codes(split)
    judge, reference = np.asarray(judge)[view.mask], np.asarray(reference)[view.mask]
    labeled = np.asarray(labeled, dtype=bool)[view.mask]
    n_crit, n_prompts = len(view.criterion_keys), len(view.prompt_keys)
    acc = ppi_accuracy(view.criterion, view.human, judge, reference, labeled, n_crit, level=level)
    pacc = ppi_pacc(view.prompt, view.human, judge, reference, labeled, n_prompts, level=level)
    y, yhat = correct_and_agree(view.human, judge, reference)
    full_acc = _divide(
        _sums(view.criterion, y, n_crit), np.bincount(view.criterion, minlength=n_crit)
    )
    y_p, _, _ = prompt_outcomes(view.prompt, y, yhat, labeled, n_prompts)
    keys = view.criterion_keys.tolist()
    return {
        "reference": reference_name,
        "level": level,
        "labeled": int(labeled.sum()),
        "pool": len(labeled),
        "per_criterion": {
            key: entry(acc, keys.index(key), full=full_acc[keys.index(key)] if with_full else None)
            for key in criteria_in_order(split, keys)
        },
        "pacc": entry(pacc, full=float(y_p.mean()) if with_full and n_prompts else None),
    }
