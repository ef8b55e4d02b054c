"""The Alternative Annotator Test: could a judge replace one of the annotators? (NumPy, no Django.)

After Calderon, Reichart and Dror, "The Alternative Annotator Test for LLM-as-a-Judge" (ACL
2025). Votes come as an annotator x item matrix of category codes (``0 .. K-1``, ``-1`` where the
annotator did not vote on the item); the judge's labels as one code per item, any negative code
(invalid, missing) agreeing with nobody.

The procedure, for each annotator ``j`` in turn (leave one annotator out):

- on every item ``j`` voted on with at least one other vote, the **alignment** of a label with
  the other annotators is its accuracy against their labels (the share of the others who gave
  it): ``S_judge(i, j)`` for the judge's label, ``S_human(i, j)`` for ``j``'s own;
- the indicators ``W_judge = [S_judge >= S_human]`` and ``W_human = [S_human >= S_judge]`` (both
  1 on a tie); their means are the advantage probabilities ``rho_judge(j)`` and ``rho_human(j)``;
- a one-sided paired t-test of ``H0: rho_judge(j) <= rho_human(j) - epsilon`` against
  ``H1: rho_judge(j) > rho_human(j) - epsilon`` on the per-item differences
  ``W_judge - W_human``, i.e. a one-sample t-test of their mean against ``-epsilon`` with the
  alternative "greater" (as ``scipy.stats.ttest_1samp(d, -epsilon, alternative="greater")``).
  Differences that are all equal give ``t = +-inf``: p is 0 when their mean is above
  ``-epsilon`` and 1 otherwise (as scipy);
- the annotators' p-values are adjusted together by the Benjamini-Yekutieli procedure at level
  ``alpha`` (false discovery rate under any dependence, as statsmodels' ``fdr_by``);
- the **winning rate** ``omega`` is the share of the tested annotators whose H0 is rejected; the
  judge **passes** (could replace an annotator) when ``omega >= 0.5``.

``epsilon`` is the cost-benefit margin granted to the judge for being cheaper and faster. The
paper's rule of thumb: 0.2 for expert annotators, 0.15 for skilled ones (trained workers,
students), 0.1 for crowd workers; the default here is 0.2, as in the paper's own examples.

Requirements (the paper's guidance): at least 3 annotators, and at least 30 items per annotator
for the t-test's normality assumption (50 to 100 are advised). An annotator with fewer items is
left out of the test (counted in ``annotators_skipped``); with fewer than 3 annotators left the
test is refused with the reason, never run on too little.

Also reported: ``advantage_probability``, the mean of ``rho_judge`` over the tested annotators
(the paper's measure for comparing judges; 1 when the judge always aligns at least as well).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

DEFAULT_EPSILON = 0.2
DEFAULT_ALPHA = 0.05
MIN_ANNOTATORS = 3
MIN_ITEMS = 30
PASS_RATE = 0.5

REQUIREMENTS = (
    f"at least {MIN_ANNOTATORS} annotators with at least {MIN_ITEMS} items each "
    "(items voted on by the annotator and at least one other)"
)


# --- distributions and multiple testing ----------------------------------------------------


def student_t_cdf(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (SciPy's; infinite t: 0 or 1)."""
    return np.asarray(stats.t.cdf(np.asarray(t, dtype=float), np.asarray(df)), dtype=float)


def benjamini_yekutieli(p_values: np.ndarray, alpha: float = DEFAULT_ALPHA) -> np.ndarray:
    """Which hypotheses the Benjamini-Yekutieli step-up procedure rejects at FDR ``alpha``
    (SciPy's adjusted p-values at most ``alpha``)."""
    p = np.asarray(p_values, dtype=float)
    if p.size == 0:
        return np.zeros(0, dtype=bool)
    return np.asarray(stats.false_discovery_control(p, method="by") <= alpha)


# --- the test ------------------------------------------------------------------------------


