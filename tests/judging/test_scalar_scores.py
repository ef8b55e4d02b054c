"""Scalar judges (reward models, pointwise 1-5 judges): scores -> verdicts with a tie margin δ."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from core.models import Job
from judging.metrics import ScoreInput, tie_margin_sweep
from judging.models import JudgeRun, Prediction, Scorecard
from judging.parsing import verdicts_from_scores
from judging.services.scoring import UploadRejected, judge_run_upload
from tests.judging.web_data import (
    HAND_EXPECTED_OPEN,
    HAND_EXPECTED_REASONING,
    HAND_PREDICTIONS,
    HAND_ROWS,
    A,
    jsonl,
    make_token,
)

pytestmark = pytest.mark.django_db

# The hand-worked verdicts as scores: the predicted side gets 2, the other 1 (gap 1), except
# p2__visual-grounding (predicted B, which is wrong): gap 0.3, so δ = 0.5 makes it a tie.
NEAR = "p2__visual-grounding"


def pair_scores() -> dict[str, tuple[float, float]]:
    scores = {q: (2.0, 1.0) if p == A else (1.0, 2.0) for q, p in HAND_PREDICTIONS.items()}
    scores[NEAR] = (1.0, 1.3)
    return scores


def pair_lines() -> list[dict]:
    return [{"question_id": q, "score_a": a, "score_b": b} for q, (a, b) in pair_scores().items()]


def pointwise_csv() -> bytes:
    """One line per response, 1-5 scores, addressed by prompt_id + criterion."""
    out = ["prompt_id,criterion,response,score"]
    for q, p in HAND_PREDICTIONS.items():
        prompt, criterion = q.split("__")
        a, b = (5, 2) if p == A else (2, 5)
        out += [f"{prompt},{criterion},a,{a}", f"{prompt},{criterion},b,{b}"]
    return ("\n".join(out) + "\n").encode()


def as_file(data: bytes, name: str) -> io.BytesIO:
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def cards(version, judge):
    return {c.split: c for c in Scorecard.objects.filter(version=version, judge=judge)}


def test_the_tie_rule():
    labels = verdicts_from_scores(
        np.array([2.0, 1.0, 1.0, 1.0, np.nan]), np.array([1.0, 2.0, 1.4, 1.5, 1.0]), 0.5
    )
    assert labels.tolist() == ["model_a", "model_b", "tie", "tie", None]
    assert verdicts_from_scores([1.0], [1.0], 0.0).tolist() == ["tie"]
    with pytest.raises(ValueError, match="0 or more"):
        verdicts_from_scores([1.0], [1.0], -1)


def test_score_pairs_at_margin_zero_give_the_hand_worked_scorecard(version, lead):
    """δ = 0: every gap decides, the verdicts are the hand-worked ones, so are the figures."""
    result = judge_run_upload(
        version=version, judge="rm-7b", file=as_file(jsonl(pair_lines()), "rm.jsonl"), by=lead
    )
    run = result.run
    assert run.stats["scored"] is True and run.stats["tie_margin"] == 0.0
    assert run.stats["ties"] == 0
    stored = {
        q: (p, a, b)
        for q, p, a, b in Prediction.objects.values_list(
            "question_id", "prediction", "score_a", "score_b"
        )
    }
    assert {q: p for q, (p, _, _) in stored.items()} == HAND_PREDICTIONS
    assert stored[NEAR][1:] == (1.0, 1.3)
    open_card = cards(version, "rm-7b")["open_ended"]
    exp = HAND_EXPECTED_OPEN
    assert (open_card.pacc, open_card.cmr, open_card.tos, open_card.avg) == (
        exp["pacc"], exp["cmr"], exp["tos"], exp["avg"]
    )  # fmt: skip
    for key in ("pacc", "cmr", "tos", "avg", "overall"):
        lo, hi = open_card.figures[key]["ci"]
        assert lo <= open_card.figures[key]["value"] <= hi
    reasoning = cards(version, "rm-7b")["reasoning"]
    assert (reasoning.pacc, reasoning.cmr, reasoning.tos, reasoning.avg) == tuple(
        HAND_EXPECTED_REASONING[k] for k in ("pacc", "cmr", "tos", "avg")
    )


def test_a_margin_turns_a_close_pair_into_a_tie_that_counts_as_wrong(version, lead):
    judge_run_upload(
        version=version,
        judge="rm-7b",
        file=as_file(jsonl(pair_lines()), "rm.jsonl"),
        by=lead,
        tie_margin=0.5,
    )
    run = JudgeRun.objects.get()
    assert run.stats["tie_margin"] == 0.5 and run.stats["ties"] == 1
    assert Prediction.objects.get(question_id=NEAR).prediction == "tie"
    card = cards(version, "rm-7b")["open_ended"]
    f = card.figures
    # The tie replaces a wrong B verdict: the accuracies stay, the tie is not a valid verdict.
    assert (card.pacc, card.cmr, card.tos, card.avg) == (33.33, 66.67, 100.0, 66.67)
    assert f["overall"]["value"] == 71.43
    assert f["counts"]["invalid"] == 1 and f["counts"]["valid"] == 6
    assert f["diagnostics"]["pred_a_share"] == 50.0  # 3 A of 6 valid
    sweep = f["tie_margin"]
    assert sweep["run_index"] == 1 and sweep["tie_margin"] == 0.5
    assert sweep["ties"] == 1 and sweep["scored"] == 7
    points = {p["margin"]: p for p in sweep["sweep"]}
    assert points[0.0]["ties"] == 0 and points[0.0]["overall"] == 71.43
    assert points[0.5]["ties"] == 1 and points[0.5]["overall"] == 71.43
    # At the largest gap (1) every pair is a tie: nothing is right.
    assert points[1.0]["ties"] == 7 and points[1.0]["overall"] == 0.0
    assert points[1.0]["pacc"] == 0.0
    assert [p["margin"] for p in sweep["sweep"]] == sorted(points)


def test_a_pointwise_csv_goes_through_the_same_path(version, lead):
    """1-5 per response, one line per response: the same verdicts and figures."""
    judge_run_upload(
        version=version, judge="pointwise", file=as_file(pointwise_csv(), "pw.csv"), by=lead
    )
    stored = dict(Prediction.objects.values_list("question_id", "prediction"))
    assert stored == HAND_PREDICTIONS
    assert Prediction.objects.get(question_id="p1__completeness").score_a == 5.0
    card = cards(version, "pointwise")["open_ended"]
    assert (card.pacc, card.cmr, card.tos, card.avg) == (33.33, 66.67, 100.0, 66.67)


def test_bad_score_lines_name_line_and_field_and_store_nothing(version, lead):
    lines = [
        {"question_id": "p1__completeness", "score_a": "high", "score_b": 1},  # 1
        {"question_id": "p1__visual-grounding", "score_a": 1},  # 2: no score_b
        {"question_id": "p1__hallucination", "response": "c", "score": 3},  # 3
        {"question_id": "p2__completeness", "response": "a", "score": 3},  # 4: b never given
        {"question_id": "p3__completeness", "prediction": "A"},  # 5: a verdict in a score file
        {"question_id": "q1__logic", "score_a": 1, "score_b": 2, "output": "x"},  # 6: both
    ]
    with pytest.raises(UploadRejected) as caught:
        judge_run_upload(
            version=version, judge="rm", file=as_file(jsonl(lines), "x.jsonl"), by=lead
        )
    errors = [(e["line"], e["field"]) for e in caught.value.errors]
    assert errors == [
        (1, "score_a"),
        (2, "score_b"),
        (3, "response"),
        (4, "response"),
        (5, "prediction"),
        (6, "output"),
    ]
    messages = [e["message"] for e in caught.value.errors]
    assert "must be a finite number, got 'high'" in messages[0]
    assert "response a only" in messages[3]
    assert "not both" in messages[4]
    assert not JudgeRun.objects.exists() and not Prediction.objects.exists()
    with pytest.raises(UploadRejected) as caught:
        judge_run_upload(
            version=version, judge="rm", file=as_file(jsonl(pair_lines()), "x.jsonl"), by=lead,
            tie_margin=-1,
        )  # fmt: skip
    assert caught.value.field == "tie_margin"
    assert not JudgeRun.objects.exists()


def test_sweep_matches_scoring_each_margin_directly():
    rows = ScoreInput(
        question_id=[f"{p}__{c}" for p, _, c, _ in HAND_ROWS],
        prompt_id=[p for p, _, _, _ in HAND_ROWS],
        split=[s for _, s, _, _ in HAND_ROWS],
        criterion=[c for _, _, c, _ in HAND_ROWS],
        preference=[h for _, _, _, h in HAND_ROWS],
    )
    scores = pair_scores()
    a = np.array([scores[q][0] for q in rows.question_id.tolist()])
    b = np.array([scores[q][1] for q in rows.question_id.tolist()])
    sweep = tie_margin_sweep(rows, a, b, split="open_ended", margins=[0.0, 0.2, 0.31, 2.0])
    assert [(p["margin"], p["ties"], p["overall"]) for p in sweep] == [
        (0.0, 0, 71.43),
        (0.2, 0, 71.43),
        (0.31, 1, 71.43),
        (2.0, 7, 0.0),
    ]


def test_the_upload_page_takes_a_margin_and_the_scorecard_draws_the_curve(
    client, lead, version, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    url = reverse("predictions-upload", args=[version.project.slug, version.number])
    assert 'name="tie_margin"' in client.get(url).content.decode()
    upload = SimpleUploadedFile("rm.jsonl", jsonl(pair_lines()), content_type="application/jsonl")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"judge": "rm-7b", "tie_margin": "0.5", "file": upload})
    assert response.status_code == 302
    job = Job.objects.get(kind=Job.Kind.SCORE_JUDGE)
    assert job.status == Job.Status.SUCCEEDED and job.params["tie_margin"] == 0.5
    page = client.get(
        reverse("scorecard", args=[version.project.slug, 1, "rm-7b"]) + "?split=open_ended"
    ).content.decode()
    assert "Scores and the tie margin δ" in page
    assert "Accuracy, PAcc and ties over the tie margin δ" in page  # the chart's title
    assert "<polyline" in page
    assert '<tr class="vote-row" aria-current="true"><td class="num">0.5</td>' in page


def test_the_api_takes_scores_and_a_margin(lead, version):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(lead, scope='read predictions')}")
    url = reverse("api-predictions-submit", args=[version.project.slug, version.number])
    response = api.post(
        url, {"judge": "rm", "predictions": pair_lines(), "tie_margin": 0.5}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["runs"][0]["stats"]["ties"] == 1
    detail = api.get(
        reverse("api-scorecard", args=[version.project.slug, version.number, "open_ended", "rm"])
    ).json()
    assert detail["figures"]["tie_margin"]["tie_margin"] == 0.5
    assert detail["figures"]["tie_margin"]["ties"] == 1
    bad = api.post(
        url,
        {"judge": "rm2", "predictions": [{"question_id": "p1__logic", "score_a": 1}]},
        format="json",
    )
    assert bad.status_code == 400


def test_score_judge_command_takes_a_margin(tmp_path, version):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "\n".join(
            json.dumps(
                {
                    "question_id": f"{p}__{c}", "prompt_id": p, "split": s, "criterion": c,
                    "question": "q", "pred_a": "x", "pred_b": "y", "preference": h,
                }
            )
            for p, s, c, h in HAND_ROWS
        )
    )  # fmt: skip
    preds = tmp_path / "rm.jsonl"
    preds.write_bytes(jsonl(pair_lines()))
    out = io.StringIO()
    call_command(
        "score_judge", str(rows), str(preds), "--format", "json", "--n-boot", "0",
        "--tie-margin", "0.5", stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    payload = json.loads(out.getvalue())
    text = json.dumps(payload)
    assert "71.43" in text and "33.33" in text
