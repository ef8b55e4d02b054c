"""Storing predictions and computing scorecards: values, majority vote, all-or-nothing errors."""

import pytest

from judging.models import JudgeRun, Prediction, Scorecard
from judging.services.scoring import (
    UploadRejected,
    judge_run_delete,
    judge_run_upload,
    scorecard_compute,
)
from tests.judging.web_data import (
    HAND_EXPECTED_OPEN,
    HAND_EXPECTED_REASONING,
    HAND_PREDICTIONS,
    A,
    B,
    flipped,
    make_version,
    prediction_lines,
    predictions_file,
)

pytestmark = pytest.mark.django_db


def upload(version, lead, lines=None, **kw):
    kw.setdefault("judge", "judge-x")
    return judge_run_upload(version=version, file=predictions_file(lines), by=lead, **kw)


def nothing_stored():
    return not (JudgeRun.objects.exists() or Prediction.objects.exists())


def test_upload_stores_every_prediction_and_hand_computed_scorecards(version, lead):
    result = upload(version, lead, template_hash="tmpl-1")

    run = result.run
    assert (run.judge, run.run_index, run.template_hash, run.created_by) == (
        "judge-x",
        1,
        "tmpl-1",
        lead,
    )
    stored = dict(Prediction.objects.filter(run=run).values_list("question_id", "prediction"))
    assert stored == HAND_PREDICTIONS
    assert run.stats["accepted"] == 9 and run.stats["invalid"] == 0

    cards = {c.split: c for c in Scorecard.objects.filter(version=version, judge="judge-x")}
    assert set(cards) == {"open_ended", "reasoning"}
    card, f = cards["open_ended"], cards["open_ended"].figures
    exp = HAND_EXPECTED_OPEN
    assert (card.pacc, card.cmr, card.tos, card.avg) == (
        exp["pacc"],
        exp["cmr"],
        exp["tos"],
        exp["avg"],
    )
    assert f["overall"]["value"] == exp["overall"]
    assert {k: v["acc"] for k, v in f["per_criterion"].items()} == exp["per_criterion"]
    assert {k: f["counts"][k] for k in exp["counts"]} == exp["counts"]
    assert f["diagnostics"]["same_verdict_share"] == exp["same_verdict_share"]
    assert f["diagnostics"]["pred_a_share"] == exp["pred_a_share"]
    assert f["diagnostics"]["human_a_share"] == exp["human_a_share"]
    # Every headline figure carries a bootstrap CI around its value.
    for key in ("pacc", "cmr", "tos", "avg", "overall"):
        lo, hi = f[key]["ci"]
        assert lo <= f[key]["value"] <= hi
    assert card.runs == 1 and card.template_hash == "tmpl-1"
    assert [r["run_index"] for r in f["runs"]] == [1]

    reasoning = cards["reasoning"]
    assert (reasoning.pacc, reasoning.cmr, reasoning.tos, reasoning.avg) == tuple(
        HAND_EXPECTED_REASONING[k] for k in ("pacc", "cmr", "tos", "avg")
    )


