"""Judge metrics of the Multi-Crit protocol (section 7), pure NumPy.

Everything is computed per split and never pooled across splits: a prompt with rows in both
splits is two prompts, one per split, as the published evaluation groups its rows per split.
Inputs are one dataset row per (prompt, criterion) with the human preference (``model_a``,
``model_b`` or ``tie``), and one judge prediction per row. Predictions are integer-coded once
(``encode_predictions``): ``A`` (model_a), ``B`` (model_b), ``INVALID`` (anything else) and
``MISSING`` (no prediction); invalid and missing both count as wrong. A human ``tie`` (code
``HUMAN_TIE``) equals no prediction, so its row always counts as wrong (the published evaluation
compares the labels and a judge answers model_a or model_b), and it conflicts with no criterion.

Figures (percentages, 2 decimals, ``None`` = n/a when the denominator is 0), each
``round(100 * mean, 2)`` with NumPy's rounding (``published_round``), as the published evaluation
rounds its NumPy means:

- per-criterion accuracy; ``overall`` = micro average over rows; ``avg`` = the mean of the
  per-criterion percentages *already rounded to 2 decimals* (in the protocol's criterion order),
  itself rounded the same way, as the published tables compute it;
- ``pacc``: share of prompts whose every present criterion is predicted correctly (a prompt with a
  tie row never is);
- ``tos``: over prompts with at least one conflicting pair (two criteria whose human preferences
  are opposite, model_a vs model_b), the share where the judge gives opposite *valid* predictions
  on at least one of those pairs;
- ``cmr``: over all conflicting pairs of all prompts (pooled), the share where both criteria are
  predicted correctly.

Conflicting pairs are never enumerated: in a prompt with ``nA`` rows preferring A and ``nB``
preferring B there are ``nA * nB`` conflicting pairs, ``cA * cB`` of them fully correct (``cA``,
``cB`` = correct rows of each side), and the judge gives opposite valid verdicts on one of them
exactly when (an A-row predicted A and a B-row predicted B) or (an A-row predicted B and a B-row
predicted A). So every figure comes from per-prompt counts made with ``np.bincount``.

Bootstrap 95% CIs resample prompts (the unit the rows depend on) with replacement: the per-prompt
counts form a matrix ``S`` (prompts x statistics), each replicate is a vector of prompt
multiplicities ``w``, and ``w @ S`` gives every numerator and denominator of the replicate at once.
CIs are the 2.5th and 97.5th percentiles of the replicates (replicates with a zero denominator are
left out), drawn from ``np.random.default_rng(seed)``, so the same seed gives the same CIs. A
replicate's Avg is computed as the point Avg is (rounded criterion accuracies in the protocol's
order, their mean rounded with ``published_round``).

Diagnostics (the paper's discussion of criterion-agnostic judges): ``same_verdict_share`` is the
share of prompts with at least two criteria on which every prediction is valid and identical (all
model_a or all model_b); ``pred_a_share`` is the share of valid predictions that are model_a, next
to ``human_a_share``, the share of rows whose human preference is model_a.

Majority vote (test-time scaling, ``majority_vote``): per row, a run that is invalid or missing
abstains; if more than half of the runs abstain the vote is invalid; otherwise the verdict with
more votes wins and a tie between model_a and model_b votes is invalid. A row missing in every
run stays missing.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aggregation.bootstrap import resample_counts

MODEL_A = "model_a"
MODEL_B = "model_b"
INVALID_LABEL = "invalid"
#: A scalar judge's verdict when its two scores are within the tie margin: wrong, like invalid.
TIE_LABEL = "tie"

MISSING = -1
INVALID = 0
A = 1
B = 2
#: The human code of a ``tie`` row: no prediction code equals it, so the row is always wrong.
HUMAN_TIE = 3
#: The human preferences a dataset row may hold.
PREFERENCES = (MODEL_A, MODEL_B, TIE_LABEL)

#: The protocol's criterion order per split (paper column order); unknown keys follow, sorted.
CRITERIA_ORDER: dict[str, tuple[str, ...]] = {
    "open_ended": (
        "completeness",
        "visual-grounding",
        "hallucination",
        "expressiveness",
        "clarity",
    ),
    "reasoning": ("grounding", "logic", "hallucination", "exploration", "efficiency"),
}
SPLIT_ORDER: tuple[str, ...] = ("open_ended", "reasoning")

_CI_LEVEL = 95.0
# Bootstrap replicates are drawn in blocks so that the multiplicity matrix stays near this size.
_BOOT_BLOCK_CELLS = 4_000_000


def _str_array(values: Any) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind not in "US":
        array = array.astype(str)
    return array


@dataclass(frozen=True)
class SplitCodes:
    """One split's rows as integer codes: prompt and criterion inverse codes, human verdicts."""

    mask: np.ndarray
    prompt_keys: np.ndarray
    prompt: np.ndarray
    criterion_keys: np.ndarray
    criterion: np.ndarray
    human: np.ndarray