def advantage_indicators(
    votes: np.ndarray, judge: np.ndarray, n_categories: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``W_judge``, ``W_human`` and the items used, each an annotator x item matrix.

    An item is used for annotator ``j`` when ``j`` voted on it and at least one other did.
    """
    votes = np.asarray(votes, dtype=np.int64)
    judge = np.asarray(judge, dtype=np.int64)
    n_items = votes.shape[1]
    voted = votes >= 0
    codes = np.where(voted, votes, 0)
    counts = np.zeros((n_items, n_categories), dtype=np.int64)
    np.add.at(counts, (np.nonzero(voted)[1], votes[voted]), 1)
    n_votes = counts.sum(axis=1)
    used = voted & (n_votes >= 2)[None, :]
    others = np.maximum(n_votes - 1, 1)[None, :]
    items = np.arange(n_items)[None, :]
    s_human = (counts[items, codes] - 1) / others
    has_label = judge >= 0
    judge_code = np.where(has_label, judge, 0)
    same = (votes == judge_code[None, :]) & has_label[None, :]
    s_judge = np.where(has_label, counts[np.arange(n_items), judge_code], 0)[None, :]
    s_judge = (s_judge - same) / others
    w_judge = (s_judge >= s_human) & used
    w_human = (s_human >= s_judge) & used
    return w_judge, w_human, used


def one_sided_p_values(
    w_judge: np.ndarray, w_human: np.ndarray, used: np.ndarray, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per annotator: the p-value of ``H0: rho_judge <= rho_human - epsilon`` and the items.

    NaN where the annotator has fewer than 2 items.
    """
    d = w_judge.astype(float) - w_human.astype(float)
    n = used.sum(axis=1)
    safe_n = np.maximum(n, 1)
    mean = np.where(used, d, 0.0).sum(axis=1) / safe_n
    squares = np.where(used, (d - mean[:, None]) ** 2, 0.0).sum(axis=1)
    sd = np.sqrt(squares / np.maximum(n - 1, 1))
    shift = mean + epsilon
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, shift / (sd / np.sqrt(safe_n)), np.sign(shift) * np.inf)
    p = student_t_cdf(-t, np.maximum(n - 1, 1))  # P(T >= t)
    return np.where(n >= 2, p, np.nan), n


def alt_test(
    votes: np.ndarray,
    judge: np.ndarray,
    *,
    n_categories: int = 3,
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    min_annotators: int = MIN_ANNOTATORS,
    min_items: int = MIN_ITEMS,
) -> dict[str, Any]:
    """The test on one criterion; ``{"refused": reason, ...}`` when the requirements fail."""
    votes = np.asarray(votes, dtype=np.int64).reshape(-1, np.asarray(judge).size)
    w_judge, w_human, used = advantage_indicators(votes, judge, n_categories)
    per_annotator = used.sum(axis=1)
    voting = int((per_annotator > 0).sum())
    tested = per_annotator >= min_items
    items = int(used.any(axis=0).sum())
    base = {"annotators": voting, "items": items}
    if voting < min_annotators:
        return {
            **base,
            "refused": f"needs votes of at least {min_annotators} annotators; "
            f"{voting} voted here with another annotator on the same item",
        }
    if int(tested.sum()) < min_annotators:
        return {
            **base,
            "refused": f"needs at least {min_items} items from each of at least "
            f"{min_annotators} annotators; {int(tested.sum())} of the {voting} annotators "
            f"have as many (most: {int(per_annotator.max())})",
        }
    p, n = one_sided_p_values(w_judge[tested], w_human[tested], used[tested], epsilon)
    rejected = benjamini_yekutieli(p, alpha)
    rho_judge = w_judge[tested].sum(axis=1) / n
    winning_rate = float(rejected.mean())
    return {
        **base,
        "annotators_tested": int(tested.sum()),
        "annotators_skipped": voting - int(tested.sum()),
        "winning_rate": round(winning_rate, 4),
        "passed": winning_rate >= PASS_RATE,
        "advantage_probability": round(float(rho_judge.mean()), 4),
        "p_values": [float(x) for x in p],
        "rejected": [bool(x) for x in rejected],
        "items_per_annotator": [int(x) for x in n],
    }
