"""The Alternative Annotator Test: the statistics against scipy and statsmodels, and on versions."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse
from rest_framework.test import APIClient
from scipy import stats
from statsmodels.stats.multitest import multipletests

from judging.alt_test import (
    DEFAULT_EPSILON,
    advantage_indicators,
    alt_test,
    benjamini_yekutieli,
    one_sided_p_values,
    student_t_cdf,
)
from judging.models import Scorecard
from judging.services.scoring import judge_run_upload
from tests.judging.alt_test_data import random_verdicts, version_with_votes, voted_rows
from tests.judging.web_data import predictions_file

# --- the statistics ------------------------------------------------------------------------


def test_student_t_cdf_matches_scipy():
    rng = np.random.default_rng(3)
    t = np.concatenate([rng.normal(0, 3, 3000), [0.0, 1e-9, -50.0, 50.0]])
    df = np.concatenate([rng.integers(1, 600, 3000), [1, 2, 3, 2000]])
    np.testing.assert_allclose(student_t_cdf(t, df), stats.t.cdf(t, df), rtol=0, atol=1e-13)
    assert student_t_cdf(np.array([np.inf, -np.inf]), np.array([5, 5])).tolist() == [1.0, 0.0]


@pytest.mark.parametrize("seed", range(6))
def test_benjamini_yekutieli_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 40))
    p = np.concatenate([rng.uniform(0, 0.01, m // 2), rng.uniform(0, 1, m - m // 2)])
    rng.shuffle(p)
    for alpha in (0.05, 0.1):
        expected = multipletests(p, alpha=alpha, method="fdr_by")[0]
        assert benjamini_yekutieli(p, alpha).tolist() == expected.tolist()


def _indicators_by_loop(votes, judge):
    """W_judge, W_human and the used items, one item and annotator at a time."""
    n_ann, n_items = votes.shape
    wf = np.zeros((n_ann, n_items), bool)
    wh = np.zeros((n_ann, n_items), bool)
    used = np.zeros((n_ann, n_items), bool)
    for j in range(n_ann):
        for i in range(n_items):
            others = [votes[k, i] for k in range(n_ann) if k != j and votes[k, i] >= 0]
            if votes[j, i] < 0 or not others:
                continue
            s_judge = np.mean([judge[i] >= 0 and judge[i] == o for o in others])
            s_human = np.mean([votes[j, i] == o for o in others])
            wf[j, i], wh[j, i], used[j, i] = s_judge >= s_human, s_human >= s_judge, True
    return wf, wh, used


def _random_votes(rng, n_ann, n_items, missing=0.3):
    truth = rng.integers(0, 3, n_items)
    noisy = np.where(
        rng.random((n_ann, n_items)) < 0.7, truth, rng.integers(0, 3, (n_ann, n_items))
    )
    return np.where(rng.random((n_ann, n_items)) < missing, -1, noisy), truth


@pytest.mark.parametrize("seed", range(5))
def test_indicators_and_p_values_match_a_loop_and_scipy(seed):
    rng = np.random.default_rng(seed)
    votes, truth = _random_votes(rng, 5, 80)
    judge = np.where(rng.random(80) < 0.75, truth, rng.integers(-1, 3, 80))
    wf, wh, used = advantage_indicators(votes, judge, 3)
    ref = _indicators_by_loop(votes, judge)
    for ours, theirs in zip((wf, wh, used), ref, strict=True):
        assert ours.tolist() == theirs.tolist()
    for epsilon in (0.1, 0.15, 0.2):
        p, n = one_sided_p_values(wf, wh, used, epsilon)
        for j in range(5):
            a = wf[j, used[j]].astype(float) + epsilon
            b = wh[j, used[j]].astype(float)
            expected = stats.ttest_rel(a, b, alternative="greater").pvalue
            one_sample = stats.ttest_1samp(a - b - epsilon, -epsilon, alternative="greater")
            assert n[j] == used[j].sum()
            assert p[j] == pytest.approx(expected, abs=1e-12)
            assert p[j] == pytest.approx(one_sample.pvalue, abs=1e-12)


@pytest.mark.parametrize(("seed", "winning_rate"), [(11, 0.8333), (12, 0.1667), (13, 1.0)])
def test_alt_test_winning_rate_is_the_share_of_by_rejections(seed, winning_rate):
    rng = np.random.default_rng(seed)
    votes, truth = _random_votes(rng, 6, 120, missing=0.2)
    judge = np.where(rng.random(120) < 0.7, truth, rng.integers(0, 3, 120))
    result = alt_test(votes, judge, epsilon=0.15, alpha=0.05)
    wf, wh, used = advantage_indicators(votes, judge, 3)
    p = [
        stats.ttest_rel(
            wf[j, used[j]] + 0.15, wh[j, used[j]].astype(float), alternative="greater"
        ).pvalue
        for j in range(6)
    ]
    rejected = multipletests(p, alpha=0.05, method="fdr_by")[0]
    assert result["p_values"] == pytest.approx(p, abs=1e-12)
    assert result["rejected"] == rejected.tolist()
    assert result["winning_rate"] == round(rejected.mean(), 4) == winning_rate
    assert result["passed"] is bool(rejected.mean() >= 0.5)
    assert result["advantage_probability"] == round(
        float(np.mean([wf[j, used[j]].mean() for j in range(6)])), 4
    )
    assert result["annotators"] == 6 and result["items"] == int(used.any(axis=0).sum())


def test_a_judge_equal_to_the_majority_always_wins_and_constant_differences_are_exact():
    # Three annotators on 40 items, unanimous: every difference is 0, t = +inf, p = 0 (as scipy).
    votes = np.zeros((3, 40), dtype=int)
    result = alt_test(votes, np.zeros(40, dtype=int))
    assert result["p_values"] == [0.0, 0.0, 0.0]
    assert result["winning_rate"] == 1.0 and result["passed"] is True
    assert stats.ttest_1samp(np.zeros(40), -DEFAULT_EPSILON, alternative="greater").pvalue == 0
    # A judge that never answers loses to every annotator.
    lost = alt_test(votes, np.full(40, -1))
    assert lost["p_values"] == [1.0, 1.0, 1.0] and lost["winning_rate"] == 0.0
    assert lost["passed"] is False and lost["advantage_probability"] == 0.0


def test_refusals_say_why():
    two = alt_test(np.zeros((2, 50), dtype=int), np.zeros(50, dtype=int))
    assert two["refused"].startswith("needs votes of at least 3 annotators; 2 voted")
    few = alt_test(np.zeros((3, 20), dtype=int), np.zeros(20, dtype=int))
    assert few["refused"] == (
        "needs at least 30 items from each of at least 3 annotators; 0 of the 3 annotators "
        "have as many (most: 20)"
    )
    # An annotator with too few items is left out of a test the others still meet.
    votes = np.zeros((4, 40), dtype=int)
    votes[3, 10:] = -1
    result = alt_test(votes, np.zeros(40, dtype=int))
    assert result["annotators_tested"] == 3 and result["annotators_skipped"] == 1
    assert result["items_per_annotator"] == [40, 40, 40]


# --- on a version's scorecard ----------------------------------------------------------------


def _upload(version, lead, judge, verdicts):
    lines = [{"question_id": q, "prediction": v} for q, v in verdicts.items()]
    judge_run_upload(version=version, judge=judge, file=predictions_file(lines), by=lead)
    return Scorecard.objects.get(version=version, judge=judge, split="open_ended").figures


@pytest.mark.django_db
def test_majority_judge_passes_and_random_judge_fails(lead, project):
    rows = voted_rows(60)
    version = version_with_votes(project, rows)
    majority = _upload(version, lead, "majority", {r["question_id"]: r["preference"] for r in rows})
    test = majority["alt_test"]
    assert (test["epsilon"], test["alpha"], test["refused"]) == (0.2, 0.05, None)
    assert test["passed"] == ["completeness", "clarity"] and test["failed"] == []
    for criterion in ("completeness", "clarity"):
        c = test["per_criterion"][criterion]
        assert (c["winning_rate"], c["passed"], c["annotators"], c["items"]) == (1.0, True, 3, 60)
        assert len(c["p_values"]) == 3 and max(c["p_values"]) < 1e-6
        assert c["advantage_probability"] == 1.0

    randomly = _upload(version, lead, "coin", random_verdicts(rows))["alt_test"]
    assert randomly["passed"] == [] and randomly["failed"] == ["completeness", "clarity"]
    for c in randomly["per_criterion"].values():
        assert (c["winning_rate"], c["passed"]) == (0.0, False)
        assert min(c["p_values"]) > 0.05


@pytest.mark.django_db
def test_fewer_than_three_annotators_is_refused_per_criterion(lead, project):
    rows = voted_rows(40, annotators=2)
    version = version_with_votes(project, rows)
    figures = _upload(version, lead, "majority", {r["question_id"]: r["preference"] for r in rows})
    test = figures["alt_test"]
    assert test["refused"] is None and test["refused_criteria"] == ["completeness", "clarity"]
    refused = test["per_criterion"]["clarity"]
    assert refused == {
        "annotators": 2,
        "items": 40,
        "refused": "needs votes of at least 3 annotators; 2 voted here with another annotator "
        "on the same item",
    }


@pytest.mark.django_db
def test_a_version_without_votes_is_refused_as_a_whole(lead, version):
    judge_run_upload(version=version, judge="judge-x", file=predictions_file(), by=lead)
    card = Scorecard.objects.get(version=version, judge="judge-x", split="open_ended")
    test = card.figures["alt_test"]
    assert test["refused"].startswith("this version was built without the annotators' votes")
    assert test["per_criterion"] == {}


@pytest.mark.django_db
def test_scorecard_page_and_api_show_the_test(client, lead, project):
    rows = voted_rows(40, annotators=3) + [
        {**r, "question_id": f"{r['question_id']}-x", "prompt_id": f"{r['prompt_id']}x"}
        for r in voted_rows(5, annotators=2, seed=9)
        if r["criterion"] == "clarity"
    ]
    version = version_with_votes(project, rows)
    _upload(version, lead, "majority", {r["question_id"]: r["preference"] for r in rows})
    client.force_login(lead)
    url = reverse("scorecard", args=[project.slug, 1, "majority"]) + "?split=open_ended"
    html = client.get(url).content.decode()
    assert "Alternative Annotator Test" in html
    assert "Could replace an annotator on: <strong>completeness, clarity</strong>." in html
    assert "Requirements: at least 3 annotators with at least 30 items each" in html
    assert "ε = <strong>0.2</strong>" in html

    api = APIClient()
    api.force_login(lead)
    detail = reverse("api-scorecard", args=[project.slug, 1, "open_ended", "majority"])
    figures = api.get(detail).json()["figures"]
    assert set(figures["alt_test"]) >= {"epsilon", "alpha", "per_criterion", "refused"}
    assert set(figures["alt_test"]["per_criterion"]["clarity"]) >= {
        "winning_rate",
        "passed",
        "annotators",
        "items",
        "p_values",
    }


@pytest.mark.django_db
def test_scorecard_page_shows_the_refusal(client, lead, version):
    judge_run_upload(version=version, judge="judge-x", file=predictions_file(), by=lead)
    client.force_login(lead)
    url = reverse("scorecard", args=[version.project.slug, 1, "judge-x"]) + "?split=open_ended"
    html = client.get(url).content.decode()
    assert "Not tested: this version was built without the annotators&#x27; votes" in html
    assert "Could replace an annotator on" not in html