@dataclass
class ScoreInput:
    """The dataset side of scoring: one entry per dataset row, as equally long string arrays.

    ``preference`` is ``model_a``, ``model_b`` or ``tie``. ``warnings`` carries what the reader of
    the rows noticed without refusing them (tie labels, prompts in two splits), for the user.
    Treat the arrays as read-only: the integer codes of each split are cached on first use.
    """

    question_id: np.ndarray
    prompt_id: np.ndarray
    split: np.ndarray
    criterion: np.ndarray
    preference: np.ndarray
    warnings: list[str] = field(default_factory=list, compare=False)
    _codes: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("question_id", "prompt_id", "split", "criterion", "preference"):
            setattr(self, name, _str_array(getattr(self, name)))
        lengths = {len(getattr(self, n)) for n in ("question_id", "prompt_id", "split")}
        lengths |= {len(self.criterion), len(self.preference)}
        if len(lengths) != 1:
            raise ValueError("ScoreInput arrays must all have the same length")
        bad = ~np.isin(self.preference, PREFERENCES)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"row {i} ({self.question_id[i]}): preference must be model_a, model_b or tie, "
                f"got {self.preference[i]!r}"
            )

    def __len__(self) -> int:
        return len(self.question_id)

    @property
    def splits(self) -> list[str]:
        """The splits present, protocol splits first."""
        present = set(np.unique(self.split).tolist())
        return [s for s in SPLIT_ORDER if s in present] + sorted(present - set(SPLIT_ORDER))

    def index(self) -> dict[str, int]:
        """Map question_id -> row position."""
        if "index" not in self._codes:
            self._codes["index"] = {q: i for i, q in enumerate(self.question_id.tolist())}
        return self._codes["index"]

    def split_codes(self, split: str) -> SplitCodes:
        """Integer codes of one split's rows (computed once, reused by every run scored)."""
        key = ("split", split)
        if key not in self._codes:
            mask = self.split == split
            prompt_keys, prompt = np.unique(self.prompt_id[mask], return_inverse=True)
            crit_keys, crit = np.unique(self.criterion[mask], return_inverse=True)
            pref = self.preference[mask]
            human = np.select([pref == MODEL_A, pref == MODEL_B], [A, B], HUMAN_TIE)
            human = human.astype(np.int8)
            self._codes[key] = SplitCodes(mask, prompt_keys, prompt, crit_keys, crit, human)
        return self._codes[key]

    def take(self, positions: np.ndarray) -> ScoreInput:
        """The rows at the given positions (a boolean mask or indices)."""
        return ScoreInput(
            question_id=self.question_id[positions],
            prompt_id=self.prompt_id[positions],
            split=self.split[positions],
            criterion=self.criterion[positions],
            preference=self.preference[positions],
            warnings=list(self.warnings),
        )


def criteria_in_order(split: str, keys: Sequence[str]) -> list[str]:
    """Criterion keys in the paper's column order for the split."""
    known = [k for k in CRITERIA_ORDER.get(split, ()) if k in set(keys)]
    return known + sorted(set(keys) - set(known))


