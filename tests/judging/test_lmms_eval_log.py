"""lmms-eval's per-sample logs of its multi_crit tasks, read as a judge's predictions.

The files under ``data/lmms_eval`` have the shape lmms-eval writes with ``--log_samples``: one
JSONL file per task (``<date>_samples_multi_crit_<split>.jsonl``), a line per dataset row with
``doc_id``, ``target``, ``filtered_resps``, the hashes, the task's metric fields (each holding the
row's record: question_id, prompt_id, criterion, benchmark_type, parse_method, ...) and ``input``.
They answer the rows of ``data/rows.jsonl``; the reasoning run stopped before its last row.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from judging.datasets import load_rows_file
from judging.errors import PredictionsFileError, PredictionsFileRejected
from judging.lmms_eval_log import looks_like_sample_log, prediction_line
from judging.predictions import DatasetIndex, read_predictions

DATA = Path(__file__).parent / "data"
ROWS = DATA / "rows.jsonl"
LOGS = DATA / "lmms_eval"
OPEN_LOG = LOGS / "2026-06-01T10-00-00_samples_multi_crit_open_ended.jsonl"
REASONING_LOG = LOGS / "2026-06-01T10-00-00_samples_multi_crit_reasoning.jsonl"


def log_line(qid: str, text: str, **over: object) -> dict:
    """A line as lmms-eval writes it for one row (fewer metric fields than the task has)."""
    prompt, criterion = qid.split("__")
    record = {
        "question_id": qid,
        "prompt_id": prompt,
        "criterion": criterion,
        "preference": "model_a",
        "prediction": "model_a",
        "answer_match": True,
        "benchmark_type": "open-ended" if qid.startswith("o") else "reasoning",
        "parse_method": "direct",
    }
    line = {
        "doc_id": 0,
        "target": "model_a",
        "filtered_resps": [text],
        "doc_hash": "0" * 64,
        "prompt_hash": "1" * 64,
        "target_hash": "2" * 64,
        "overall": record,
        "macro_avg": record,
        "input": f"Judge {qid}.",
    }
    return {**line, **over}


def write(path: Path, lines: list) -> Path:
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    return path


def score(*args: str) -> tuple[dict, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("score_judge", *args, "--format", "json", "--n-boot", "0", stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def headline(scores: dict) -> dict:
    return {
        "per_criterion": {k: v["acc"] for k, v in scores["per_criterion"].items()},
        **{k: scores[k]["value"] for k in ("overall", "avg", "pacc", "cmr", "tos")},
    }


OPEN_FIGURES = {
    # comp: o1, o2 right; vg: o1 right, o2 wrong; hall: o1 wrong (02 reads as 2), o3 right;
    # clarity: o1 has no verdict sentence (lmms-eval's verifier read it), so it is wrong here
    "per_criterion": {
        "completeness": 100.0,
        "visual-grounding": 50.0,
        "hallucination": 50.0,
        "clarity": 0.0,
    },
    "overall": 57.14,
    "avg": 50.0,
    "pacc": 33.33,
    # o1: 2 A-rows x 2 B-rows; completeness and visual-grounding right: 1 pair of 4
    "cmr": 25.0,
    "tos": 100.0,
}
REASONING_FIGURES = {
    # r1: grounding right, logic wrong; r2: logic right, efficiency has no line (missing)
    "per_criterion": {"grounding": 100.0, "logic": 50.0, "efficiency": 0.0},
    "overall": 50.0,
    "avg": 50.0,
    "pacc": 0.0,
    "cmr": 0.0,
    "tos": 0.0,
}


def test_both_task_logs_concatenated_score_end_to_end(tmp_path):
    both = tmp_path / "qwen-judge.jsonl"
    both.write_text(OPEN_LOG.read_text() + REASONING_LOG.read_text())
    payload, err = score(str(ROWS), str(both))
    judge = payload["judges"]["qwen-judge"]
    assert headline(judge["scores"]["open_ended"]) == OPEN_FIGURES
    assert headline(judge["scores"]["reasoning"]) == REASONING_FIGURES
    assert judge["parse"]["lines"] == 10 and judge["parse"]["missing"] == 1
    assert judge["parse"]["unparsable_rows"] == [
        {
            "line": 4,
            "run": 1,
            "question_id": "o1__clarity",
            "text": "I would go with the second one overall.",
        }
    ]
    assert (
        "qwen-judge: warning: 1 line without a direct verdict (4): lmms-eval read them with its "
        "verifier model; here the published rule alone reads them, so they count as wrong"
    ) in err
    assert "qwen-judge: 1 dataset rows have no prediction and count as wrong" in err


def test_one_task_log_scores_its_split(tmp_path):
    payload, _ = score(str(ROWS), str(OPEN_LOG), "--split", "open_ended")
    (name,) = payload["judges"]
    assert name == "2026-06-01T10-00-00_samples_multi_crit_open_ended"
    assert list(payload["judges"][name]["scores"]) == ["open_ended"]
    assert headline(payload["judges"][name]["scores"]["open_ended"]) == OPEN_FIGURES
    payload, _ = score(str(ROWS), str(REASONING_LOG), "--split", "reasoning")
    (scores,) = (j["scores"] for j in payload["judges"].values())
    assert headline(scores["reasoning"]) == REASONING_FIGURES


def test_the_log_is_recognised_by_its_first_line_whatever_its_name(tmp_path):
    rows = load_rows_file(ROWS)
    for name in ("samples.jsonl", "samples.log", "samples"):
        path = tmp_path / name
        path.write_text("\n\n" + OPEN_LOG.read_text())
        parsed = read_predictions(path, dataset_index=DatasetIndex(rows))
        labels = parsed.run_list()[0].tolist()
        assert labels[:4] == ["model_a", "model_b", "model_b", "invalid"]
        assert labels[4:7] == ["model_a", "model_b", "model_b"]
        assert parsed.raw_outputs[1][0].endswith("Response 1 is better.")
    uploaded = io.BytesIO(OPEN_LOG.read_bytes())
    parsed = read_predictions(uploaded, dataset_index=DatasetIndex(rows))
    assert parsed.counts["accepted"] == 7
    assert looks_like_sample_log(OPEN_LOG.read_text().splitlines()[0])
    assert looks_like_sample_log('{"doc_id": 3, "filtered_resps": ["Response 1 is bet')  # cut
    assert not looks_like_sample_log('{"question_id": "o1__clarity", "critic": "x"}')
    assert not looks_like_sample_log("question_id,prediction")


def test_lines_naming_the_row_otherwise(tmp_path):
    rows = load_rows_file(ROWS)
    record = {"prompt_id": "o2", "criterion": "completeness", "benchmark_type": "open-ended"}
    by_cell = log_line("o2__completeness", "Response 2 is better.", overall=record, macro_avg=1)
    with_doc = {
        "doc_id": 6,
        "doc": {"question_id": "o3__hallucination", "split": "open_ended", "question": "Q?"},
        "target": "model_b",
        "filtered_resps": [["Response 2 is better.", "Response 1 is better."]],
        "resps": [["Response 2 is better.", "Response 1 is better."]],
    }
    unfiltered = {"doc_id": 7, "doc": {"question_id": "r1__grounding"}, "resps": [["Response 1"]]}
    path = write(tmp_path / "log.jsonl", [by_cell, with_doc, unfiltered])
    parsed = read_predictions(path, dataset_index=DatasetIndex(rows))
    labels = dict(zip(rows.question_id.tolist(), parsed.run_list()[0].tolist(), strict=True))
    assert labels["o2__completeness"] == "model_b"
    # a response kept as a list is read as the task reads it, str() of it: one line whose
    # first verdict is response 2
    assert labels["o3__hallucination"] == "model_b"
    assert labels["r1__grounding"] == "invalid"  # "Response 1": no verdict sentence
    assert prediction_line(with_doc, 2) == {
        "output": "['Response 2 is better.', 'Response 1 is better.']",
        "question_id": "o3__hallucination",
        "split": "open_ended",
    }


def test_the_split_of_a_line_must_be_its_rows(tmp_path):
    rows = load_rows_file(ROWS)
    wrong = log_line("o1__clarity", "Response 2 is better.")
    wrong["overall"] = {**wrong["overall"], "benchmark_type": "reasoning"}
    with pytest.raises(PredictionsFileError, match="the line says 'reasoning'") as err:
        read_predictions(write(tmp_path / "l.jsonl", [wrong]), dataset_index=DatasetIndex(rows))
    assert (err.value.line, err.value.field) == (1, "split")


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ({**log_line("o1__clarity", "x"), "doc_id": "first"}, "doc_id", "valid integer"),
        (
            {k: v for k, v in log_line("o1__clarity", "x").items() if k != "filtered_resps"},
            "filtered_resps",
            "is missing",
        ),
        ({**log_line("o1__clarity", "x"), "filtered_resps": "x"}, "filtered_resps", "valid list"),
        (
            {**log_line("o1__clarity", "x"), "overall": {"question_id": ["o1"]}},
            "overall.question_id",
            "valid string",
        ),
        ({"doc_id": 1, "filtered_resps": ["x"], "doc": {"question": "Q?"}}, "doc", "no metric"),
        ({**log_line("o1__clarity", "x"), "doc": "row"}, "doc", "valid dictionary"),
        (log_line("o1__clarity", "x" * 100_001), "filtered_resps", "longer than 100,000"),
    ],
)
def test_bad_lines_name_line_and_field(tmp_path, line, field, message):
    rows = load_rows_file(ROWS)
    good = log_line("o1__completeness", "Response 1 is better.")
    path = write(tmp_path / "log.jsonl", [good, line])
    with pytest.raises(PredictionsFileError, match=message) as err:
        read_predictions(path, dataset_index=DatasetIndex(rows))
    assert (err.value.line, err.value.field) == (2, field)


def test_every_bad_line_is_listed_and_nothing_scored(tmp_path):
    lines = [
        log_line("o1__completeness", "Response 1 is better."),
        {"doc_id": "x", "filtered_resps": ["y"]},
        log_line("o9__clarity", "Response 1 is better."),
        log_line("o1__completeness", "Response 2 is better."),
    ]
    path = write(tmp_path / "log.jsonl", lines)
    with pytest.raises(PredictionsFileRejected) as err:
        read_predictions(path, dataset_index=DatasetIndex(load_rows_file(ROWS)))
    assert [(p.line, p.field) for p in err.value.problems] == [
        (2, "doc_id"),
        (3, "question_id"),
        (4, "question_id"),
    ]
    with pytest.raises(CommandError, match="3 errors; nothing was scored"):
        score(str(ROWS), str(path))
    # --lenient keeps what the published evaluation keeps: the first line of a repeated row
    lenient = write(tmp_path / "lenient.jsonl", [lines[0], lines[2], lines[3]])
    payload, err_text = score(str(ROWS), str(lenient), "--lenient", "--split", "open_ended")
    scores = payload["judges"]["lenient"]["scores"]["open_ended"]
    assert scores["per_criterion"]["completeness"]["correct"] == 1
    assert "1 line with an unknown id skipped" in err_text
    assert "1 line duplicating an earlier line skipped" in err_text
