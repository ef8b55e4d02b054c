"""The published Multi-Crit row format: rows fold back into samples with reference labels."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annotation.importing.errors import ImportRejected
from annotation.importing.service import samples_import
from annotation.models import ReferenceLabel, Sample

from .import_data import multicrit_rows, png_bytes, write_jsonl

pytestmark = pytest.mark.django_db


def labels(external_id: str) -> dict[str, str]:
    return dict(
        ReferenceLabel.objects.filter(sample__external_id=external_id).values_list(
            "criterion__key", "preference"
        )
    )


def interleaved() -> list[dict]:
    p1 = multicrit_rows("p1", {"completeness": "model_a", "clarity": "model_b"})
    p2 = multicrit_rows("p2", {"logic": "model_b", "efficiency": "model_a"}, split="reasoning")
    # The rows of one prompt need not be adjacent.
    return [p1[0], p2[0], p1[1], p2[1]]


def test_jsonl_rows_fold_into_samples(project, tmp_path):
    rows = [{**row, "image_path": "img/red.png"} for row in interleaved()]
    report = samples_import(project=project, path=write_jsonl(tmp_path / "rows.jsonl", rows))
    assert report.format == "multicrit-jsonl"
    assert (report.samples, report.created, report.reference_labels, report.slots) == (2, 2, 4, 6)
    p1 = Sample.objects.get(external_id="p1")
    assert (p1.split, p1.response_a, p1.model_b) == ("open_ended", "Response one, short.", "m2")
    assert p1.metadata == {
        "question_ids": {"completeness": "p1__completeness", "clarity": "p1__clarity"}
    }
    assert labels("p1") == {"completeness": "A", "clarity": "B"}
    assert labels("p2") == {"logic": "B", "efficiency": "A"}
    again = samples_import(project=project, path=tmp_path / "rows.jsonl")
    assert (again.created, again.unchanged) == (0, 2)
    assert ReferenceLabel.objects.count() == 4


def test_parquet_rows_with_embedded_images(project, tmp_path):
    rows = interleaved()
    for row in rows:
        row["image"] = {
            "bytes": png_bytes("green" if row["prompt_id"] == "p1" else "blue"),
            "path": None,
        }
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=2)
    report = samples_import(project=project, path=path)
    assert (report.format, report.created, report.reference_labels) == ("multicrit-parquet", 2, 4)
    assert Sample.objects.get(external_id="p1").image.read() == png_bytes("green")
    assert Sample.objects.get(external_id="p2").image.read() == png_bytes("blue")
    assert labels("p2") == {"logic": "B", "efficiency": "A"}


def test_row_errors_name_row_and_field_and_write_nothing(project, tmp_path):
    rows = multicrit_rows(
        "p1", {"completeness": "model_a", "clarity": "model_b", "speed": "model_a"}
    )
    rows += multicrit_rows("p2", {"clarity": "both"})
    rows += multicrit_rows("p3", {"clarity": "model_a", "completeness": "model_a"})
    rows[-1]["pred_a"] = "A different response"
    rows += multicrit_rows("p4", {"clarity": "model_a", "completeness": "model_b"})
    rows[-1]["criterion"] = "clarity"
    rows += multicrit_rows("p5", {"clarity": "model_a"}, split="chat")
    for row in rows:
        row["image_path"] = "img/red.png"
    del rows[0]["question"]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(ImportRejected) as info:
        samples_import(project=project, path=path)
    found = {(p.unit, p.line, p.field): p.message for p in info.value.problems}
    assert found == {
        ("row", 1, "question"): "missing field",
        ("row", 3, "criterion"): "unknown criterion 'speed' for split open_ended",
        ("row", 4, "preference"): "must be model_a or model_b, got 'both'",
        ("row", 6, "pred_a"): "differs from row 5 of prompt_id 'p3'",
        ("row", 8, "criterion"): "criterion 'clarity' repeated for prompt_id 'p4' (first at row 7)",
        ("row", 9, "split"): "unknown split 'chat' (expected open_ended or reasoning)",
    }
    assert Sample.objects.count() == 0 and ReferenceLabel.objects.count() == 0


def test_row_with_neither_image_nor_path_is_an_error(project, tmp_path):
    rows = multicrit_rows("p1", {"clarity": "model_a"})
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n")
    with pytest.raises(ImportRejected) as info:
        samples_import(project=project, path=path)
    assert [(p.line, p.field) for p in info.value.problems] == [(1, "image")]


def test_jsonl_rows_with_base64_images(project, tmp_path):
    import base64

    rows = multicrit_rows("p1", {"logic": "model_b"}, split="reasoning")
    rows[0]["image"] = {"bytes": base64.b64encode(png_bytes("purple")).decode()}
    rows += multicrit_rows("p2", {"logic": "model_a"}, split="reasoning")
    rows[1]["image"] = {"bytes": "not base64!"}
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(ImportRejected) as info:
        samples_import(project=project, path=path)
    assert [(p.line, p.field, p.message) for p in info.value.problems] == [
        (2, "image", "image.bytes is not valid base64")
    ]
    path.write_text(json.dumps(rows[0]) + "\n")
    samples_import(project=project, path=path)
    assert Sample.objects.get(external_id="p1").image.read() == png_bytes("purple")
    assert labels("p1") == {"logic": "B"}