def encode_predictions(values: Any) -> np.ndarray:
    """Integer-code predictions: A, B, INVALID (any other value), MISSING (None, NaN or "")."""
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        codes = array.astype(np.int8)
        codes[(codes < MISSING) | (codes > B)] = INVALID
        return codes
    if array.dtype.kind == "f":
        # Only NaN (the missing marker of pandas and of aligned arrays) is meaningful here.
        codes = np.full(array.shape, INVALID, dtype=np.int8)
        codes[np.isnan(array)] = MISSING
        return codes
    codes = np.full(array.shape, INVALID, dtype=np.int8)
    if array.dtype == object:
        # x != x is NaN, the missing marker of pandas columns.
        missing = np.array([x is None or x != x or x == "" for x in array.tolist()], dtype=bool)
        codes[missing] = MISSING
        # str() keeps comparisons elementwise for mixed objects.
        as_str = np.where(missing, "", array).astype(str)
    else:
        as_str = array.astype(str)
        codes[as_str == ""] = MISSING
    codes[as_str == MODEL_A] = A
    codes[as_str == MODEL_B] = B
    return codes


def decode_predictions(codes: np.ndarray) -> np.ndarray:
    """Labels for codes: model_a, model_b, invalid, or None for missing."""
    labels = np.array([None, INVALID_LABEL, MODEL_A, MODEL_B], dtype=object)
    return labels[np.asarray(codes, dtype=np.int64) + 1]


def majority_vote_codes(runs: np.ndarray) -> np.ndarray:
    """Vote over a (runs x rows) code matrix with the module's tie rule; returns codes."""
    runs = np.asarray(runs, dtype=np.int8)
    if runs.ndim != 2 or runs.shape[0] == 0:
        raise ValueError("majority vote needs a (runs x rows) matrix with at least one run")
    n_runs = runs.shape[0]
    votes_a = (runs == A).sum(axis=0)
    votes_b = (runs == B).sum(axis=0)
    abstain = n_runs - votes_a - votes_b
    out = np.full(runs.shape[1], INVALID, dtype=np.int8)
    decided = 2 * abstain <= n_runs
    out[decided & (votes_a > votes_b)] = A
    out[decided & (votes_b > votes_a)] = B
    out[(runs == MISSING).all(axis=0)] = MISSING
    return out


def majority_vote(runs: Sequence[np.ndarray]) -> np.ndarray:
    """Combine several runs of one judge per row (labels or codes); returns labels.

    Invalid and missing runs abstain; more than half abstaining, or a tie between model_a and
    model_b votes, gives ``"invalid"``; a row missing in every run stays missing (``None``).
    """
    if len(runs) == 0:
        raise ValueError("majority vote needs at least one run")
    matrix = np.stack([encode_predictions(r) for r in runs])
    return decode_predictions(majority_vote_codes(matrix))


def published_round(value: Any) -> Any:
    """``round(x, 2)`` of a NumPy float, as the published evaluation rounds every figure.

    NumPy scales by 100, rounds half to even with ``rint`` and scales back, which differs from
    Python's correctly rounded ``round(float, 2)`` for some values: the mean of 85.71 and 0.0 is
    42.855, 42.86 here and 42.85 with Python's ``round``. Elementwise on arrays.
    """
    return np.round(np.asarray(value, dtype=np.float64), 2)


def _pct(num: float, den: float) -> float | None:
    """``round(mean * 100, 2)`` exactly as the published evaluation computes it (mean first)."""
    if den == 0:
        return None
    return float(published_round(np.float64(num) / np.float64(den) * 100.0))


def _avg(rounded: Sequence[float | None]) -> float | None:
    """The published Avg: the mean of the rounded per-criterion accuracies, rounded again."""
    present = [v for v in rounded if v is not None]
    return float(published_round(np.mean(present))) if present else None


def _ci(samples: np.ndarray) -> list[float] | None:
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return None
    lo, hi = np.percentile(samples, [(100 - _CI_LEVEL) / 2, 100 - (100 - _CI_LEVEL) / 2])
    return [round(float(lo), 2), round(float(hi), 2)]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``mean * 100`` in the order the point figures compute it; NaN where ``den`` is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1) * 100.0, np.nan)


