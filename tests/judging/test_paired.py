"""The paired comparison of two judges, against reference libraries and a plain-loop bootstrap."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from aggregation.bootstrap import resample_counts
from judging.metrics import ScoreInput
from judging.paired import (
    A_BETTER,
    NOT_DISTINGUISHABLE,
    bootstrap_pvalue,
    holm,
    mcnemar_exact,
    paired_compare,
)

CRITERIA = ("completeness", "visual-grounding", "hallucination", "expressiveness", "clarity")


def test_mcnemar_equals_the_exact_test_of_statsmodels_on_random_tables():
    rng = np.random.default_rng(7)
    tables = rng.integers(0, 60, size=(400, 2, 2))
    tables[:5, 0, 1] = tables[:5, 1, 0] = 0  # b = c = 0
    tables[5:10, 0, 1] = 0  # one side empty
    tables[10:15, 0, 1] = tables[10:15, 1, 0]  # b = c
    ours = mcnemar_exact(tables[:, 0, 1], tables[:, 1, 0])
    ref = [mcnemar(t, exact=True).pvalue for t in tables]
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=0)
    assert ours[:5].tolist() == [1.0] * 5


def test_mcnemar_small_tables_by_hand():
    # b=0, c=6: 2 * 0.5**6 = 0.03125; b=1, c=1: 1.
    assert mcnemar_exact([0, 1, 3], [6, 1, 0]).tolist() == [0.03125, 1.0, 0.25]


def test_holm_equals_multipletests_on_random_families():
    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 10, 17):
        for _ in range(40):
            p = rng.uniform(0, 0.2, size=m) ** rng.uniform(0.5, 3)
            p[rng.random(m) < 0.2] = rng.choice(p)  # ties
            ref = multipletests(p, method="holm")[1]
            np.testing.assert_allclose(holm(p), ref, rtol=1e-12, atol=0)


def test_holm_leaves_undefined_figures_out_of_the_family():
    p = np.array([0.01, np.nan, 0.04])
    adjusted = holm(p)
    ref = multipletests([0.01, 0.04], method="holm")[1]
    assert np.isnan(adjusted[1])
    np.testing.assert_allclose(adjusted[[0, 2]], ref)


def test_bootstrap_pvalue_counts_both_tails_with_the_plus_one_rule():
    assert bootstrap_pvalue(np.array([1.0, 2.0, 3.0, np.nan])) == 0.5  # 2 * 1 / 4
    assert bootstrap_pvalue(np.array([-1.0, 1.0, 2.0, 0.0])) == 1.0
    assert bootstrap_pvalue(np.array([np.nan])) is None


def _dataset(rng: np.random.Generator, n_prompts: int) -> ScoreInput:
    qid, pid, crit, pref = [], [], [], []
    for p in range(n_prompts):
        present = [c for c in CRITERIA if rng.random() < 0.7] or [CRITERIA[0]]
        for c in present:
            qid.append(f"p{p:03d}-{c}")
            pid.append(f"p{p:03d}")
            crit.append(c)
            pref.append(rng.choice(["model_a", "model_b", "model_a", "model_b", "tie"]))
    n = len(qid)
    return ScoreInput(qid, pid, ["open_ended"] * n, crit, pref)


def _predictions(rng: np.random.Generator, rows: ScoreInput, skill: float) -> np.ndarray:
    other = {"model_a": "model_b", "model_b": "model_a", "tie": "model_a"}
    out = []
    for pref in rows.preference.tolist():
        u = rng.random()
        if u < 0.05:
            out.append("invalid" if u < 0.03 else None)
        else:
            out.append(pref if u < skill and pref != "tie" else other[pref])
    return np.array(out, dtype=object)


def _loop_figures(prompts: list[list[tuple[str, str, object]]]) -> dict[str, float]:
    """Protocol section 7 by plain loops over (criterion, human, prediction) per prompt."""
    rows = [r for p in prompts for r in p]
    right = [h == v for _, h, v in rows]
    per_crit = {}
    for c in CRITERIA:
        hits = [h == v for k, h, v in rows if k == c]
        if hits:
            per_crit[c] = round(100 * sum(hits) / len(hits), 2)
    n_tos = sens = pairs = matched = 0
    for p in prompts:
        conflicting = [
            (x, y)
            for x, y in itertools.combinations(p, 2)
            if {x[1], y[1]} == {"model_a", "model_b"}
        ]
        if conflicting:
            n_tos += 1
            valid = ("model_a", "model_b")
            sens += any(x[2] in valid and y[2] in valid and x[2] != y[2] for x, y in conflicting)
        pairs += len(conflicting)
        matched += sum(x[1] == x[2] and y[1] == y[2] for x, y in conflicting)
    return {
        "overall": 100 * sum(right) / len(rows),
        "pacc": 100 * sum(all(h == v for _, h, v in p) for p in prompts) / len(prompts),
        "tos": 100 * sens / n_tos if n_tos else np.nan,
        "cmr": 100 * matched / pairs if pairs else np.nan,
        "avg": round(sum(per_crit.values()) / len(per_crit), 2),
    }


def _loop_replicate_diffs(rows, pred_a, pred_b, n_boot, seed):
    """The replicate differences, resampling prompts with the same seed-derived draws."""
    keys = sorted(set(rows.prompt_id.tolist()))
    by_prompt = {k: [] for k in keys}
    for i, p in enumerate(rows.prompt_id.tolist()):
        by_prompt[p].append(i)
    weights = resample_counts(np.random.default_rng(seed), len(keys), n_boot)
    diffs = {k: [] for k in ("pacc", "cmr", "tos", "avg", "overall")}
    for w in weights:
        drawn = [k for k, times in zip(keys, w, strict=True) for _ in range(times)]
        figs = []
        for pred in (pred_a, pred_b):
            prompts = [
                [(rows.criterion[i], rows.preference[i], pred[i]) for i in by_prompt[k]]
                for k in drawn
            ]
            figs.append(_loop_figures(prompts))
        for key in diffs:
            diffs[key].append(figs[0][key] - figs[1][key])
    return {k: np.array(v) for k, v in diffs.items()}


@pytest.mark.parametrize("seed", [0, 11])
def test_bootstrap_intervals_equal_a_plain_loop_with_the_same_draws(seed):
    rng = np.random.default_rng(100 + seed)
    rows = _dataset(rng, 40)
    pred_a, pred_b = _predictions(rng, rows, 0.75), _predictions(rng, rows, 0.6)
    n_boot = 150
    result = paired_compare(rows, pred_a, pred_b, split="open_ended", n_boot=n_boot, seed=seed)
    loop = _loop_replicate_diffs(rows, pred_a, pred_b, n_boot, seed)
    for fig in result.headline:
        d = loop[fig.key]
        d = d[np.isfinite(d)]
        lo, hi = np.percentile(d, [2.5, 97.5])
        assert fig.ci == pytest.approx([round(lo, 2), round(hi, 2)], abs=0.011), fig.key
        tail = min((d <= 1e-9).sum(), (d >= -1e-9).sum())
        assert fig.p == pytest.approx(min(1.0, 2 * (tail + 1) / (len(d) + 1))), fig.key


def test_each_figure_is_tested_and_holm_adjusted_as_one_family():
    rng = np.random.default_rng(5)
    rows = _dataset(rng, 60)
    pred_a, pred_b = _predictions(rng, rows, 0.8), _predictions(rng, rows, 0.55)
    result = paired_compare(rows, pred_a, pred_b, split="open_ended", n_boot=300, seed=1)
    figures = [*result.criteria, *result.headline]
    raw = [f.p for f in figures if f.p is not None]
    assert result.family == len(raw) == 10
    ref = multipletests(raw, method="holm")[1]
    assert [f.p_holm for f in figures] == pytest.approx(list(ref))
    for f in result.criteria:
        right_a = (rows.criterion == f.key) & (pred_a == rows.preference)
        right_b = (rows.criterion == f.key) & (pred_b == rows.preference)
        assert (f.only_a, f.only_b) == ((right_a & ~right_b).sum(), (right_b & ~right_a).sum())
        assert f.p == pytest.approx(mcnemar([[0, f.only_a], [f.only_b, 0]], exact=True).pvalue)
        assert f.significant == (f.p_holm <= 0.05)


def test_a_judge_against_itself_is_never_distinguishable():
    rng = np.random.default_rng(8)
    rows = _dataset(rng, 30)
    pred = _predictions(rng, rows, 0.7)
    result = paired_compare(rows, pred, pred, split="open_ended", n_boot=100, seed=0)
    for f in [*result.criteria, *result.headline]:
        assert f.diff == 0 and f.p == 1.0 and f.verdict == NOT_DISTINGUISHABLE
        assert f.ci in (None, [0.0, 0.0])


def test_same_seed_same_figures_and_one_clear_difference_is_found():
    rng = np.random.default_rng(9)
    rows = _dataset(rng, 120)
    pred_b = _predictions(rng, rows, 0.65)
    pred_a = pred_b.copy()
    # Judge A is right on every clarity row judge B misses.
    clarity = rows.criterion == "clarity"
    pred_a[clarity] = np.where(
        rows.preference[clarity] == "tie", "model_a", rows.preference[clarity]
    )
    one = paired_compare(rows, pred_a, pred_b, split="open_ended", n_boot=200, seed=4)
    two = paired_compare(rows, pred_a, pred_b, split="open_ended", n_boot=200, seed=4)
    assert one.as_dict() == two.as_dict()
    verdicts = {f.key: f.verdict for f in one.criteria}
    assert verdicts.pop("clarity") == A_BETTER
    assert set(verdicts.values()) == {NOT_DISTINGUISHABLE}
