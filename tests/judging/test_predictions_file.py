"""Reading predictions files: formats, runs, unparsable outputs, every error and lenient counts."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from judging.datasets import load_rows_file
from judging.errors import PredictionsFileError, PredictionsFileRejected
from judging.predictions import DatasetIndex, read_predictions

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def rows():
    return load_rows_file(DATA / "rows.jsonl")


@pytest.fixture(scope="module")
def index(rows):
    return DatasetIndex(rows)


def jsonl(tmp_path: Path, records: list[dict], name: str = "judge.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def csv_file(tmp_path: Path, text: str, name: str = "judge.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_fixture_jsonl_aligns_to_the_dataset(index, rows):
    parsed = read_predictions(DATA / "judge_alpha.jsonl", dataset_index=index)
    assert parsed.run_indices == [1]
    (run,) = parsed.run_list()
    assert len(run) == len(rows)
    assert run[rows.index()["o1__hallucination"]] == "model_b"
    assert run[rows.index()["r2__efficiency"]] == "invalid"  # "tie"
    assert parsed.judge is None
    assert parsed.counts["lines"] == 11 and parsed.counts["accepted"] == 11
    assert parsed.missing == {1: 0} and parsed.invalid == {1: 1}
    assert [(u.line, u.question_id, u.text) for u in parsed.unparsable] == [
        (11, "r2__efficiency", "tie")
    ]


def test_fixture_csv_with_runs_and_raw_outputs(index, rows):
    parsed = read_predictions(DATA / "judge_beta.csv", dataset_index=index)
    assert parsed.judge == "beta-judge"
    assert parsed.run_indices == [1, 2, 3]
    first, _, third = parsed.run_list()
    assert first.tolist() == rows.preference.tolist()
    assert set(third.tolist()) == {"model_a", "invalid"}
    # quoted multi-line outputs: records of runs 1-2 take 4 physical lines each
    (bad,) = parsed.unparsable
    assert (bad.line, bad.run, bad.question_id) == (92, 3, "o1__hallucination")
    assert parsed.raw_outputs[3][2] == "I cannot decide between them."
    assert parsed.raw_outputs[1][0].endswith("**Response 1** is better.")
    stats = parsed.stats(3)
    assert stats["invalid"] == 1 and stats["unparsable"] == 1 and stats["runs"] == [3]
    assert stats["unparsable_rows"][0]["line"] == 92
    assert parsed.stats()["runs"] == [1, 2, 3]


def test_prediction_values_and_missing_rows(tmp_path, index, rows):
    path = jsonl(
        tmp_path,
        [
            {"question_id": "o1__completeness", "prediction": "A"},
            {"question_id": "o1__visual-grounding", "prediction": "model_b"},
            {"question_id": "o1__hallucination", "prediction": "Response 2 is better."},
            {"question_id": "o1__clarity", "prediction": "", "output": "Response 1 is better."},
            {"question_id": "o2__completeness", "prediction": None},
        ],
    )
    parsed = read_predictions(path, dataset_index=index)
    (run,) = parsed.run_list()
    assert run[:5].tolist() == ["model_a", "model_b", "model_b", "model_a", "invalid"]
    assert run[5:].tolist() == [None] * 6
    assert parsed.missing == {1: 6}
    assert parsed.unparsable[0].line == 5 and parsed.unparsable[0].text == ""


def test_long_unparsable_outputs_keep_their_end(tmp_path, index):
    text = "word " * 200 + "So I lean towards the first."
    path = jsonl(tmp_path, [{"question_id": "o1__clarity", "output": text}])
    (item,) = read_predictions(path, dataset_index=index).unparsable
    assert item.text.startswith("...") and item.text.endswith("towards the first.")
    assert len(item.text) == 203


def test_split_scope(tmp_path, index):
    path = jsonl(
        tmp_path,
        [
            {"question_id": "r1__grounding", "prediction": "model_a"},
            {"question_id": "r1__logic", "prediction": "model_b", "split": "reasoning"},
        ],
    )
    parsed = read_predictions(path, dataset_index=index, split="reasoning")
    assert parsed.missing == {1: 2}  # r2's two rows; open-ended rows are out of scope
    assert parsed.counts["rows_in_scope"] == 4


ERRORS = [
    # (records, line, field, message)
    ([{"question_id": "nope", "prediction": "A"}], 1, "question_id", "unknown question id 'nope'"),
    (
        [{"prompt_id": "o1", "criterion": "logic", "prediction": "A"}],
        1,
        "prompt_id",
        "no dataset row for prompt 'o1' and criterion 'logic'",
    ),
    (
        [
            {"question_id": "o1__clarity", "prediction": "A"},
            {"prompt_id": "o1", "criterion": "clarity", "prediction": "B"},
        ],
        2,
        "question_id",
        "second prediction for 'o1__clarity' in run 1 \\(first on line 1\\)",
    ),
    (
        [{"question_id": "o1__clarity", "prediction": "A", "split": "reasoning"}],
        1,
        "split",
        "the line says 'reasoning'",
    ),
    ([{"prediction": "A"}], 1, "question_id", "needs question_id, or prompt_id and criterion"),
    ([{"prompt_id": "o1", "prediction": "A"}], 1, "criterion", "needs question_id"),
    ([{"question_id": "o1__clarity"}], 1, "prediction", "an output or a critic"),
    ([{"question_id": "o1__clarity", "prediction": "A", "run": "two"}], 1, "run", "whole number"),
    ([{"question_id": "o1__clarity", "prediction": "A", "run": 1.5}], 1, "run", "whole number"),
    ([{"question_id": "o1__clarity", "prediction": "A", "run": -1}], 1, "run", "0 or more"),
    (
        [
            {"question_id": "o1__clarity", "prediction": "A", "judge": "x"},
            {"question_id": "o2__completeness", "prediction": "A", "judge": "y"},
        ],
        2,
        "judge",
        "judge 'y' differs from 'x' on line 1",
    ),
]


@pytest.mark.parametrize(("records", "line", "field", "message"), ERRORS)
def test_errors_name_line_and_field(tmp_path, index, records, line, field, message):
    with pytest.raises(PredictionsFileError, match=message) as err:
        read_predictions(jsonl(tmp_path, records), dataset_index=index)
    assert (err.value.line, err.value.field) == (line, field)
    assert str(err.value).startswith(f"line {line}, field '{field}': ")


def test_other_split_is_an_error(tmp_path, index):
    path = jsonl(tmp_path, [{"question_id": "o1__clarity", "prediction": "A"}])
    with pytest.raises(
        PredictionsFileError, match="is in split 'open_ended', not 'reasoning'"
    ) as err:
        read_predictions(path, dataset_index=index, split="reasoning")
    assert (err.value.line, err.value.field) == (1, "question_id")


def test_lenient_skips_with_counts(tmp_path, index):
    path = jsonl(
        tmp_path,
        [
            {"question_id": "r1__grounding", "prediction": "model_a"},
            {"question_id": "ghost-1", "prediction": "model_a"},
            {"question_id": "ghost-2", "prediction": "model_a"},
            {"question_id": "r1__grounding", "prediction": "model_b"},
            {"question_id": "o1__clarity", "prediction": "model_b"},
            {"question_id": "r1__logic", "prediction": "model_b", "run": 2},
            {"question_id": "r1__logic", "prediction": "model_a", "run": 2},
        ],
    )
    with pytest.raises(PredictionsFileError):
        read_predictions(path, dataset_index=index, split="reasoning")
    parsed = read_predictions(path, dataset_index=index, split="reasoning", lenient=True)
    assert parsed.counts["skipped_unknown"] == 2
    assert parsed.counts["skipped_duplicate"] == 2
    assert parsed.counts["skipped_other_split"] == 1
    assert parsed.counts["accepted"] == 2
    assert parsed.warnings == [
        "2 lines with an unknown id skipped (first: line 2: unknown question id 'ghost-1')",
        "2 lines duplicating an earlier line skipped (first: line 4: second prediction for "
        "'r1__grounding' in run 1 (first on line 1))",
        "1 line of another split than 'reasoning' skipped (first: line 5: row 'o1__clarity' is "
        "in split 'open_ended', not 'reasoning')",
    ]
    first, second = parsed.run_list()
    positions = index.by_qid
    assert first[positions["r1__grounding"]] == "model_a"  # the first line is kept
    assert second[positions["r1__logic"]] == "model_b"
    assert parsed.missing == {1: 3, 2: 3}
    assert parsed.stats()["warnings"] == parsed.warnings


def test_bad_json_and_non_object_lines(tmp_path, index):
    path = tmp_path / "j.jsonl"
    path.write_text('{"question_id": "o1__clarity", "prediction": "A"}\n\n{oops\n')
    with pytest.raises(PredictionsFileError, match="not valid JSON") as err:
        read_predictions(path, dataset_index=index)
    assert err.value.line == 3
    path.write_text('["o1__clarity", "A"]\n')
    with pytest.raises(PredictionsFileError, match="must be a JSON object") as err:
        read_predictions(path, dataset_index=index)
    assert err.value.line == 1


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("id,prediction\no1__clarity,A\n", 1, "question_id", "header needs question_id"),
        ("prompt_id,prediction\no1,A\n", 1, "question_id", "header needs question_id"),
        ("question_id,answer\no1__clarity,A\n", 1, "prediction", "prediction, output or critic"),
        ("question_id,prediction\no1__clarity,A,extra\n", 2, None, "3 cells for 2 header columns"),
        ("", 1, None, "no header line"),
        ("question_id,prediction,run\n\no1__clarity,A,x\n", 3, "run", "whole number"),
    ],
)
def test_csv_errors(tmp_path, index, text, line, field, message):
    with pytest.raises(PredictionsFileError, match=message) as err:
        read_predictions(csv_file(tmp_path, text), dataset_index=index)
    assert (err.value.line, err.value.field) == (line, field)


def test_csv_by_prompt_and_criterion(tmp_path, index, rows):
    text = "prompt_id,criterion,prediction\no1,clarity,model_b\no3,hallucination,B\n"
    (run,) = read_predictions(csv_file(tmp_path, text), dataset_index=rows).run_list()
    assert run[index.by_qid["o1__clarity"]] == "model_b"
    assert run[index.by_qid["o3__hallucination"]] == "model_b"


def test_uploaded_file_objects(index):
    body = b'{"question_id": "o1__clarity", "output": "**Response 2** is better."}\n'
    upload = io.BytesIO(body)
    upload.name = "upload.jsonl"
    (run,) = read_predictions(upload, dataset_index=index).run_list()
    assert run[index.by_qid["o1__clarity"]] == "model_b"
    # no name: the format is sniffed from the content
    (run,) = read_predictions(io.BytesIO(body), dataset_index=index).run_list()
    assert run[index.by_qid["o1__clarity"]] == "model_b"
    csv_body = io.BytesIO("\ufeffquestion_id,prediction\no1__clarity,A\n".encode())
    (run,) = read_predictions(csv_body, dataset_index=index).run_list()
    assert run[index.by_qid["o1__clarity"]] == "model_a"
    with pytest.raises(PredictionsFileError, match="not UTF-8"):
        read_predictions(io.BytesIO(b"\xff\xfe\x00bad"), dataset_index=index)


def test_empty_file_and_missing_path(tmp_path, index):
    with pytest.raises(PredictionsFileError, match="has no predictions"):
        read_predictions(jsonl(tmp_path, []), dataset_index=index)
    with pytest.raises(PredictionsFileError, match="no such file"):
        read_predictions(tmp_path / "absent.jsonl", dataset_index=index)


def test_progress_is_reported(tmp_path, rows):
    records = [
        {"question_id": q, "prediction": "A", "run": r}
        for r in range(1, 2001)
        for q in rows.question_id[:5]
    ]
    calls = []
    read_predictions(
        jsonl(tmp_path, records), dataset_index=rows, progress=lambda d, t: calls.append((d, t))
    )
    # Line n of the file's N lines as it reads, then every line read.
    assert calls[0] == (10_000, 10_000)
    assert calls[-1] == (10_000, 10_000)
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n".join(json.dumps(r) for r in records[:12_000]) + "\n\n\n")
    calls.clear()
    read_predictions(
        blank, dataset_index=rows, lenient=True, progress=lambda d, t: calls.append((d, t))
    )
    assert calls[0] == (10_000, 10_002)


def test_critic_field_in_jsonl_and_csv(tmp_path, index, rows):
    lines = [
        {"question_id": "o1__clarity", "critic": "Fine.\n**Response 2** is better.\n\n"},
        {"question_id": "o1__completeness", "critic": "Response 1 is better.\nx\ny\nz"},
        {"question_id": "o2__completeness", "critic": "RESPONSE 1 IS BETTER", "split": "openEnded"},
    ]
    parsed = read_predictions(jsonl(tmp_path, lines), dataset_index=index)
    (run,) = parsed.run_list()
    assert run[index.by_qid["o1__clarity"]] == "model_b"
    assert run[index.by_qid["o1__completeness"]] == "invalid"  # the verdict is above the last 3
    assert run[index.by_qid["o2__completeness"]] == "model_a"
    assert [(u.line, u.question_id) for u in parsed.unparsable] == [(2, "o1__completeness")]
    assert parsed.raw_outputs[1][index.by_qid["o1__clarity"]].startswith("Fine.")

    text = 'question_id,critic\no1__clarity,"Thinking.\nResponse 1 is better."\n'
    (run,) = read_predictions(csv_file(tmp_path, text), dataset_index=rows).run_list()
    assert run[index.by_qid["o1__clarity"]] == "model_a"


def test_a_split_spelled_otherwise_must_still_match(tmp_path, index):
    lines = [{"question_id": "o1__clarity", "prediction": "A", "split": "reasoning"}]
    with pytest.raises(PredictionsFileError, match="is in split 'open_ended'") as err:
        read_predictions(jsonl(tmp_path, lines), dataset_index=index)
    assert (err.value.line, err.value.field) == (1, "split")


def test_every_bad_line_is_listed_in_file_order(tmp_path, index):
    text = (
        "question_id,prediction,run\n"
        "nope__clarity,A,1\n"  # line 2: unknown id
        "o1__clarity,A,1,extra\n"  # line 3: too many cells
        "o1__clarity,A,x\n"  # line 4: bad run
        "o1__clarity,B,1\n"  # line 5: fine
        "o1__clarity,A,1\n"  # line 6: duplicate of line 5
    )
    with pytest.raises(PredictionsFileRejected) as err:
        read_predictions(csv_file(tmp_path, text), dataset_index=index)
    rejected = err.value
    assert [(p.line, p.field) for p in rejected.problems] == [
        (2, "question_id"),
        (3, ""),
        (4, "run"),
        (6, "question_id"),
    ]
    assert (rejected.count, rejected.more) == (4, 0)
    # The first problem stays the exception's line and field, for callers that show one.
    assert (rejected.line, rejected.field) == (2, "question_id")
    assert str(rejected) == (
        "line 2, field 'question_id': unknown question id 'nope__clarity' (and 3 more errors)"
    )


def test_the_listed_problems_stop_at_the_cap_and_the_rest_are_counted(tmp_path, index, monkeypatch):
    from annotation.importing import errors

    lines = [{"question_id": f"nope{i}", "prediction": "A"} for i in range(12)]
    monkeypatch.setattr(errors, "MAX_PROBLEMS", 10)
    with pytest.raises(PredictionsFileRejected) as err:
        read_predictions(jsonl(tmp_path, lines), dataset_index=index)
    assert (len(err.value.problems), err.value.more, err.value.count) == (10, 2, 12)
    assert str(err.value).endswith("(and 11 more errors)")


def _two_split_rows(tmp_path: Path):
    """Prompt p in both splits, with hallucination in each under one question id."""
    records = [
        {"question_id": "p__h", "prompt_id": "p", "split": "open_ended", "criterion": "h"},
        {"question_id": "p__c", "prompt_id": "p", "split": "open_ended", "criterion": "c"},
        {"question_id": "p__h", "prompt_id": "p", "split": "reasoning", "criterion": "h"},
        {"question_id": "q__h", "prompt_id": "q", "split": "reasoning", "criterion": "h"},
    ]
    prefs = ["model_a", "tie", "model_b", "model_a"]
    path = jsonl(
        tmp_path, [{**r, "preference": x} for r, x in zip(records, prefs, strict=True)], "d.jsonl"
    )
    return load_rows_file(path)


def test_a_key_with_a_row_in_each_split_is_resolved_by_the_split(tmp_path):
    rows = _two_split_rows(tmp_path)
    index = DatasetIndex(rows)
    lines = [
        {"question_id": "p__h", "split": "open-ended", "prediction": "A"},
        {"question_id": "p__h", "split": "reasoning", "prediction": "B"},
        {"prompt_id": "p", "criterion": "c", "prediction": "A"},  # one row only: no split needed
        {"question_id": "q__h", "prediction": "B"},
    ]
    parsed = read_predictions(jsonl(tmp_path, lines), dataset_index=index)
    assert parsed.run_list()[0].tolist() == ["model_a", "model_a", "model_b", "model_b"]
    by_cell = [
        {"prompt_id": "p", "criterion": "h", "split": s, "prediction": "A"}
        for s in (
            "open_ended",
            "reasoning",
        )
    ]
    parsed = read_predictions(jsonl(tmp_path, by_cell, "cells.jsonl"), dataset_index=index)
    assert parsed.run_list()[0].tolist() == ["model_a", None, "model_a", None]
    # without a split the line is an error naming it, unless one split is read
    bare = [{"question_id": "p__h", "prediction": "A"}, {"prompt_id": "p", "criterion": "h"}]
    with pytest.raises(PredictionsFileRejected) as err:
        read_predictions(jsonl(tmp_path, bare, "bare.jsonl"), dataset_index=index)
    assert [(p.line, p.field) for p in err.value.problems] == [(1, "split"), (2, "split")]
    assert "question id 'p__h': a row in each split; give the line a split" in str(err.value)
    assert err.value.problems[1].message.startswith("prompt 'p' and criterion 'h': a row in each")
    parsed = read_predictions(
        jsonl(tmp_path, bare[:1], "one.jsonl"), dataset_index=index, split="reasoning"
    )
    assert parsed.run_list()[0].tolist() == [None, None, "model_a", None]


def test_dataset_warnings_reach_the_run_stats(tmp_path):
    rows = _two_split_rows(tmp_path)
    assert len(rows.warnings) == 3  # the tie, prompt p and question id p__h in both splits
    lines = [{"question_id": "q__h", "prediction": "A"}]
    parsed = read_predictions(jsonl(tmp_path, lines), dataset_index=DatasetIndex(rows))
    assert parsed.warnings == []
    assert parsed.dataset_warnings == rows.warnings
    assert parsed.stats()["warnings"] == rows.warnings
    assert parsed.stats(1)["warnings"][0].startswith("1 row with a human tie label (line 2)")