def _bootstrap_totals(stats: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """Column sums of ``stats`` (prompts x k) under ``n_boot`` resamplings of the prompts."""
    n_prompts = stats.shape[0]
    rng = np.random.default_rng(seed)
    block = max(1, min(n_boot, _BOOT_BLOCK_CELLS // max(n_prompts, 1)))
    out = np.empty((n_boot, stats.shape[1]), dtype=np.float64)
    for start in range(0, n_boot, block):
        b = min(block, n_boot - start)
        weights = resample_counts(rng, n_prompts, b)
        out[start : start + b] = weights.astype(np.float64) @ stats
    return out


@dataclass
class _Point:
    """Point estimates of one split plus what the bootstrap needs to add CIs."""

    result: dict
    stats: np.ndarray  # prompts x statistics, column layout as in _fill_cis
    n_prompts: int
    n_crit: int
    columns: dict[str, int]
    order: list[int]  # the criterion columns in the protocol's order (the order Avg sums in)


def _point_estimates(rows: ScoreInput, predictions: Any, split: str) -> _Point:
    codes_all = encode_predictions(predictions)
    if codes_all.shape != (len(rows),):
        raise ValueError(f"predictions has shape {codes_all.shape}, expected ({len(rows)},)")
    view = rows.split_codes(split)
    codes = codes_all[view.mask]
    n_rows = len(codes)
    human, prompt, crit = view.human, view.prompt, view.criterion
    prompt_keys, crit_keys = view.prompt_keys, view.criterion_keys
    n_prompts, n_crit = len(prompt_keys), len(crit_keys)

    correct = codes == human  # never on a tie row: no prediction code is HUMAN_TIE
    valid = codes > INVALID
    is_a, is_b = human == A, human == B  # a tie row is on neither side of a conflict

    def per_prompt(weights: np.ndarray) -> np.ndarray:
        return np.bincount(prompt, weights=weights, minlength=n_prompts)

    rows_p = np.bincount(prompt, minlength=n_prompts).astype(np.float64)
    correct_p = per_prompt(correct)
    n_a, n_b = per_prompt(is_a), per_prompt(is_b)
    c_a, c_b = per_prompt(is_a & correct), per_prompt(is_b & correct)
    # A-preferred rows predicted B, B-preferred rows predicted A (wrong but valid).
    a_as_b, b_as_a = per_prompt(is_a & (codes == B)), per_prompt(is_b & (codes == A))
    pred_a_p, pred_b_p = per_prompt(codes == A), per_prompt(codes == B)

    all_correct = (correct_p == rows_p).astype(np.float64)
    conflict = ((n_a > 0) & (n_b > 0)).astype(np.float64)
    sensitive = conflict * (((c_a > 0) & (c_b > 0)) | ((a_as_b > 0) & (b_as_a > 0)))
    pairs = n_a * n_b
    matched = c_a * c_b
    multi = (rows_p >= 2).astype(np.float64)
    same = multi * ((pred_a_p == rows_p) | (pred_b_p == rows_p))

    # Dense prompt x criterion counts (criteria are few) for per-criterion CIs.
    cell = prompt * n_crit + crit
    n_pc = np.bincount(cell, minlength=n_prompts * n_crit).reshape(n_prompts, n_crit)
    ok_pc = np.bincount(cell, weights=correct, minlength=n_prompts * n_crit)
    ok_pc = ok_pc.reshape(n_prompts, n_crit)

    order = criteria_in_order(split, crit_keys.tolist())
    col = {k: i for i, k in enumerate(crit_keys.tolist())}
    n_c, ok_c = n_pc.sum(axis=0), ok_pc.sum(axis=0)

    per_criterion: dict[str, dict] = {}
    for key in order:
        j = col[key]
        per_criterion[key] = {
            "acc": _pct(ok_c[j], n_c[j]),
            "n": int(n_c[j]),
            "correct": int(ok_c[j]),
            "ci": None,
        }
    avg_value = _avg([v["acc"] for v in per_criterion.values()])

    n_conflict = int(conflict.sum())
    n_pairs = int(pairs.sum())
    n_invalid = int((codes == INVALID).sum())
    n_missing = int((codes == MISSING).sum())
    n_valid = int(valid.sum())
    n_multi = int(multi.sum())

    result: dict[str, Any] = {
        "split": split,
        "per_criterion": per_criterion,
        "overall": {
            "value": _pct(correct.sum(), n_rows),
            "ci": None,
            "correct": int(correct.sum()),
            "rows": n_rows,
        },
        "avg": {"value": avg_value, "ci": None, "criteria": n_crit},
        "pacc": {
            "value": _pct(all_correct.sum(), n_prompts),
            "ci": None,
            "correct_prompts": int(all_correct.sum()),
            "prompts": n_prompts,
        },
        "tos": {
            "value": _pct(sensitive.sum(), n_conflict),
            "ci": None,
            "sensitive_prompts": int(sensitive.sum()),
            "conflict_prompts": n_conflict,
        },
        "cmr": {
            "value": _pct(matched.sum(), n_pairs),
            "ci": None,
            "matched_pairs": int(matched.sum()),
            "conflict_pairs": n_pairs,
        },
        "counts": {
            "rows": n_rows,
            "prompts": n_prompts,
            "criteria": n_crit,
            "conflict_prompts": n_conflict,
            "conflict_pairs": n_pairs,
            "valid": n_valid,
            "invalid": n_invalid,
            "missing": n_missing,
            "human_ties": int((human == HUMAN_TIE).sum()),
        },
        "diagnostics": {
            "same_verdict_share": _pct(same.sum(), n_multi),
            "same_verdict_prompts": int(same.sum()),
            "multi_criterion_prompts": n_multi,
            "pred_a_share": _pct(pred_a_p.sum(), n_valid),
            "human_a_share": _pct(n_a.sum(), n_rows),
        },
    }

    stats = np.column_stack(
        [correct_p, rows_p, all_correct, sensitive, conflict, matched, pairs, ok_pc, n_pc]
    )
    return _Point(result, stats, n_prompts, n_crit, col, [col[k] for k in order])


def _fill_cis(point: _Point, tot: np.ndarray) -> None:
    """Write the percentile CIs from bootstrap column totals (replicates x statistics)."""
    result, n_crit = point.result, point.n_crit
    n_boot = tot.shape[0]
    result["overall"]["ci"] = _ci(_ratio(tot[:, 0], tot[:, 1]))
    result["pacc"]["ci"] = _ci(_ratio(tot[:, 2], np.full(n_boot, point.n_prompts)))
    result["tos"]["ci"] = _ci(_ratio(tot[:, 3], tot[:, 4]))
    result["cmr"]["ci"] = _ci(_ratio(tot[:, 5], tot[:, 6]))
    crit_acc = _ratio(tot[:, 7 : 7 + n_crit], tot[:, 7 + n_crit :])
    for key, per in result["per_criterion"].items():
        per["ci"] = _ci(crit_acc[:, point.columns[key]])
    # A replicate can lose every prompt of a rare criterion; nanmean skips it, as the
    # published Avg only averages criteria that are present. NumPy sums fewer than 8 values in
    # order, so this equals the mean of the present ones bit for bit (a split has 5 criteria).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        avg_boot = np.nanmean(published_round(crit_acc[:, point.order]), axis=1)
    result["avg"]["ci"] = _ci(published_round(avg_boot))


def score_many(
    rows: ScoreInput,
    predictions: Sequence[Any],
    *,
    split: str,
    n_boot: int = 1000,
    seed: int = 0,
) -> list[dict]:
    """``score_split`` for several prediction arrays sharing one set of bootstrap replicates.

    Each result equals ``score_split`` of that array with the same seed; drawing the prompt
    multiplicities once for all of them is what makes scoring many runs cheap.
    """
    points = [_point_estimates(rows, p, split) for p in predictions]
    n_prompts = points[0].n_prompts if points else 0
    for point in points:
        point.result["bootstrap"] = {
            "n_boot": int(n_boot) if n_prompts else 0,
            "seed": int(seed),
            "unit": "prompt",
        }
    if n_boot > 0 and n_prompts > 0:
        widths = [p.stats.shape[1] for p in points]
        tot = _bootstrap_totals(np.hstack([p.stats for p in points]), n_boot, seed)
        edges = np.cumsum([0, *widths])
        for point, lo, hi in zip(points, edges[:-1], edges[1:], strict=True):
            _fill_cis(point, tot[:, lo:hi])
    return [p.result for p in points]


def score_split(
    rows: ScoreInput,
    predictions: Any,
    *,
    split: str,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict:
    """Every figure and count of one split; ``predictions`` (labels or codes) align to ``rows``."""
    return score_many(rows, [predictions], split=split, n_boot=n_boot, seed=seed)[0]


def score_all(rows: ScoreInput, predictions: Any, **kw: Any) -> dict[str, dict]:
    """``score_split`` for every split present, protocol splits first (never pooled)."""
    codes = encode_predictions(predictions)
    return {split: score_split(rows, codes, split=split, **kw) for split in rows.splits}


def score_runs(rows: ScoreInput, runs: Sequence[Any], **kw: Any) -> dict:
    """Scores of every run and of their majority vote: ``{"runs": [...], "vote": {...}}``.

    With a single run the vote is that run (the same dict). All runs and the vote share one set
    of bootstrap replicates per split.
    """
    if len(runs) == 0:
        raise ValueError("score_runs needs at least one run")
    matrix = np.stack([encode_predictions(r) for r in runs])
    if len(runs) == 1:
        single = score_all(rows, matrix[0], **kw)
        return {"runs": [single], "vote": single, "n_runs": 1}
    arrays = [*matrix, majority_vote_codes(matrix)]
    by_split = {split: score_many(rows, arrays, split=split, **kw) for split in rows.splits}
    per_run = [{split: by_split[split][i] for split in by_split} for i in range(len(runs))]
    vote = {split: results[-1] for split, results in by_split.items()}
    return {"runs": per_run, "vote": vote, "n_runs": len(runs)}


def tie_margin_grid(score_a: np.ndarray, score_b: np.ndarray, points: int = 21) -> list[float]:
    """0 and the quantiles of the score gaps ``|a - b|`` (3 significant digits): the margins."""
    gaps = np.abs(np.asarray(score_a, np.float64) - np.asarray(score_b, np.float64))
    gaps = gaps[~np.isnan(gaps)]
    if not len(gaps):
        return [0.0]
    qs = np.quantile(gaps, np.linspace(0, 1, points))
    return sorted({0.0, *(float(f"{q:.3g}") for q in qs)})


def tie_margin_sweep(
    rows: ScoreInput,
    score_a: np.ndarray,
    score_b: np.ndarray,
    *,
    split: str,
    margins: Sequence[float] | None = None,
) -> list[dict]:
    """Point figures (no CIs) of a scalar judge on ``split`` at each tie margin δ.

    Each point: ``margin``, ``overall``, ``avg``, ``pacc``, ``tos``, ``cmr`` (percent or None)
    and ``ties`` (rows of the split whose scores are within δ) out of ``scored``.
    """
    from .parsing import verdicts_from_scores

    mask = rows.split == split
    a = np.asarray(score_a, np.float64)
    b = np.asarray(score_b, np.float64)
    if margins is None:
        margins = tie_margin_grid(a[mask], b[mask])
    scored = int((mask & ~np.isnan(a - b)).sum())
    points = []
    for margin in margins:
        labels = verdicts_from_scores(a, b, margin)
        fig = score_split(rows, labels, split=split, n_boot=0)
        points.append(
            {
                "margin": float(margin),
                **{k: (fig.get(k) or {}).get("value") for k in ("overall", "avg", "pacc")},
                **{k: (fig.get(k) or {}).get("value") for k in ("tos", "cmr")},
                "ties": int((labels[mask] == TIE_LABEL).sum()),
                "scored": scored,
            }
        )
    return points
