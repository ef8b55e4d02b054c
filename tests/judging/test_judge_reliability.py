"""A judge's reliability across orders and runs, next to the annotators' agreement."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from aggregation.models import AgreementSnapshot
from judging.metrics import INVALID, MISSING, MODEL_A, MODEL_B, A, B
from judging.models import JudgeRun, Scorecard
from judging.reliability import pairwise_agreement, run_categories, self_agreement
from judging.runner.figures import CallRecord, split_figures
from judging.services.scoring import judge_run_upload, scorecard_compute
from tests.judging.alt_test_data import version_with_votes, voted_rows
from tests.judging.web_data import predictions_file

# --- the statistics ------------------------------------------------------------------------


def _random_runs(seed: int, runs: int = 4, rows: int = 150) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.choice([A, B], rows)
    codes = np.where(rng.random((runs, rows)) < 0.75, truth, rng.choice([A, B, INVALID], rows))
    return np.where(rng.random((runs, rows)) < 0.05, MISSING, codes)


@pytest.mark.parametrize("seed", range(5))
def test_self_agreement_matches_statsmodels_fleiss_kappa(seed):
    codes = _random_runs(seed)
    cats = run_categories(codes)
    complete = (cats >= 0).all(axis=0)
    table, _ = aggregate_raters(cats[:, complete].T, n_cat=3)
    result = self_agreement(codes)
    assert result["value"] == pytest.approx(fleiss_kappa(table), abs=1e-12)
    assert result["runs"] == 4 and result["items"] == int(complete.sum())


@pytest.mark.parametrize("seed", range(3))
def test_pairwise_agreement_counts_agreeing_pairs_of_runs(seed):
    cats = run_categories(_random_runs(seed, runs=3))
    agree = total = 0
    for i in range(cats.shape[1]):
        column = cats[:, i]
        if (column < 0).any():
            continue
        for a, b in combinations(column.tolist(), 2):
            agree += a == b
            total += 1
    assert pairwise_agreement(cats)["value"] == pytest.approx(100 * agree / total, abs=1e-12)


def test_one_run_has_no_self_agreement():
    result = self_agreement(np.array([[A, B, A]]))
    assert result["value"] is None and result["runs"] == 1
    assert result["undefined_reason"] == "one run: run the judge again on the same rows"
    # Identical runs that only ever say A: chance agreement is 1, κ is undefined, never 1.
    constant = self_agreement(np.full((2, 5), A))
    assert constant["value"] is None and constant["pairwise"] == 100.0


# --- on a version's scorecard ----------------------------------------------------------------

KAPPA = {"completeness": 0.61234, "clarity": 0.4}


def _agreement(kappa: dict[str, float]) -> dict:
    return {"per_criterion": {c: {"fleiss": {"value": v}} for c, v in kappa.items()}}


def _lines(verdicts: dict[str, str]) -> list[dict]:
    return [{"question_id": q, "prediction": v} for q, v in verdicts.items()]


def _flipped(verdicts: dict[str, str], every: int, offset: int) -> dict[str, str]:
    out = dict(verdicts)
    for n, q in enumerate(sorted(out)):
        if n % every == offset:
            out[q] = MODEL_B if out[q] == MODEL_A else MODEL_A
    return out


def _records(rows: list[dict], disagree_every: int) -> list[CallRecord]:
    """Both orders of each row; every ``disagree_every``-th prompt's orders disagree."""
    out = []
    for r in rows:
        n = int(r["prompt_id"][1:])
        ba = (
            r["preference"]
            if n % disagree_every
            else (MODEL_B if r["preference"] == MODEL_A else MODEL_A)
        )
        for order, verdict in (("ab", r["preference"]), ("ba", ba)):
            out.append(
                CallRecord(r["question_id"], "open_ended", r["criterion"], 1, order, verdict,
                           "direct", 10, 2, 5, False)
            )  # fmt: skip
    return out


