"""Dataset rows for scoring: the published row format (JSONL, Parquet) and our versions."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judging.datasets
from aggregation.export.rows import question_id_for
from aggregation.models import DatasetVersion
from judging.datasets import load_rows_file, resolve_dataset, rows_from_version
from judging.errors import DatasetFileError
from tests.judging.web_data import version_from_records

DATA = Path(__file__).parent / "data"


def row(prompt: str, criterion: str, preference: str = "model_a", **extra) -> dict:
    return {
        "question_id": f"{prompt}__{criterion}",
        "prompt_id": prompt,
        "split": "open_ended",
        "criterion": criterion,
        "question": "Describe the image.",
        "image_path": f"images/{prompt}.png",
        "pred_a": "One.",
        "pred_b": "Two.",
        "model_a": "m1",
        "model_b": "m2",
        "preference": preference,
        **extra,
    }


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_loads_the_fixture_jsonl():
    rows = load_rows_file(DATA / "rows.jsonl")
    assert len(rows) == 11
    assert rows.splits == ["open_ended", "reasoning"]
    assert rows.question_id[0] == "o1__completeness"
    assert rows.preference.tolist().count("model_a") == 7
    assert rows.index()["r2__efficiency"] == 10


def test_question_id_defaults_to_prompt_and_criterion(tmp_path):
    record = row("p1", "clarity")
    del record["question_id"]
    rows = load_rows_file(write_jsonl(tmp_path / "d.jsonl", [record, row("p1", "completeness")]))
    assert rows.question_id.tolist() == ["p1__clarity", "p1__completeness"]


def test_scoring_and_export_share_one_row_id():
    """The id a scored file defaults to is the one the export writes, from one function."""
    assert judging.datasets.question_id_for is question_id_for
    assert question_id_for("p1", "clarity") == "p1__clarity"


def test_parquet_with_embedded_images(tmp_path):
    records = [row("p1", "clarity"), row("p1", "completeness", "model_b"), row("p2", "clarity")]
    table = pa.table(
        {
            **{k: [r[k] for r in records] for k in records[0]},
            "image": [{"bytes": b"\x89PNG fake", "path": "p.png"} for _ in records],
        }
    )
    pq.write_table(table, tmp_path / "open_ended-00000.parquet")
    rows = load_rows_file(tmp_path / "open_ended-00000.parquet")
    assert rows.question_id.tolist() == ["p1__clarity", "p1__completeness", "p2__clarity"]
    assert rows.preference.tolist() == ["model_a", "model_b", "model_a"]


def test_parquet_errors_name_the_row_and_column(tmp_path):
    records = [row("p1", "clarity"), row("p1", "completeness", "A")]
    pq.write_table(
        pa.table({k: [r[k] for r in records] for k in records[0]}), tmp_path / "d.parquet"
    )
    with pytest.raises(DatasetFileError) as err:
        load_rows_file(tmp_path / "d.parquet")
    assert (err.value.line, err.value.field) == (2, "preference")
    no_split = {k: [r[k] for r in records] for k in records[0] if k != "split"}
    pq.write_table(pa.table(no_split), tmp_path / "e.parquet")
    with pytest.raises(DatasetFileError, match="no column 'split'") as err:
        load_rows_file(tmp_path / "e.parquet")
    assert err.value.field == "split"
    (tmp_path / "f.parquet").write_bytes(b"not parquet")
    with pytest.raises(DatasetFileError, match="not a readable Parquet file"):
        load_rows_file(tmp_path / "f.parquet")


@pytest.mark.parametrize(
    ("records", "line", "field", "message"),
    [
        (
            [row("p1", "clarity"), {**row("p1", "logic"), "prompt_id": ""}],
            2,
            "prompt_id",
            "missing",
        ),
        (
            [{k: v for k, v in row("p1", "x").items() if k != "criterion"}],
            1,
            "criterion",
            "missing",
        ),
        ([row("p1", "clarity", "Tie")], 1, "preference", "model_a, model_b or tie, got 'Tie'"),
        ([row("p1", "clarity", "A")], 1, "preference", "got 'A'"),
        ([{**row("p1", "clarity"), "split": "train"}], 1, "split", "unknown split 'train'"),
        ([row("p1", "clarity"), row("p1", "clarity")], 2, "question_id", "first on line 1"),
        (
            [row("p1", "clarity"), {**row("p1", "clarity"), "question_id": "other"}],
            2,
            "criterion",
            "already has a row for criterion 'clarity'",
        ),
        ([{**row("p1", "clarity"), "prompt_id": ["x"]}], 1, "prompt_id", "must be a string"),
        ([["not", "an", "object"]], 1, None, "JSON object"),
    ],
)
def test_jsonl_errors_name_line_and_field(tmp_path, records, line, field, message):
    path = write_jsonl(tmp_path / "d.jsonl", records)
    with pytest.raises(DatasetFileError, match=message) as err:
        load_rows_file(path)
    assert err.value.line == line
    assert err.value.field == field
    assert str(err.value).startswith(f"line {line}")


def test_bad_json_and_empty_files(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(row("p1", "clarity")) + "\n\n{broken\n")
    with pytest.raises(DatasetFileError, match="not valid JSON") as err:
        load_rows_file(path)
    assert err.value.line == 3  # blank lines are skipped but still counted
    path.write_text("\n")
    with pytest.raises(DatasetFileError, match="has no rows"):
        load_rows_file(path)
    with pytest.raises(DatasetFileError, match=r"expected a \.jsonl or \.parquet"):
        load_rows_file(write_jsonl(tmp_path / "d.txt", [row("p", "c")]))
    with pytest.raises(DatasetFileError, match="no such file"):
        load_rows_file(tmp_path / "absent.jsonl")


def make_version(project, *, status=DatasetVersion.Status.READY, number=1) -> DatasetVersion:
    records = (
        row("s1", "completeness"),
        row("s1", "clarity", "model_b"),
        {**row("s2", "logic"), "split": "reasoning"},
    )
    return version_from_records(project, records, number=number, status=status)


@pytest.mark.django_db
def test_rows_from_version(project):
    version = make_version(project)
    make_version(project, number=2)  # another version's rows stay out
    rows = rows_from_version(version)
    assert rows.question_id.tolist() == ["s1__completeness", "s1__clarity", "s2__logic"]
    assert rows.split.tolist() == ["open_ended", "open_ended", "reasoning"]
    assert rows.preference.tolist() == ["model_a", "model_b", "model_a"]


@pytest.mark.django_db
def test_resolve_dataset(project):
    version = make_version(project, number=3)
    rows, label = resolve_dataset(f"{project.slug}:v3")
    assert label == "test-project:v3" and len(rows) == 3
    rows, label = resolve_dataset(str(version.pk))
    assert label == "test-project:v3"
    rows, label = resolve_dataset(str(DATA / "rows.jsonl"))
    assert label == "rows.jsonl" and len(rows) == 11
    with pytest.raises(DatasetFileError, match="no dataset version 'test-project:v9'"):
        resolve_dataset("test-project:v9")
    with pytest.raises(DatasetFileError, match="neither a dataset file nor a version"):
        resolve_dataset("missing-file.jsonl")
    make_version(project, number=4, status=DatasetVersion.Status.BUILDING)
    with pytest.raises(DatasetFileError, match="is Building"):
        resolve_dataset("test-project:v4")
    DatasetVersion.objects.create(project=project, number=5, status=DatasetVersion.Status.READY)
    with pytest.raises(DatasetFileError, match="has no rows"):
        resolve_dataset("test-project:v5")


def test_a_human_tie_is_read_with_a_warning_naming_its_lines(tmp_path):
    records = [row("p1", "clarity"), row("p1", "completeness", "tie"), row("p2", "clarity", "tie")]
    rows = load_rows_file(write_jsonl(tmp_path / "d.jsonl", records))
    assert rows.preference.tolist() == ["model_a", "tie", "tie"]
    assert rows.warnings == [
        "2 rows with a human tie label (line 2, line 3): a tie equals no verdict of a judge, so "
        "each counts as wrong, as in the published evaluation, and it is in no conflicting "
        "criterion pair"
    ]
    pq.write_table(
        pa.table({k: [r[k] for r in records] for k in records[0]}), tmp_path / "d.parquet"
    )
    from_parquet = load_rows_file(tmp_path / "d.parquet")
    assert from_parquet.preference.tolist() == ["model_a", "tie", "tie"]
    assert from_parquet.warnings == rows.warnings
    assert load_rows_file(write_jsonl(tmp_path / "e.jsonl", records[:1])).warnings == []


def test_a_prompt_in_two_splits_is_read_with_a_warning(tmp_path):
    records = [
        row("p1", "clarity"),
        {**row("p1", "logic"), "split": "reasoning"},
        {**row("p1", "hallucination"), "question_id": "p1__hallucination__o"},
        {**row("p1", "hallucination"), "split": "reasoning"},
        row("p2", "clarity"),
    ]
    rows = load_rows_file(write_jsonl(tmp_path / "d.jsonl", records))
    assert rows.split.tolist()[:4] == ["open_ended", "reasoning", "open_ended", "reasoning"]
    assert rows.warnings == [
        "1 prompt with rows in both splits, accepted as the published evaluation reads each "
        "split on its own: 'p1' (open_ended at line 1, reasoning at line 2); each split scores "
        "its own rows of it"
    ]
    # the same question id in each split: both rows kept, and the warning says how to address it
    records[2] = row("p1", "hallucination")
    rows = load_rows_file(write_jsonl(tmp_path / "e.jsonl", records))
    assert rows.question_id.tolist().count("p1__hallucination") == 2
    assert rows.warnings[1] == (
        "1 question id with rows in both splits, accepted as the published evaluation reads "
        "each split on its own: 'p1__hallucination' (open_ended at line 3, reasoning at line 4); "
        "a predictions line for it says which row with its split (or read one split only)"
    )


def test_repeats_are_per_split(tmp_path):
    records = [row("p1", "hallucination"), {**row("p1", "hallucination"), "split": "reasoning"}]
    rows = load_rows_file(write_jsonl(tmp_path / "d.jsonl", records))
    assert len(rows) == 2  # the same prompt and criterion in two splits is no repeat


def test_lenient_repeats_keep_the_first_question_id_and_the_last_cell(tmp_path):
    records = [
        {**row("p1", "clarity"), "question_id": "x"},  # 1: replaced by line 2 (same cell)
        {**row("p1", "clarity", "model_b"), "question_id": "y"},  # 2: kept for p1/clarity
        {**row("p1", "logic", "model_b"), "question_id": "x"},  # 3: id x seen on line 1: out
        {**row("p1", "logic"), "question_id": "y"},  # 4: id y seen on line 2: out
        {**row("p2", "clarity"), "question_id": "z"},  # 5: kept
        {**row("p2", "clarity", "model_b"), "question_id": "z"},  # 6: id z seen: out
    ]
    path = write_jsonl(tmp_path / "d.jsonl", records)
    skipped: list[str] = []
    rows = load_rows_file(path, skipped=skipped)
    assert rows.question_id.tolist() == ["y", "z"]
    assert rows.preference.tolist() == ["model_b", "model_a"]
    assert skipped == [
        "line 1: row 'x' is replaced by line 2 (row 'y', the same prompt and criterion); "
        "the last is kept",
        "line 3: row 'x' repeats the question id of line 1; the first is kept",
        "line 4: row 'y' repeats the question id of line 2; the first is kept",
        "line 6: row 'z' repeats the question id of line 5; the first is kept",
    ]
    with pytest.raises(DatasetFileError, match="already has a row for criterion") as err:
        load_rows_file(path)
    assert (err.value.line, err.value.field) == (2, "criterion")


def test_lenient_repeats_across_shards_name_the_files(tmp_path):
    first = write_jsonl(tmp_path / "a.jsonl", [row("p1", "clarity")])
    second = write_jsonl(tmp_path / "b.jsonl", [row("p1", "clarity", "model_b")])
    skipped: list[str] = []
    rows, label = resolve_dataset(f"{first},{second}", skipped=skipped)
    assert label == "a.jsonl,b.jsonl"
    assert rows.preference.tolist() == ["model_a"]
    assert skipped == [
        "line 1 of b.jsonl: row 'p1__clarity' repeats the question id of line 1 of a.jsonl; "
        "the first is kept"
    ]


@pytest.mark.django_db
def test_version_rows_with_a_tie_warn_by_question_id(project):
    records = (row("s1", "completeness"), row("s1", "clarity", "tie"))
    rows = rows_from_version(version_from_records(project, records, number=7))
    assert rows.preference.tolist() == ["model_a", "tie"]
    assert rows.warnings[0].startswith("1 row with a human tie label (row 's1__clarity'): ")