def test_majority_vote_over_three_runs(version, lead):
    base = HAND_PREDICTIONS
    # Run 2 fixes p1 hallucination and p2 visual-grounding; run 3 fixes p1 hallucination
    # and answers p2 visual-grounding with garbage. Vote per row: p1 hallucination B, A, A -> A
    # (right); p2 visual-grounding B, A, invalid -> one A against one B: a tie, invalid.
    run2 = flipped(base, "p1__hallucination", "p2__visual-grounding")
    run3 = flipped(base, "p1__hallucination")
    run3["p2__visual-grounding"] = "no idea"
    upload(version, lead)
    upload(version, lead, prediction_lines(run2))
    result = upload(version, lead, prediction_lines(run3))

    assert [r.run_index for r in JudgeRun.objects.filter(judge="judge-x")] == [1, 2, 3]
    assert result.run.run_index == 3
    card = Scorecard.objects.get(version=version, judge="judge-x", split="open_ended")
    assert card.runs == 3
    f = card.figures
    # Voted: completeness 3/3, visual-grounding 1/2 (p2 invalid), hallucination 2/2.
    assert {k: v["acc"] for k, v in f["per_criterion"].items()} == {
        "completeness": 100.0,
        "visual-grounding": 50.0,
        "hallucination": 100.0,
    }
    assert card.avg == 83.33
    assert f["overall"]["value"] == 85.71  # 6 / 7
    assert card.pacc == 66.67  # p1 and p3
    assert card.cmr == 100.0  # 3 / 3 conflicting pairs fully right
    assert card.tos == 100.0
    assert f["counts"]["invalid"] == 1
    assert f["vote"]["n_runs"] == 3
    # Each run keeps its own figures: run 1 is the hand-worked case, run 2 is all right.
    per_run = {r["run_index"]: r for r in f["runs"]}
    assert per_run[1]["pacc"] == 33.33 and per_run[1]["cmr"] == 66.67
    assert per_run[2]["pacc"] == 100.0 and per_run[2]["avg"] == 100.0
    assert per_run[3]["invalid"] == 1


def test_a_file_with_a_run_column_stores_consecutive_runs(version, lead):
    upload(version, lead)  # run 1 already there
    lines = prediction_lines(run=0) + prediction_lines(
        flipped(HAND_PREDICTIONS, "p1__hallucination"), run=1
    )
    result = upload(version, lead, lines)
    assert [r.run_index for r in result.runs] == [2, 3]
    assert [r.stats["file_run"] for r in result.runs] == [0, 1]
    assert Scorecard.objects.get(judge="judge-x", split="open_ended").runs == 3

    with pytest.raises(UploadRejected) as exc:
        upload(version, lead, lines, run_index=9)
    assert exc.value.field == "run_index"


def test_unparsable_outputs_are_counted_invalid_and_listed(version, lead):
    lines = [
        {"question_id": q, "output": f"Reasoning...\n**Response {1 if p == A else 2} is better.**"}
        for q, p in HAND_PREDICTIONS.items()
    ]
    lines[0] = {"question_id": "p1__completeness", "output": "Both responses are fine."}
    result = upload(version, lead, lines)
    run = result.run
    assert run.stats["unparsable"] == 1
    assert run.stats["unparsable_rows"][0]["question_id"] == "p1__completeness"
    assert run.stats["unparsable_rows"][0]["line"] == 1
    pred = Prediction.objects.get(run=run, question_id="p1__completeness")
    assert pred.prediction == "invalid" and pred.raw_output == "Both responses are fine."
    card = Scorecard.objects.get(judge="judge-x", split="open_ended")
    assert card.figures["counts"]["invalid"] == 1
    assert card.figures["per_criterion"]["completeness"]["acc"] == 66.67  # 2 / 3


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [
        ({"question_id": "p9__logic", "prediction": A}, "question_id", "unknown question id"),
        ({"question_id": "p1__completeness", "prediction": B}, "question_id", "second prediction"),
        (
            {"question_id": "q1__logic", "prediction": A, "split": "open_ended"},
            "split",
            "is in split 'reasoning'",
        ),
        ({"question_id": "p3__hallucination"}, "prediction", "needs a prediction"),
    ],
    ids=["unknown-id", "duplicate-row", "wrong-split", "no-prediction"],
)
def test_a_bad_line_names_line_and_field_and_stores_nothing(version, lead, line, field, words):
    lines = [x for x in prediction_lines() if x["question_id"] != "p3__hallucination"]
    with pytest.raises(UploadRejected) as exc:
        upload(version, lead, [*lines, line])
    assert exc.value.as_dict()["line"] == 9
    assert exc.value.as_dict()["field"] == field
    assert words in exc.value.message and exc.value.message.startswith("line 9, field")
    assert nothing_stored()
    assert not Scorecard.objects.exists()