@pytest.mark.django_db
def test_reliability_figures_side_by_side_with_the_annotators(client, lead, project):
    rows = voted_rows(40)
    version = version_with_votes(
        project, rows, manifest={"agreement": {"open_ended": _agreement(KAPPA)}}
    )
    majority = {r["question_id"]: r["preference"] for r in rows}
    runs = [majority, _flipped(majority, 5, 0), _flipped(majority, 7, 3)]
    for verdicts in runs:
        judge_run_upload(
            version=version,
            judge="judge-r",
            file=predictions_file(_lines(verdicts)),
            by=lead,
            source=JudgeRun.Source.RUNNER,
        )
    # The runner's own figures of the latest run, stored as the runner stores them.
    latest = JudgeRun.objects.filter(version=version, judge="judge-r").order_by("run_index").last()
    runner = split_figures(_records(rows, disagree_every=4), both=True)
    latest.stats = {**latest.stats, "runner": {"open_ended": runner}}
    latest.save(update_fields=["stats"])
    scorecard_compute(version=version, judge="judge-r")

    card = Scorecard.objects.get(version=version, judge="judge-r", split="open_ended")
    per = card.figures["reliability"]["per_criterion"]
    assert card.figures["reliability"]["criteria"] == ["completeness", "clarity"]
    assert set(per) == {"completeness", "clarity"}
    for criterion in ("completeness", "clarity"):
        qids = sorted(r["question_id"] for r in rows if r["criterion"] == criterion)
        labels = np.array([[{MODEL_A: 0, MODEL_B: 1}[run[q]] for q in qids] for run in runs])
        table, _ = aggregate_raters(labels.T, n_cat=3)
        c = per[criterion]
        expected_position = runner["position_consistency"]["per_criterion"][criterion]
        assert c["position_consistency"] == expected_position["value"] == 75.0
        assert c["position_rows"] == 40
        assert c["self_agreement"] == round(fleiss_kappa(table), 4)
        assert c["runs"] == 3 and c["self_agreement_items"] == 40
        assert c["annotator_kappa"] == round(KAPPA[criterion], 4)
        assert c["annotator_kappa_source"] == "version"

    client.force_login(lead)
    url = reverse("scorecard", args=[project.slug, 1, "judge-r"]) + "?split=open_ended"
    html = client.get(url).content.decode()
    assert "Is the judge as consistent as a person?" in html
    assert '75.00% <span class="muted">of 40</span>' in html
    assert f">{per['completeness']['self_agreement']:.3f}<" in html and ">0.612<" in html

    api = APIClient()
    api.force_login(lead)
    detail = reverse("api-scorecard", args=[project.slug, 1, "open_ended", "judge-r"])
    figures = api.get(detail).json()["figures"]
    assert set(figures["reliability"]["per_criterion"]["clarity"]) >= {
        "position_consistency",
        "self_agreement",
        "runs",
        "annotator_kappa",
    }


@pytest.mark.django_db
def test_one_uploaded_run_without_stored_agreement_of_the_version(lead, project):
    rows = voted_rows(10)
    version = version_with_votes(project, rows)
    AgreementSnapshot.objects.create(
        project=project,
        split="open_ended",
        figures={"split": "open_ended", **_agreement({"clarity": 0.5})},
        computed_at=timezone.now(),
    )
    lines = _lines({r["question_id"]: r["preference"] for r in rows})
    judge_run_upload(version=version, judge="once", file=predictions_file(lines), by=lead)
    card = Scorecard.objects.get(version=version, judge="once", split="open_ended")
    per = card.figures["reliability"]["per_criterion"]
    assert per["clarity"] == {
        "position_consistency": None,
        "position_rows": None,
        "self_agreement": None,
        "self_agreement_pairwise": None,
        "self_agreement_items": 0,
        "self_agreement_reason": "one run: run the judge again on the same rows",
        "runs": 1,
        "annotator_kappa": 0.5,
        "annotator_kappa_source": "project",
    }
    assert per["completeness"]["annotator_kappa"] is None
    assert per["completeness"]["annotator_kappa_source"] is None
