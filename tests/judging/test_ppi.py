"""Prediction-powered judge evaluation: the estimator against the reference library, coverage,
the ``ppi_judge`` command and the scorecard's figures on a version routed through the panel."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from annotation.audit import audit_mask
from annotation.models import Criterion, PanelLabel, RoutingPolicy
from judging.metrics import HUMAN_TIE, INVALID, MISSING
from judging.metrics import A as CODE_A
from judging.metrics import B as CODE_B
from judging.models import Scorecard
from judging.ppi import (
    correct_and_agree,
    ppi_accuracy,
    ppi_grouped,
    ppi_mean,
    ppi_pacc,
    prompt_outcomes,
    z_value,
)
from judging.services.scoring import judge_run_upload
from tests.conftest import make_sample
from tests.judging.web_data import make_version, predictions_file

A, B = "model_a", "model_b"
CRITERIA = ("grounding", "logic", "hallucination")


def binary_sample(rng: np.random.Generator, n: int, big_n: int, agreement: float):
    """Labeled Y, its proxies, and the unlabeled proxies of a correlated binary pair."""
    y = (rng.random(n + big_n) < 0.7).astype(float)
    yhat = np.where(rng.random(n + big_n) < agreement, y, 1 - y)
    return y[:n], yhat[:n], yhat[n:]


# --- The estimator ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("lam", [None, 1.0, 0.4])
def test_estimate_and_interval_equal_the_reference_library(seed, lam):
    y, yhat, yhat_u = binary_sample(np.random.default_rng(seed), 120, 880, 0.85)
    result = ppi_mean(y, yhat, yhat_u, level=0.9, lam=lam)
    expected = ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)
    low, high = ppi_mean_ci(y, yhat, yhat_u, alpha=0.1, lam=lam)
    assert result.estimate[0] == pytest.approx(float(np.squeeze(expected)), abs=1e-12)
    assert result.low[0] == pytest.approx(float(np.squeeze(low)), abs=1e-12)
    assert result.high[0] == pytest.approx(float(np.squeeze(high)), abs=1e-12)


def test_tuned_lambda_is_the_published_formula_and_minimises_the_variance():
    y, yhat, yhat_u = binary_sample(np.random.default_rng(5), 100, 400, 0.8)
    n, big_n = len(y), len(yhat_u)
    cov = np.mean((y - y.mean()) * (yhat - yhat.mean()))
    lam = cov / ((1 + n / big_n) * np.var(np.concatenate([yhat, yhat_u]), ddof=1))
    result = ppi_mean(y, yhat, yhat_u)
    assert 0 < lam < 1
    assert result.lam[0] == pytest.approx(lam, abs=1e-12)
    # The tuned λ's interval is no wider than those of λ on a grid around it.
    for other in np.linspace(0, 1, 11):
        assert result.se[0] <= ppi_mean(y, yhat, yhat_u, lam=other).se[0] + 1e-3


def test_lambda_is_clipped_to_0_and_1():
    y = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    anti = 1 - y  # a proxy against the labels: the variance-minimising λ is negative
    assert ppi_mean(y, anti, np.array([1.0, 0.0, 1.0])).lam[0] == 0.0
    # A proxy equal to the labels: Var(Y) / ((1 + n/N) Var(Ŷ)), below 1.
    unlabeled = np.array([1.0, 0.0] * 50)
    expected = np.var(y) / ((1 + 6 / 100) * np.var(np.concatenate([y, unlabeled]), ddof=1))
    assert ppi_mean(y, y, unlabeled).lam[0] == pytest.approx(expected)
    assert 0.9 < expected < 1.0
    # Proxies spread on the labeled items and constant elsewhere want λ far above 1.
    spread = np.array([1.0, 0.0] * 5)
    assert ppi_mean(spread, spread, np.ones(1000)).lam[0] == 1.0


def test_lambda_0_is_the_human_only_mean_and_interval():
    y, yhat, yhat_u = binary_sample(np.random.default_rng(3), 80, 500, 0.9)
    result = ppi_mean(y, yhat, yhat_u, lam=0.0)
    half = 1.959963984540054 * np.std(y) / np.sqrt(len(y))
    assert result.estimate[0] == pytest.approx(y.mean())
    assert (result.low[0], result.high[0]) == pytest.approx((y.mean() - half, y.mean() + half))
    assert result.human_estimate[0] == result.estimate[0]
    assert (result.human_low[0], result.human_high[0]) == pytest.approx(
        (result.low[0], result.high[0])
    )
    assert result.effective_n[0] == pytest.approx(len(y))


def test_effective_n_is_the_human_sample_of_the_same_width():
    y, yhat, yhat_u = binary_sample(np.random.default_rng(4), 100, 900, 0.92)
    result = ppi_mean(y, yhat, yhat_u)
    eff = result.effective_n[0]
    assert eff == pytest.approx(np.var(y) / result.se[0] ** 2)
    # A human-only interval on eff labels with the same spread is exactly as wide.
    width = 2 * z_value(0.95) * np.std(y) / np.sqrt(eff)
    assert width == pytest.approx(result.high[0] - result.low[0])
    assert eff > 1.5 * len(y)  # a reference agreeing 92% with the labels is worth a lot


def test_grouped_equals_one_group_at_a_time():
    rng = np.random.default_rng(6)
    gl, gu = rng.integers(0, 4, 300), rng.integers(0, 4, 2000)
    y = (rng.random(300) < 0.6).astype(float)
    hl = np.where(rng.random(300) < 0.8, y, 1 - y)
    hu = (rng.random(2000) < 0.6).astype(float)
    grouped = ppi_grouped(gl, y, hl, gu, hu, 5)
    for g in range(4):
        single = ppi_mean(y[gl == g], hl[gl == g], hu[gu == g])
        assert grouped.estimate[g] == pytest.approx(single.estimate[0])
        assert grouped.low[g] == pytest.approx(single.low[0])
        assert grouped.lam[g] == pytest.approx(single.lam[0])
    assert np.isnan(grouped.estimate[4])  # a group without labels has no figure
    assert (grouped.labeled[4], grouped.unlabeled[4]) == (0, 0)


def test_no_unlabeled_item_falls_back_to_the_labels():
    y = np.array([1.0, 0.0, 1.0, 1.0])
    result = ppi_mean(y, y, np.array([]))
    assert result.lam[0] == 0.0 and result.estimate[0] == 0.75


def test_accuracy_and_pacc_targets_by_hand():
    # Two criteria, three prompts; prompt 2 is unlabeled.
    prompt = np.array([0, 0, 1, 1, 2, 2])
    criterion = np.array([0, 1, 0, 1, 0, 1])
    human = np.array([CODE_A, CODE_B, CODE_A, HUMAN_TIE, CODE_B, CODE_A])
    judge = np.array([CODE_A, CODE_B, CODE_B, CODE_A, CODE_B, INVALID])
    reference = np.array([CODE_A, CODE_B, CODE_A, CODE_A, CODE_B, INVALID])
    labeled = np.array([True, True, True, True, False, False])
    y, yhat = correct_and_agree(human, judge, reference)
    assert y.tolist() == [True, True, False, False, True, False]  # a tie is never right
    assert yhat.tolist() == [True, True, False, True, True, False]  # invalid never agrees
    acc = ppi_accuracy(criterion, human, judge, reference, labeled, 2, lam=1.0)
    # Criterion 0: Y (1, 0), Ŷ (1, 0) on labeled; Ŷ 1 unlabeled: 1 + 0.5 - 0.5 = 1.
    # Criterion 1: Y (1, 0), Ŷ (1, 1); Ŷ 0 unlabeled: 0 + 0.5 - 1 = -0.5.
    assert acc.estimate.tolist() == [1.0, -0.5]
    y_p, yhat_p, labeled_p = prompt_outcomes(prompt, y, yhat, labeled, 3)
    assert y_p.tolist() == [True, False, False]
    assert yhat_p.tolist() == [True, False, False]
    assert labeled_p.tolist() == [True, True, False]
    pacc = ppi_pacc(prompt, human, judge, reference, labeled, 3, lam=1.0)
    # Labeled prompts: Y (1, 0), Ŷ (1, 0); the unlabeled prompt's Ŷ is 0: 0 + mean(Y - Ŷ) = 0.
    assert pacc.estimate[0] == 0.0
    assert (pacc.labeled[0], pacc.unlabeled[0]) == (2, 1)


def test_coverage_of_a_small_simulation():
    """400 pools of 300 prompts x 3 criteria, 15% of the prompts labeled: the 95% interval of
    each criterion's accuracy and of PAcc holds the pool's full-label figure in >= 93%."""
    rng = np.random.default_rng(11)
    n_prompts, hits, total, ratio = 300, 0, 0, []
    prompt = np.repeat(np.arange(n_prompts), 3)
    criterion = np.tile(np.arange(3), n_prompts)
    for _ in range(400):
        human = np.where(rng.random(len(prompt)) < 0.5, CODE_A, CODE_B)
        right = rng.random(len(prompt)) < np.array([0.8, 0.7, 0.6])[criterion]
        judge = np.where(right, human, CODE_A + CODE_B - human)
        agree = rng.random(len(prompt)) < 0.88
        reference = np.where(agree, human, CODE_A + CODE_B - human)
        picked = np.zeros(n_prompts, dtype=bool)
        picked[rng.choice(n_prompts, 45, replace=False)] = True
        labeled = picked[prompt]
        acc = ppi_accuracy(criterion, human, judge, reference, labeled, 3)
        pacc = ppi_pacc(prompt, human, judge, reference, labeled, n_prompts)
        y = judge == human
        truth = np.append(
            np.bincount(criterion, weights=y) / n_prompts, y.reshape(-1, 3).all(1).mean()
        )
        low, high = np.append(acc.low, pacc.low), np.append(acc.high, pacc.high)
        hits += int(((low <= truth) & (truth <= high)).sum())
        total += len(truth)
        width = np.append(acc.high - acc.low, pacc.high - pacc.low)
        human_width = np.append(acc.human_high - acc.human_low, pacc.human_high - pacc.human_low)
        ratio.append(width.sum() / human_width.sum())
    assert hits / total >= 0.93
    assert np.mean(ratio) < 0.9  # narrower than the human-only interval


# --- The command --------------------------------------------------------------------------------


def make_files(tmp_path: Path, n_prompts: int = 60, seed: int = 1):
    """Rows (one reasoning split, 3 criteria a prompt), a judge's and a reference's predictions."""
    rng = np.random.default_rng(seed)
    rows, judge, reference = [], [], []
    for p in range(n_prompts):
        for c in CRITERIA:
            qid = f"q{p}__{c}"
            human = A if rng.random() < 0.5 else B
            other = B if human == A else A
            rows.append(
                {
                    "question_id": qid,
                    "prompt_id": f"q{p}",
                    "split": "reasoning",
                    "criterion": c,
                    "question": f"Question {p}",
                    "image_path": f"images/q{p}.png",
                    "pred_a": "one",
                    "pred_b": "two",
                    "model_a": "m1",
                    "model_b": "m2",
                    "preference": human,
                }
            )
            judge.append({"question_id": qid, "prediction": human if rng.random() < 0.7 else other})
            ref = human if rng.random() < 0.9 else other
            reference.append({"question_id": qid, "prediction": ref})
    paths = {}
    for name, lines in (("rows", rows), ("judge-x", judge), ("panel", reference)):
        paths[name] = tmp_path / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(line) + "\n" for line in lines))
    return paths, rows, judge, reference


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("ppi_judge", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def expected_entry(human, judge, reference, labeled):
    """PPI++ by the reference library on the per-row Y and Ŷ (percentages, 2 decimals)."""
    y = (judge == human).astype(float)
    yhat = (judge == reference).astype(float)
    est = float(np.squeeze(ppi_mean_pointestimate(y[labeled], yhat[labeled], yhat[~labeled])))
    low, high = ppi_mean_ci(y[labeled], yhat[labeled], yhat[~labeled], alpha=0.05)
    return (
        round(100 * est, 2),
        [
            round(100 * max(float(np.squeeze(low)), 0), 2),
            round(100 * min(float(np.squeeze(high)), 1), 2),
        ],
        round(100 * y[labeled].mean(), 2),
        round(100 * y.mean(), 2),
    )


def test_command_with_a_file_of_prompt_ids(tmp_path):
    paths, rows, judge, reference = make_files(tmp_path)
    ids = tmp_path / "labeled.txt"
    ids.write_text("".join(f"q{p}\n" for p in range(0, 60, 4)))  # 15 of 60 prompts
    payload = json.loads(
        run(
            str(paths["rows"]),
            str(paths["judge-x"]),
            "--reference",
            str(paths["panel"]),
            "--labeled",
            str(ids),
            "--format",
            "json",
        )
    )
    assert payload["judge"] == "judge-x"
    figures = payload["splits"]["reasoning"]
    assert figures["reference"] == "panel"
    assert (figures["labeled"], figures["pool"]) == (45, 180)
    assert list(figures["per_criterion"]) == list(CRITERIA)  # the protocol's order
    human = np.array([r["preference"] for r in rows])
    pred = np.array([j["prediction"] for j in judge])
    ref = np.array([r["prediction"] for r in reference])
    crit = np.array([r["criterion"] for r in rows])
    labeled = np.array([int(r["prompt_id"][1:]) % 4 == 0 for r in rows])
    for c in CRITERIA:
        at = crit == c
        est, ci, human_only, full = expected_entry(human[at], pred[at], ref[at], labeled[at])
        got = figures["per_criterion"][c]
        assert (got["estimate"], got["ci"]) == (est, ci)
        assert got["human_only"]["estimate"] == human_only
        assert got["full"] == full
        assert (got["labeled"], got["pool"]) == (15, 60)
        assert 0 <= got["lambda"] <= 1 and got["effective_n"] > 15
    # PAcc: per prompt, every criterion right / agreeing with the reference.
    per_prompt = [slice(3 * p, 3 * p + 3) for p in range(60)]
    y_p = np.array([np.all(pred[s] == human[s]) for s in per_prompt])
    h_p = np.array([np.all(pred[s] == ref[s]) for s in per_prompt])
    lab_p = np.arange(60) % 4 == 0
    pacc = figures["pacc"]
    est = float(
        np.squeeze(ppi_mean_pointestimate(y_p[lab_p] * 1.0, h_p[lab_p] * 1.0, h_p[~lab_p] * 1.0))
    )
    assert pacc["estimate"] == round(100 * est, 2)
    assert pacc["full"] == round(100 * y_p.mean(), 2)
    assert (pacc["labeled"], pacc["pool"]) == (15, 60)


def test_command_table_with_a_random_share(tmp_path):
    paths, *_ = make_files(tmp_path)
    args = (str(paths["rows"]), str(paths["judge-x"]), "--reference", str(paths["panel"]))
    table = run(*args, "--labeled-share", "0.2", "--seed", "3")
    assert table.startswith("reasoning: judge-x against the human labels of 36 rows of 180")
    assert "reference panel on every row (95% intervals)" in table
    lines = table.splitlines()
    assert lines[1].split() == [
        "Target",
        "PPI",
        "PPI",
        "CI",
        "lambda",
        "eff.",
        "n",
        "labeled",
        "Human",
        "Human",
        "CI",
        "All",
    ]
    assert [line.split()[0] for line in lines[3:7]] == [*CRITERIA, "PAcc"]
    assert lines[6].split()[5] == "12/60"  # 20% of the prompts
    assert run(*args, "--labeled-share", "0.2", "--seed", "3") == table  # the seed decides
    assert run(*args, "--labeled-share", "0.2", "--seed", "4") != table


def test_command_refusals(tmp_path):
    paths, *_ = make_files(tmp_path, n_prompts=5)
    args = (str(paths["rows"]), str(paths["judge-x"]), "--reference", str(paths["panel"]))
    ids = tmp_path / "ids.txt"
    ids.write_text("q1\nnope\n")
    with pytest.raises(CommandError, match="'nope' is no question id or prompt id"):
        run(*args, "--labeled", str(ids))
    with pytest.raises(CommandError, match="between 0 and 1"):
        run(*args, "--labeled-share", "1.5")


def test_command_labels_single_rows_by_question_id(tmp_path):
    paths, *_ = make_files(tmp_path, n_prompts=10)
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(f"q{p}__logic" for p in range(10)) + "\nq0\n")
    out = json.loads(
        run(
            str(paths["rows"]),
            str(paths["judge-x"]),
            "--reference",
            str(paths["panel"]),
            "--labeled",
            str(ids),
            "--format",
            "json",
        )
    )["splits"]["reasoning"]
    assert out["labeled"] == 12  # ten logic rows and the other two rows of q0
    assert out["per_criterion"]["logic"]["labeled"] == 10
    assert out["per_criterion"]["grounding"]["labeled"] == 1
    assert out["per_criterion"]["grounding"]["estimate"] is None  # one label is too few
    assert out["pacc"]["labeled"] == 1


# --- The scorecard ------------------------------------------------------------------------------


def routed_version(project, n_prompts: int = 40, seed: int = 2):
    """A version of a project routed through the panel, with panel labels on every row."""
    project.routing_policy = RoutingPolicy.PANEL_VERIFIER
    project.audit_share = "0.3"
    project.audit_seed = 7
    project.save()
    rng = np.random.default_rng(seed)
    rows, panel, predictions = [], {}, {}
    criteria = {c.key: c for c in Criterion.objects.filter(project=project, split="reasoning")}
    for p in range(n_prompts):
        sample = make_sample(project, f"s{p}", split="reasoning")
        for key in CRITERIA:
            human = A if rng.random() < 0.5 else B
            other = B if human == A else A
            choice = human if rng.random() < 0.9 else other
            PanelLabel.objects.create(
                sample=sample,
                criterion=criteria[key],
                choice="A" if choice == A else "B",
                unanimous=True,
                consistent=True,
                routable=True,
                judges=["j1", "j2"],
            )
            rows.append((f"s{p}", "reasoning", key, human))
            panel[f"s{p}__{key}"] = choice
            predictions[f"s{p}__{key}"] = human if rng.random() < 0.7 else other
    return make_version(project, rows), rows, panel, predictions


@pytest.mark.django_db
def test_scorecard_holds_the_ppi_figures_of_a_routed_version(client, project, lead):
    version, rows, panel, predictions = routed_version(project)
    lines = [{"question_id": q, "prediction": p} for q, p in predictions.items()]
    judge_run_upload(version=version, judge="judge-x", file=predictions_file(lines), by=lead)
    card = Scorecard.objects.get(version=version, judge="judge-x", split="reasoning")
    ppi = card.figures["ppi"]
    audited = audit_mask(7, [f"s{p}" for p in range(40)], 0.3)
    n_audit = int(audited.sum())
    assert 2 <= n_audit < 40
    assert ppi["reference"] == "judge panel (j1, j2)"
    assert (ppi["labeled"], ppi["pool"]) == (3 * n_audit, 120)
    qids = [f"{p}__{c}" for p, _, c, _ in rows]
    human = np.array([h for *_, h in rows])
    pred = np.array([predictions[q] for q in qids])
    ref = np.array([panel[q] for q in qids])
    crit = np.array([c for _, _, c, _ in rows])
    labeled = np.repeat(audited, 3)
    for c in CRITERIA:
        at = crit == c
        est, ci, human_only, _ = expected_entry(human[at], pred[at], ref[at], labeled[at])
        got = ppi["per_criterion"][c]
        assert (got["estimate"], got["ci"], got["human_only"]["estimate"]) == (est, ci, human_only)
        assert "full" not in got
    assert ppi["pacc"]["labeled"] == n_audit
    client.force_login(lead)
    html = client.get(
        reverse("scorecard", args=[project.slug, 1, "judge-x"]) + "?split=reasoning"
    ).content.decode()
    section = html[html.index('id="judge-ppi-title"') :]
    assert "judge panel (j1, j2)" in section
    assert f"({3 * n_audit} of 120 rows)" in section
    assert f"{ppi['per_criterion']['logic']['estimate']:.2f}" in section


@pytest.mark.django_db
def test_no_ppi_figures_without_routing_or_panel(client, project, lead):
    version, _, _, predictions = routed_version(project)
    lines = [{"question_id": q, "prediction": p} for q, p in predictions.items()]
    project.routing_policy = RoutingPolicy.OFF
    project.save()
    judge_run_upload(version=version, judge="judge-x", file=predictions_file(lines), by=lead)
    card = Scorecard.objects.get(version=version, judge="judge-x", split="reasoning")
    assert "ppi" not in card.figures
    client.force_login(lead)
    html = client.get(
        reverse("scorecard", args=[project.slug, 1, "judge-x"]) + "?split=reasoning"
    ).content.decode()
    assert "Prediction-powered estimate" not in html
    project.routing_policy = RoutingPolicy.PANEL_VERIFIER
    project.save()
    PanelLabel.objects.all().delete()
    judge_run_upload(version=version, judge="judge-y", file=predictions_file(lines), by=lead)
    assert "ppi" not in Scorecard.objects.get(judge="judge-y").figures


def test_missing_reference_never_agrees():
    assert correct_and_agree(np.array([CODE_A]), np.array([MISSING]), np.array([MISSING]))[
        1
    ].tolist() == [False]