def test_a_split_limited_upload_refuses_other_rows_or_skips_them_when_lenient(version, lead):
    with pytest.raises(UploadRejected) as exc:
        upload(version, lead, split="open_ended")
    assert exc.value.line == 8 and "not 'open_ended'" in exc.value.message
    assert nothing_stored()

    lines = [*prediction_lines(), {"question_id": "zz__logic", "prediction": A}]
    result = upload(version, lead, lines, split="open_ended", lenient=True)
    assert result.run.stats["skipped_other_split"] == 2
    assert result.run.stats["skipped_unknown"] == 1
    assert len(result.warnings) == 2
    # Only the split the run covers gets a scorecard.
    assert [c.split for c in Scorecard.objects.filter(judge="judge-x")] == ["open_ended"]


def test_a_taken_run_index_or_foreign_judge_is_refused(version, lead):
    upload(version, lead, run_index=2)
    with pytest.raises(UploadRejected) as exc:
        upload(version, lead, run_index=2)
    assert exc.value.field == "run_index" and "already has run 2" in exc.value.message

    with pytest.raises(UploadRejected) as exc:
        upload(version, lead, prediction_lines(judge="other"), judge="judge-x")
    assert exc.value.field == "judge"
    # A file naming its judge needs no judge argument.
    result = upload(version, lead, prediction_lines(judge="named-in-file"), judge="")
    assert result.run.judge == "named-in-file"
    assert JudgeRun.objects.count() == 2


def test_a_version_that_is_not_ready_takes_no_predictions(project, lead):
    building = make_version(project, number=2, status="building")
    with pytest.raises(UploadRejected) as exc:
        upload(building, lead)
    assert exc.value.field == "version"
    assert nothing_stored()


def test_a_version_without_rows_is_refused(project, lead):
    empty = make_version(project, [], number=3)
    with pytest.raises(UploadRejected) as exc:
        upload(empty, lead)
    assert exc.value.field == "version" and "has no rows" in exc.value.message
    assert nothing_stored()


def test_missing_rows_count_as_wrong(version, lead):
    partial = {k: v for k, v in HAND_PREDICTIONS.items() if k != "p3__hallucination"}
    upload(version, lead, prediction_lines(partial))
    card = Scorecard.objects.get(judge="judge-x", split="open_ended")
    assert card.figures["counts"]["missing"] == 1
    assert card.figures["per_criterion"]["hallucination"]["acc"] == 0.0
    assert card.pacc == 0.0


def test_no_conflict_gives_na_tos_and_cmr(project, lead):
    version = make_version(
        project, [("p1", "open_ended", "completeness", A), ("p1", "open_ended", "clarity", A)]
    )
    upload(
        version,
        lead,
        [
            {"question_id": "p1__completeness", "prediction": A},
            {"question_id": "p1__clarity", "prediction": A},
        ],
    )
    card = Scorecard.objects.get(judge="judge-x")
    assert (card.pacc, card.tos, card.cmr, card.avg) == (100.0, None, None, 100.0)


def test_deleting_a_run_rescores_and_the_last_run_removes_the_cards(version, lead):
    first = upload(version, lead).run
    second = upload(version, lead, prediction_lines(flipped(HAND_PREDICTIONS, "p1__hallucination")))
    judge_run_delete(run=first, by=lead)
    card = Scorecard.objects.get(judge="judge-x", split="open_ended")
    assert card.runs == 1 and card.pacc == 66.67  # only the second run: p1 and p3 right
    judge_run_delete(run=second.run, by=lead)
    assert not Scorecard.objects.exists() and nothing_stored()


def test_scorecard_compute_is_idempotent(version, lead):
    upload(version, lead)
    before = {c.split: (c.pk, c.pacc, c.figures["per_criterion"]) for c in Scorecard.objects.all()}
    cards = scorecard_compute(version=version, judge="judge-x")
    assert {c.split: (c.pk, c.pacc, c.figures["per_criterion"]) for c in cards} == before
    assert Scorecard.objects.count() == 2
