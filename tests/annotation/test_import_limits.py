"""Import limits and hostile files: each an error naming the line and field, nothing written."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annotation.importing import limits as L
from annotation.importing import zipguard
from annotation.importing.errors import ImportRejected
from annotation.importing.service import samples_import
from annotation.models import ReferenceLabel, Sample, Slot

from .import_data import multicrit_rows, png_bytes, sample_line, write_jsonl

pytestmark = pytest.mark.django_db


def counts(project) -> tuple[int, int, int]:
    return (
        Sample.objects.filter(project=project).count(),
        Slot.objects.filter(sample__project=project).count(),
        ReferenceLabel.objects.filter(sample__project=project).count(),
    )


def problems_of(project, path) -> list[tuple[int | None, str, str]]:
    before = counts(project)
    with pytest.raises(ImportRejected) as info:
        samples_import(project=project, path=path)
    assert counts(project) == before
    return [(p.line, p.field, p.message) for p in info.value.problems]


def write_zip(path, members: dict[str, bytes | str]) -> str:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return str(path)


def good_line(external_id: str = "g1", **fields) -> str:
    return json.dumps(sample_line(external_id, **fields))


@pytest.mark.parametrize(
    ("name", "limit"),
    [
        ("question", L.FIELD_MAX_CHARS["question"]),
        ("response_a", L.FIELD_MAX_CHARS["response_a"]),
        ("response_b", L.FIELD_MAX_CHARS["response_b"]),
        ("model_a", L.FIELD_MAX_CHARS["model_a"]),
        ("model_b", L.FIELD_MAX_CHARS["model_b"]),
        ("source", L.FIELD_MAX_CHARS["source"]),
        ("reference_answer", L.FIELD_MAX_CHARS["reference_answer"]),
        ("id", L.FIELD_MAX_CHARS["external_id"]),
    ],
)
def test_each_text_field_has_a_length_limit(project, tmp_path, name, limit):
    at_limit = write_jsonl(
        tmp_path / "ok" / "data.jsonl", [sample_line("a" * 10, **{name: "x" * limit})]
    )
    assert samples_import(project=project, path=at_limit).created == 1
    over = write_jsonl(
        tmp_path / "over" / "data.jsonl", [sample_line("b1", **{name: "x" * (limit + 1)})]
    )
    field = "external_id" if name == "id" else name
    assert problems_of(project, over) == [
        (1, field, f"longer than {limit:,} characters ({limit + 1:,})")
    ]


def test_nul_and_lone_surrogates_are_errors_naming_line_and_field(project, tmp_path):
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            sample_line("n1", question="Describe\u0000 this."),
            '{"id": "n2\\u0000", "split": "open_ended"}',
            good_line("n3", response_a="broken \\ud800 escape").replace("\\\\ud800", "\\ud800"),
            good_line("n4", metadata={"k": {"deep": "a\u0000b"}}),
            good_line("n5", metadata={"bad\u0000key": 1}),
        ],
    )
    found = problems_of(project, path)
    assert found == [
        (1, "json", "question: contains a NUL character at character 9"),
        (2, "json", "id: contains a NUL character at character 3"),
        (
            3,
            "json",
            "response_a: contains an unpaired surrogate (an invalid \\u escape) at character 8",
        ),
        (4, "json", "metadata.k.deep: contains a NUL character at character 2"),
        (5, "json", "metadata: a key contains a NUL character at character 4"),
    ]


def test_deep_json_nan_and_huge_numbers_are_line_errors(project, tmp_path):
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            "[" * 100_000 + "]" * 100_000,
            '{"id": "x", "metadata": {"v": NaN}}',
            '{"id": "y", "metadata": {"v": 1e999}}',
            '{"id": "z", "n": ' + "9" * 5000 + "}",
            good_line("deep", metadata=json.loads('{"a":' * 9 + "1" + "}" * 9)),
        ],
    )
    found = problems_of(project, path)
    assert [(line, field) for line, field, _ in found] == [
        (1, "json"),
        (2, "json"),
        (3, "json"),
        (4, "json"),
        (5, "metadata.a.a.a.a.a.a.a.a"),
    ]
    assert "nested deeper than 32 levels" in found[0][2]
    assert found[1][2] == "invalid JSON: NaN is not a JSON value"
    assert found[2][2] == "a number is too large"
    assert found[3][2].startswith("invalid JSON: Exceeds the limit")
    assert found[4][2] == "nested deeper than 8 levels"


def test_metadata_size_limit(project, tmp_path):
    big = {"notes": "x" * L.METADATA_MAX_BYTES}
    path = write_jsonl(tmp_path / "data.jsonl", [sample_line("m1", metadata=big)])
    [(line, field, message)] = problems_of(project, path)
    assert (line, field) == (1, "metadata")
    assert message.startswith("larger than 64 KB as JSON")


def test_wrong_types_in_split_reference_and_pair_type(project, tmp_path):
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            sample_line("t1", split=["open_ended"]),
            sample_line("t2", split={"a": 1}, reference={"clarity": "A"}),
            sample_line("t3", reference={"clarity": ["A"]}),
            sample_line("t4", reference=["clarity"]),
            sample_line("t5", pair_type=["cross_model"]),
            sample_line("t6", pair_type={"x": 1}),
            sample_line("t7", reference={"clarity": {"v": "A"}}),
        ],
    )
    assert problems_of(project, path) == [
        (1, "split", "must be text, got list"),
        (2, "split", "must be text, got dict"),
        (3, "reference.clarity", "preference must be A, B or tie, got a list"),
        (4, "reference", 'must be an object like {"completeness": "A"}'),
        (5, "pair_type", "must be cross_model or same_model, got a list"),
        (6, "pair_type", "must be cross_model or same_model, got a dict"),
        (7, "reference.clarity", "preference must be A, B or tie, got a dict"),
    ]


def test_multicrit_rows_with_wrong_types_and_nul(project, tmp_path):
    rows = multicrit_rows("p1", {"clarity": "model_a"}, image_path="img/red.png")
    rows += [
        {**rows[0], "prompt_id": ["p2"], "question_id": "p2__clarity"},
        {**rows[0], "prompt_id": "p3", "criterion": {"k": "clarity"}},
        {**rows[0], "prompt_id": "p4", "preference": ["model_a"]},
        {**rows[0], "prompt_id": "p5", "split": ["reasoning"]},
        {**rows[0], "prompt_id": "p6", "question": "nul\u0000"},
    ]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    assert problems_of(project, path) == [
        (2, "prompt_id", "must be text, got list"),
        (3, "criterion", "must be text, got dict"),
        (4, "preference", "must be model_a or model_b, got a list"),
        (5, "split", "must be text, got list"),
        (6, "json", "question: contains a NUL character at character 4"),
    ]


def test_parquet_strings_with_nul_are_row_errors(project, tmp_path):
    rows = multicrit_rows("q1", {"clarity": "model_a", "completeness": "model_b"})
    for row in rows:
        row["image"] = {"bytes": png_bytes(), "path": None}
    rows[1]["pred_a"] = "Response\u0000 one"
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert problems_of(project, path) == [
        (2, "pred_a", "contains a NUL character at character 9"),
    ]


def test_an_overlong_line_in_a_small_zip_is_refused_with_its_line(project, tmp_path):
    # A few hundred KB of zip unpacking to a 20 MB line: refused as line 2, read in pieces.
    huge = '{"id": "big", "question": "' + "a" * (20 * 2**20) + '"}'
    path = write_zip(
        tmp_path / "bomb.zip",
        {"data.jsonl": good_line("ok") + "\n" + huge + "\n", "img/red.png": png_bytes()},
    )
    assert (tmp_path / "bomb.zip").stat().st_size < 100_000
    assert problems_of(project, path) == [(2, "json", "the line is longer than 16 MB")]


def test_zip_limits_on_members_and_declared_sizes(project, tmp_path, monkeypatch):
    path = write_zip(
        tmp_path / "many.zip",
        {"data.jsonl": good_line() + "\n", "img/red.png": png_bytes(), "x/1": "1", "x/2": "2"},
    )
    monkeypatch.setattr(zipguard, "ZIP_MAX_MEMBERS", 3)
    monkeypatch.setattr(zipguard, "ZIP_MAX_TOTAL_BYTES", 100)
    monkeypatch.setattr(zipguard, "ZIP_MAX_DATA_BYTES", 50)
    found = problems_of(project, path)
    assert [(line, field) for line, field, _ in found] == [
        (None, "zip"),
        (None, "zip"),
        (None, "zip entry"),
    ]
    assert found[0][2] == "4 entries; at most 3 are allowed"
    assert found[1][2].endswith("at most 100 bytes is allowed")
    assert found[2][2].startswith("'data.jsonl' unpacks to ")


def corrupt(path: str, needle: bytes) -> None:
    data = bytearray(Path(path).read_bytes())
    data[data.index(needle)] ^= 0xFF
    Path(path).write_bytes(bytes(data))


def test_a_bad_crc_in_the_data_file_is_an_error_not_a_crash(project, tmp_path):
    path = str(tmp_path / "crc.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("data.jsonl", good_line("crc-1") + "\n")
        archive.writestr("img/red.png", png_bytes())
    corrupt(path, b"crc-1")
    [(line, field, message)] = problems_of(project, path)
    assert (line, field) == (None, "zip entry")
    assert message.startswith("'data.jsonl' cannot be read: damaged zip (Bad CRC-32")


def test_a_bad_crc_in_an_image_names_the_line(project, tmp_path):
    path = str(tmp_path / "crc.zip")
    image = png_bytes()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("data.jsonl", good_line("c1") + "\n")
        archive.writestr("img/red.png", image)
    corrupt(path, image[40:60])
    [(line, field, message)] = problems_of(project, path)
    assert (line, field) == (1, "image")
    assert "'img/red.png' cannot be read: damaged zip (Bad CRC-32" in message


def test_a_truncated_zip_is_a_file_error(project, tmp_path):
    path = write_zip(tmp_path / "cut.zip", {"data.jsonl": good_line() + "\n"})
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2])
    [(line, field, message)] = problems_of(project, path)
    assert (line, field) == (None, "file") and message.startswith("not a valid zip file")


def test_bounded_lines_keeps_at_most_one_line_in_memory():
    import io

    stream = io.BytesIO(b"short\n" + b"x" * 50 + b"\nend")
    assert list(L.bounded_lines(stream, max_bytes=10)) == [(1, b"short\n"), (2, None), (3, b"end")]
