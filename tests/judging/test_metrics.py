"""The judge metrics on hand-worked cases, edge cases and invariants on random data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judging.metrics import (
    HUMAN_TIE,
    INVALID,
    MISSING,
    A,
    B,
    ScoreInput,
    decode_predictions,
    encode_predictions,
    majority_vote,
    majority_vote_codes,
    published_round,
    score_all,
    score_runs,
    score_split,
)

OPEN = "open_ended"
REASONING = "reasoning"


def make_rows(spec: list[tuple[str, str, str, str]]) -> ScoreInput:
    """Rows from (prompt_id, split, criterion, preference) with preference given as A/B."""
    prompt, split, crit, pref = (list(c) for c in zip(*spec, strict=True))
    return ScoreInput(
        question_id=[f"{p}__{c}" for p, c in zip(prompt, crit, strict=True)],
        prompt_id=prompt,
        split=split,
        criterion=crit,
        preference=["model_a" if x == "A" else "model_b" for x in pref],
    )


def preds(*labels: str | None) -> list[str | None]:
    names = {"A": "model_a", "B": "model_b"}
    return [names.get(x, x) if x is not None else None for x in labels]


# o1 has a conflict (completeness/hallucination prefer A, visual-grounding/clarity prefer B),
# o2 has none, o3 has one criterion only.
WORKED = make_rows(
    [
        ("o1", OPEN, "completeness", "A"),
        ("o1", OPEN, "visual-grounding", "B"),
        ("o1", OPEN, "hallucination", "A"),
        ("o1", OPEN, "clarity", "B"),
        ("o2", OPEN, "completeness", "A"),
        ("o2", OPEN, "visual-grounding", "A"),
        ("o3", OPEN, "hallucination", "B"),
    ]
)


def test_hand_worked_split():
    # correct: comp, vg, clar of o1 (hall wrong); o2 comp right, vg wrong; o3 right.
    result = score_split(WORKED, preds("A", "B", "B", "B", "A", "B", "B"), split=OPEN, n_boot=0)
    per = result["per_criterion"]
    assert list(per) == ["completeness", "visual-grounding", "hallucination", "clarity"]
    assert per["completeness"] == {"acc": 100.0, "n": 2, "correct": 2, "ci": None}
    assert per["visual-grounding"]["acc"] == 50.0
    assert per["hallucination"]["acc"] == 50.0
    assert per["clarity"]["acc"] == 100.0
    assert result["overall"] == {"value": 71.43, "ci": None, "correct": 5, "rows": 7}
    assert result["avg"]["value"] == 75.0
    assert result["pacc"] == {"value": 33.33, "ci": None, "correct_prompts": 1, "prompts": 3}
    # o1: 2 A-rows x 2 B-rows = 4 conflicting pairs; correct A-rows 1 x correct B-rows 2 = 2.
    assert result["cmr"] == {"value": 50.0, "ci": None, "matched_pairs": 2, "conflict_pairs": 4}
    assert result["tos"] == {
        "value": 100.0,
        "ci": None,
        "sensitive_prompts": 1,
        "conflict_prompts": 1,
    }
    assert result["counts"] == {
        "rows": 7,
        "prompts": 3,
        "criteria": 4,
        "conflict_prompts": 1,
        "conflict_pairs": 4,
        "valid": 7,
        "invalid": 0,
        "missing": 0,
        "human_ties": 0,
    }
    diag = result["diagnostics"]
    assert diag["same_verdict_share"] == 0.0
    assert diag["multi_criterion_prompts"] == 2
    assert diag["pred_a_share"] == 28.57  # 2 of 7 valid predictions
    assert diag["human_a_share"] == 57.14  # 4 of 7 rows
    json.dumps(result)  # JSON-serialisable as stored on a Scorecard


def test_tos_counts_opposite_wrong_predictions_but_cmr_does_not():
    rows = make_rows([("p", OPEN, "completeness", "A"), ("p", OPEN, "clarity", "B")])
    flipped = score_split(rows, preds("B", "A"), split=OPEN, n_boot=0)
    assert flipped["tos"]["value"] == 100.0  # opposite valid verdicts: the judge saw a trade-off
    assert flipped["cmr"]["value"] == 0.0
    assert flipped["pacc"]["value"] == 0.0


def test_tos_needs_both_predictions_of_the_pair_valid():
    rows = make_rows([("p", OPEN, "completeness", "A"), ("p", OPEN, "clarity", "B")])
    result = score_split(rows, preds("A", "tie"), split=OPEN, n_boot=0)
    assert result["tos"]["value"] == 0.0
    assert result["cmr"]["value"] == 0.0
    assert result["counts"]["invalid"] == 1


def test_tos_only_looks_at_conflicting_pairs():
    # comp and hall both prefer A: opposite verdicts there are not a conflicting pair.
    rows = make_rows(
        [
            ("p", OPEN, "completeness", "A"),
            ("p", OPEN, "hallucination", "A"),
            ("p", OPEN, "clarity", "B"),
        ]
    )
    result = score_split(rows, preds("A", "B", "B"), split=OPEN, n_boot=0)
    # conflicting pairs: (comp, clar) -> A vs B opposite; so sensitive.
    assert result["tos"]["value"] == 100.0
    result = score_split(rows, preds("A", "B", "A"), split=OPEN, n_boot=0)
    # (comp, clar) = A, A and (hall, clar) = B, A -> opposite on the second pair.
    assert result["tos"]["value"] == 100.0
    assert result["cmr"] == {"value": 0.0, "ci": None, "matched_pairs": 0, "conflict_pairs": 2}
    result = score_split(rows, preds("B", "A", "A"), split=OPEN, n_boot=0)
    # (comp, clar) = B, A opposite; (hall, clar) = A, A.
    assert result["tos"]["value"] == 100.0
    result = score_split(rows, preds("A", "A", "A"), split=OPEN, n_boot=0)
    assert result["tos"]["value"] == 0.0
    assert result["cmr"]["value"] == 0.0


def test_cmr_is_pooled_over_pairs_not_averaged_per_prompt():
    rows = make_rows(
        [
            # p: 2 x 1 = 2 pairs, both matched
            ("p", OPEN, "completeness", "A"),
            ("p", OPEN, "hallucination", "A"),
            ("p", OPEN, "clarity", "B"),
            # q: 1 x 1 = 1 pair, not matched
            ("q", OPEN, "completeness", "A"),
            ("q", OPEN, "clarity", "B"),
        ]
    )
    result = score_split(rows, preds("A", "A", "B", "A", "A"), split=OPEN, n_boot=0)
    assert result["cmr"]["value"] == 66.67  # 2 of 3 pairs (a per-prompt mean would be 50)
    assert result["cmr"]["conflict_pairs"] == 3
    assert result["tos"]["value"] == 50.0


def test_no_conflicts_gives_na_for_tos_and_cmr():
    rows = make_rows([("p", OPEN, "completeness", "A"), ("p", OPEN, "clarity", "A")])
    result = score_split(rows, preds("A", "A"), split=OPEN, n_boot=200)
    assert result["tos"]["value"] is None and result["tos"]["ci"] is None
    assert result["cmr"]["value"] is None and result["cmr"]["ci"] is None
    assert result["counts"]["conflict_prompts"] == 0
    assert result["counts"]["conflict_pairs"] == 0
    assert result["pacc"]["value"] == 100.0


def test_all_invalid():
    result = score_split(WORKED, ["tie"] * 7, split=OPEN, n_boot=100)
    assert result["overall"]["value"] == 0.0
    assert result["avg"]["value"] == 0.0
    assert result["pacc"]["value"] == 0.0
    assert result["tos"]["value"] == 0.0
    assert result["cmr"]["value"] == 0.0
    assert result["counts"]["invalid"] == 7
    assert result["counts"]["valid"] == 0
    assert result["diagnostics"]["pred_a_share"] is None  # no valid prediction
    assert result["diagnostics"]["same_verdict_share"] == 0.0


def test_missing_predictions_count_as_wrong_and_are_counted_apart():
    result = score_split(WORKED, preds("A", "B", "A", "B", "A", None, None), split=OPEN, n_boot=0)
    assert result["counts"]["missing"] == 2
    assert result["counts"]["invalid"] == 0
    assert result["overall"]["value"] == 71.43
    assert result["pacc"]["value"] == 33.33  # o1 right; o2 and o3 have a missing row
    assert result["pacc"]["correct_prompts"] == 1


def test_prompt_with_one_criterion():
    rows = make_rows([("solo", REASONING, "logic", "B")])
    result = score_split(rows, preds("B"), split=REASONING, n_boot=50)
    assert result["pacc"]["value"] == 100.0
    assert result["tos"]["value"] is None
    assert result["cmr"]["value"] is None
    # a single criterion cannot show criterion-agnostic behaviour
    assert result["diagnostics"]["same_verdict_share"] is None
    assert result["diagnostics"]["multi_criterion_prompts"] == 0


def test_avg_is_the_mean_of_rounded_percentages():
    # 1/3 -> 33.33, 2/3 -> 66.67, 1/6 -> 16.67: rounded mean 38.89 (unrounded 38.888...)
    # One prompt per row keeps the prompt structure out of the way.
    spec, labels = [], []
    for crit, n, k in (("completeness", 3, 1), ("clarity", 3, 2), ("hallucination", 6, 1)):
        for i in range(n):
            spec.append((f"{crit}{i}", OPEN, crit, "A"))
            labels.append("A" if i < k else "B")
    result = score_split(make_rows(spec), preds(*labels), split=OPEN, n_boot=0)
    accs = [v["acc"] for v in result["per_criterion"].values()]
    assert accs == [33.33, 16.67, 66.67]  # paper order: completeness, hallucination, clarity
    assert result["avg"]["value"] == round((33.33 + 66.67 + 16.67) / 3, 2) == 38.89


def test_avg_uses_rounded_values_where_it_differs_from_unrounded():
    # 1/2 -> 50.00, 1/3 -> 33.33, 5/6 -> 83.33: the rounded mean is 55.553 -> 55.55, while the
    # mean of the exact accuracies is 55.556 -> 55.56. The published tables give 55.55.
    spec, labels = [], []
    for crit, n, k in (("completeness", 2, 1), ("clarity", 3, 1), ("hallucination", 6, 5)):
        for i in range(n):
            spec.append((f"{crit}{i}", OPEN, crit, "B"))
            labels.append("B" if i < k else "A")
    result = score_split(make_rows(spec), preds(*labels), split=OPEN, n_boot=0)
    assert [v["acc"] for v in result["per_criterion"].values()] == [50.0, 83.33, 33.33]
    assert result["avg"]["value"] == 55.55
    assert result["overall"]["value"] == 63.64  # 7 of 11 rows: micro, not macro


def test_splits_are_never_pooled():
    rows = make_rows(
        [
            ("o", OPEN, "hallucination", "A"),
            ("o", OPEN, "clarity", "B"),
            ("r", REASONING, "hallucination", "A"),
            ("r", REASONING, "logic", "A"),
        ]
    )
    results = score_all(rows, preds("A", "B", "B", "B"), n_boot=0)
    assert list(results) == [OPEN, REASONING]
    assert results[OPEN]["per_criterion"]["hallucination"]["acc"] == 100.0
    assert results[REASONING]["per_criterion"]["hallucination"]["acc"] == 0.0
    assert results[OPEN]["counts"]["rows"] == 2
    assert results[REASONING]["counts"]["rows"] == 2
    # the same prompt id in both splits stays two prompts
    same_id = make_rows([("x", OPEN, "clarity", "A"), ("x", REASONING, "logic", "B")])
    scored = score_all(same_id, preds("A", "A"), n_boot=0)
    assert scored[OPEN]["pacc"]["value"] == 100.0
    assert scored[REASONING]["pacc"]["value"] == 0.0


def test_split_without_rows_is_all_na():
    result = score_split(WORKED, preds(*["A"] * 7), split=REASONING, n_boot=100)
    assert result["counts"]["rows"] == 0
    assert result["overall"]["value"] is None
    assert result["avg"]["value"] is None
    assert result["pacc"]["value"] is None
    assert result["per_criterion"] == {}


def test_encode_predictions():
    codes = encode_predictions(["model_a", "model_b", "tie", None, "", float("nan"), "A"])
    assert codes.tolist() == [A, B, INVALID, MISSING, MISSING, MISSING, INVALID]
    assert encode_predictions(np.array(["model_b", ""])).tolist() == [B, MISSING]
    assert encode_predictions(np.array([1, 2, 0, -1, 7])).tolist() == [A, B, INVALID, MISSING, 0]
    assert decode_predictions(np.array([A, B, INVALID, MISSING])).tolist() == [
        "model_a",
        "model_b",
        "invalid",
        None,
    ]


def test_predictions_must_align_with_rows():
    with pytest.raises(ValueError, match="expected \\(7,\\)"):
        score_split(WORKED, ["model_a"] * 6, split=OPEN)


def test_preference_must_be_a_b_or_tie():
    message = "row 1 \\(q2\\): preference must be model_a, model_b or tie"
    with pytest.raises(ValueError, match=message):
        ScoreInput(["q1", "q2"], ["p", "p"], [OPEN] * 2, ["a", "b"], ["model_a", "A"])
    rows = ScoreInput(["q1", "q2"], ["p", "p"], [OPEN] * 2, ["a", "b"], ["model_a", "tie"])
    assert rows.split_codes(OPEN).human.tolist() == [A, HUMAN_TIE]


def _with_ties(spec: list[tuple[str, str, str, str]]) -> ScoreInput:
    """make_rows, with "T" as a human tie."""
    rows = make_rows(spec)
    pref = np.where([x == "T" for *_, x in spec], "tie", rows.preference)
    return ScoreInput(rows.question_id, rows.prompt_id, rows.split, rows.criterion, pref)


def test_a_human_tie_is_always_wrong_and_conflicts_with_nothing():
    rows = _with_ties(
        [
            ("p", OPEN, "completeness", "A"),
            ("p", OPEN, "visual-grounding", "T"),
            ("p", OPEN, "hallucination", "B"),
            ("q", OPEN, "completeness", "T"),
            ("q", OPEN, "clarity", "A"),
        ]
    )
    # every verdict on a tie row is wrong: model_a, model_b, invalid and missing alike
    for tie_verdict in ("A", "B", "tie", None):
        result = score_split(rows, preds("A", tie_verdict, "B", tie_verdict, "A"), split=OPEN)
        assert result["per_criterion"]["visual-grounding"]["acc"] == 0.0
        assert result["overall"]["correct"] == 3
        assert result["pacc"]["value"] == 0.0  # each prompt has a tie row, never all correct
        # p: only completeness (A) x hallucination (B) conflict; q has no conflict at all
        assert result["cmr"] == {
            "value": 100.0,
            "ci": result["cmr"]["ci"],
            "matched_pairs": 1,
            "conflict_pairs": 1,
        }
        assert result["tos"]["conflict_prompts"] == 1
        assert result["tos"]["value"] == 100.0
        assert result["counts"]["human_ties"] == 2
        assert result["diagnostics"]["human_a_share"] == 40.0
    # opposite valid verdicts on a tie row and an A row are no trade-off noticed
    alone = _with_ties([("r", OPEN, "completeness", "A"), ("r", OPEN, "clarity", "T")])
    result = score_split(alone, preds("A", "B"), split=OPEN, n_boot=0)
    assert result["tos"]["value"] is None and result["cmr"]["value"] is None
    assert result["counts"]["conflict_pairs"] == 0


def test_a_prompt_in_two_splits_is_scored_per_split():
    rows = make_rows(
        [
            ("p", OPEN, "completeness", "A"),
            ("p", OPEN, "hallucination", "B"),
            ("p", REASONING, "hallucination", "A"),
            ("p", REASONING, "logic", "A"),
        ]
    )
    result = score_all(rows, preds("A", "A", "A", "A"), n_boot=0)
    # the open-ended half has a conflict the judge missed; the reasoning half is all correct
    assert result[OPEN]["pacc"] == {"value": 0.0, "ci": None, "correct_prompts": 0, "prompts": 1}
    assert result[OPEN]["cmr"]["conflict_pairs"] == 1
    assert result[REASONING]["pacc"]["value"] == 100.0
    assert result[REASONING]["counts"]["conflict_pairs"] == 0
    assert result[REASONING]["tos"]["value"] is None


def test_figures_round_as_numpy_rounds_a_numpy_float():
    assert float(published_round(42.855)) == 42.86 != round(42.855, 2)
    assert float(published_round(24.285)) == 24.28 != round(24.285, 2)
    assert published_round(np.array([2.675, 1.005])).tolist() == [2.68, 1.0]
    # two criteria at 6/7 and 0/7: 85.71 and 0.0, whose mean 42.855 rounds up with NumPy
    spec = [(f"p{i}", OPEN, c, "A") for i in range(7) for c in ("completeness", "clarity")]
    rows = make_rows(spec)
    verdicts = [x for i in range(7) for x in (("A" if i < 6 else "B"), "B")]
    result = score_split(rows, preds(*verdicts), split=OPEN, n_boot=0)
    assert [v["acc"] for v in result["per_criterion"].values()] == [85.71, 0.0]
    assert result["avg"]["value"] == 42.86
    assert round((85.71 + 0.0) / 2, 2) == 42.85  # Python's rounding gives the other figure


# -- majority vote -------------------------------------------------------------------------------


def test_majority_vote_rule():
    runs = [
        preds("A", "A", "A", "A", "tie", None, "A", "A"),
        preds("A", "B", "B", "tie", "tie", None, "B", None),
        preds("B", "B", "tie", "tie", "A", None, None, None),
    ]
    assert majority_vote(runs).tolist() == [
        "model_a",  # 2 A vs 1 B
        "model_b",  # 1 A vs 2 B
        "invalid",  # A vs B tie, one abstains
        "invalid",  # two of three abstain: more than half
        "invalid",  # two abstain
        None,  # missing in every run stays missing
        "invalid",  # A vs B tie with one missing
        "invalid",  # one A, two missing: more than half abstain
    ]


def test_majority_vote_even_runs():
    runs = [
        preds("A", "A", "A"),
        preds("B", "tie", "A"),
        preds("A", "tie", "B"),
        preds("B", "A", "B"),
    ]
    # 2-2 tie -> invalid; A + 2 abstain of 4 (not more than half) -> A; 2-2 -> invalid
    assert majority_vote(runs).tolist() == ["invalid", "model_a", "invalid"]
    assert majority_vote_codes(np.array([[A, B], [A, MISSING]])).tolist() == [A, B]


def test_score_runs_reports_each_run_and_the_vote():
    rows = make_rows([("p", OPEN, "completeness", "A"), ("p", OPEN, "clarity", "B")])
    runs = [preds("A", "B"), preds("A", "A"), preds("B", "B")]
    result = score_runs(rows, runs, n_boot=0)
    assert result["n_runs"] == 3
    per_run = [r[OPEN]["overall"]["value"] for r in result["runs"]]
    assert per_run == [100.0, 50.0, 50.0]
    assert result["vote"][OPEN]["overall"]["value"] == 100.0  # votes A,A,B and B,A,B
    single = score_runs(rows, [preds("A", "A")], n_boot=0)
    assert single["runs"] == [single["vote"]]


def test_tie_votes_across_runs_score_as_invalid():
    rows = make_rows([("p", OPEN, "completeness", "A"), ("p", OPEN, "clarity", "B")])
    result = score_runs(rows, [preds("A", "B"), preds("B", "A")], n_boot=0)
    vote = result["vote"][OPEN]
    assert vote["counts"]["invalid"] == 2
    assert vote["overall"]["value"] == 0.0
    assert vote["tos"]["value"] == 0.0


# -- bootstrap -----------------------------------------------------------------------------------


def random_dataset(rng: np.random.Generator, n_prompts: int, *, all_criteria: bool) -> ScoreInput:
    crits = np.array(
        ["completeness", "visual-grounding", "hallucination", "expressiveness", "clarity"]
    )
    if all_criteria:
        prompt = np.repeat(np.arange(n_prompts), len(crits))
        crit = np.tile(crits, n_prompts)
    else:
        keep = rng.random((n_prompts, len(crits))) < 0.6
        keep[:, 0] |= ~keep.any(axis=1)
        prompt, j = np.nonzero(keep)
        crit = crits[j]
    pid = np.char.add("p", prompt.astype(str))
    return ScoreInput(
        question_id=np.char.add(np.char.add(pid, "__"), crit),
        prompt_id=pid,
        split=np.full(len(pid), OPEN),
        criterion=crit,
        preference=np.where(rng.random(len(pid)) < 0.55, "model_a", "model_b"),
    )


def noisy_judge(rng: np.random.Generator, rows: ScoreInput, accuracy: float) -> np.ndarray:
    flip = {"model_a": "model_b", "model_b": "model_a"}
    wrong = np.array([flip[p] for p in rows.preference])
    out = np.where(rng.random(len(rows)) < accuracy, rows.preference, wrong).astype(object)
    out[rng.random(len(rows)) < 0.05] = "invalid"
    return out


def test_bootstrap_is_deterministic_and_brackets_the_estimate():
    rng = np.random.default_rng(3)
    rows = random_dataset(rng, 300, all_criteria=False)
    pred = noisy_judge(rng, rows, 0.7)
    first = score_split(rows, pred, split=OPEN, n_boot=300, seed=11)
    again = score_split(rows, pred, split=OPEN, n_boot=300, seed=11)
    other = score_split(rows, pred, split=OPEN, n_boot=300, seed=12)
    assert first == again
    assert first["pacc"]["ci"] != other["pacc"]["ci"]
    for key in ("overall", "avg", "pacc", "tos", "cmr"):
        lo, hi = first[key]["ci"]
        assert lo <= first[key]["value"] <= hi, key
        assert hi - lo < 25
    for per in first["per_criterion"].values():
        assert per["ci"][0] <= per["acc"] <= per["ci"][1]
    assert first["bootstrap"] == {"n_boot": 300, "seed": 11, "unit": "prompt"}


def test_bootstrap_resamples_prompts_not_rows():
    # Every prompt is either fully right or fully wrong: resampling prompts keeps PAcc equal
    # to overall accuracy in every replicate, so their CIs coincide.
    rng = np.random.default_rng(5)
    rows = random_dataset(rng, 200, all_criteria=True)
    good = rng.random(200) < 0.5
    flip = {"model_a": "model_b", "model_b": "model_a"}
    pred = np.array(
        [
            p if good[int(pid[1:])] else flip[p]
            for p, pid in zip(rows.preference, rows.prompt_id, strict=True)
        ]
    )
    result = score_split(rows, pred, split=OPEN, n_boot=200, seed=1)
    assert result["pacc"]["value"] == result["overall"]["value"]
    assert result["pacc"]["ci"] == result["overall"]["ci"]


# -- invariants on random data -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_pacc_at_most_each_criterion_accuracy_when_every_prompt_has_every_criterion(seed):
    rng = np.random.default_rng(seed)
    rows = random_dataset(rng, 400, all_criteria=True)
    result = score_split(rows, noisy_judge(rng, rows, 0.8), split=OPEN, n_boot=0)
    unrounded_pacc = result["pacc"]["correct_prompts"] / result["pacc"]["prompts"]
    for per in result["per_criterion"].values():
        assert unrounded_pacc <= per["correct"] / per["n"]
        assert result["pacc"]["value"] <= per["acc"]


@pytest.mark.parametrize("seed", range(5))
def test_criterion_agnostic_judge_has_zero_tos_and_cmr(seed):
    rng = np.random.default_rng(seed)
    rows = random_dataset(rng, 300, all_criteria=bool(seed % 2))
    prompts, inverse = np.unique(rows.prompt_id, return_inverse=True)
    verdict = np.where(rng.random(len(prompts)) < 0.5, "model_a", "model_b")
    result = score_split(rows, verdict[inverse], split=OPEN, n_boot=100, seed=seed)
    assert result["counts"]["conflict_prompts"] > 0
    assert result["tos"]["value"] == 0.0
    assert result["cmr"]["value"] == 0.0
    assert result["tos"]["ci"] == [0.0, 0.0]
    assert result["diagnostics"]["same_verdict_share"] == 100.0


@pytest.mark.parametrize("seed", range(3))
def test_perfect_judge_scores_100_everywhere(seed):
    rng = np.random.default_rng(seed)
    rows = random_dataset(rng, 250, all_criteria=False)
    result = score_split(rows, rows.preference, split=OPEN, n_boot=100, seed=seed)
    for key in ("overall", "avg", "pacc", "tos", "cmr"):
        assert result[key]["value"] == 100.0, key
        assert result[key]["ci"] == [100.0, 100.0], key
    assert all(p["acc"] == 100.0 for p in result["per_criterion"].values())
    assert result["diagnostics"]["pred_a_share"] == result["diagnostics"]["human_a_share"]


def test_grouped_counts_match_a_pair_by_pair_reference():
    """The nA x nB shortcut agrees with enumerating every criterion pair of every prompt."""
    rng = np.random.default_rng(9)
    rows = random_dataset(rng, 150, all_criteria=False)
    pred = noisy_judge(rng, rows, 0.6)
    result = score_split(rows, pred, split=OPEN, n_boot=0)
    pairs = matched = conflict = sensitive = 0
    for prompt in np.unique(rows.prompt_id):
        idx = np.flatnonzero(rows.prompt_id == prompt)
        prompt_pairs = 0
        opposite = False
        for x in range(len(idx)):
            for y in range(x + 1, len(idx)):
                i, j = idx[x], idx[y]
                if rows.preference[i] == rows.preference[j]:
                    continue
                prompt_pairs += 1
                matched += pred[i] == rows.preference[i] and pred[j] == rows.preference[j]
                valid = {pred[i], pred[j]} == {"model_a", "model_b"}
                opposite |= valid
        pairs += prompt_pairs
        conflict += prompt_pairs > 0
        sensitive += opposite
    assert result["cmr"]["conflict_pairs"] == pairs
    assert result["cmr"]["matched_pairs"] == matched
    assert result["tos"]["conflict_prompts"] == conflict
    assert result["tos"]["sensitive_prompts"] == sensitive


def test_runs_share_bootstrap_replicates_and_match_single_scores():
    rng = np.random.default_rng(21)
    rows = random_dataset(rng, 120, all_criteria=False)
    runs = [noisy_judge(rng, rows, acc) for acc in (0.6, 0.7, 0.8)]
    result = score_runs(rows, runs, n_boot=150, seed=4)
    for run, scored in zip(runs, result["runs"], strict=True):
        assert scored[OPEN] == score_split(rows, run, split=OPEN, n_boot=150, seed=4)
    assert result["vote"][OPEN] == score_split(
        rows, majority_vote(runs), split=OPEN, n_boot=150, seed=4
    )


def test_published_denominators_round_as_in_the_tables():
    """299 open-ended prompts, 206 with a conflict (68.9%): 98 fully right -> PAcc 32.78,
    133 sensitive -> TOS 64.56, the reference figures' arithmetic."""
    spec, labels = [], []
    for i in range(299):
        conflict = i < 206
        spec.append((f"p{i}", OPEN, "completeness", "A"))
        spec.append((f"p{i}", OPEN, "clarity", "B" if conflict else "A"))
        if i < 98:
            labels += ["A", "B" if conflict else "A"]  # fully right
        elif i < 133:
            labels += ["B", "A"]  # flipped: opposite verdicts, both wrong
        elif conflict:
            labels += ["A", "A"]  # criterion-agnostic
        else:
            labels += ["B", "B"]
    result = score_split(make_rows(spec), preds(*labels), split=OPEN, n_boot=0)
    assert result["counts"]["conflict_prompts"] == 206
    assert result["pacc"]["value"] == 32.78
    assert result["tos"]["value"] == 64.56
    assert result["cmr"]["value"] == 47.57  # 98 of 206 pairs


def test_bootstrap_avg_rounds_as_the_point_avg():
    # One prompt: every replicate draws it, so each replicate's Avg is the point Avg, rounded
    # the same way (the unrounded mean 42.855 would show as 42.85 with Python's rounding).
    spec = [("p", OPEN, c, "A") for c in ("completeness", "clarity") for _ in range(7)]
    rows = make_rows(spec)
    result = score_split(rows, preds(*("A" * 6 + "B" + "B" * 7)), split=OPEN, n_boot=50)
    assert result["avg"]["value"] == 42.86
    assert result["avg"]["ci"] == [42.86, 42.86]
    assert result["per_criterion"]["completeness"]["ci"] == [85.71, 85.71]
