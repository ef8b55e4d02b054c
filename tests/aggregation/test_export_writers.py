"""The streaming writers give the same bytes as the straightforward way of writing each file."""

import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from aggregation.export.rows import (
    ROW_FIELDS,
    SAMPLE_FIELDS,
    VOTES_FIELD,
    SampleFields,
    row_build,
)
from aggregation.export.writers import (
    JSONL_DEFLATE_LEVEL,
    JSONL_ENTRY,
    SCALE_TYPES,
    ParquetRowWriter,
    SampleLines,
    ZipWriter,
    _zip_info,
    jsonl_line,
)

IMAGES = {"img/a.png": b"\x89PNG a" * 40, "img/b.jpg": b"\xff\xd8 b" * 3, "img/e.png": b""}


def _rows(
    scale: str, include_votes: bool, sample_of_row: list | None = None
) -> tuple[list[dict], list[str]]:
    """Rows with and without images, votes, unicode and empty texts, and scale columns."""
    rows, names = [], []
    samples: dict[int, SampleFields] = {}
    for n in range(23):
        name = ["img/a.png", "", "img/b.jpg", "img/e.png"][n % 4]
        # Rows of a sample share its fields (the same text objects), as in a build.
        sample = samples.get(n // 3) if n % 4 else None
        sample = sample or SampleFields(
            prompt_id=f"p{n // 3}" if n % 5 else f"p {n}/é",
            split="open_ended" if n % 2 else "reasoning",
            question="" if n == 7 else f'Question {n} – ∑ x² \n\t"quoted" \\ end',
            pred_a=f"A {n}" * n,
            pred_b="B 🙂",
            model_a="m-a",
            model_b="m-b",
            image_name=name,
        )
        samples[n // 3] = sample
        name = sample.image_name
        votes = None
        if include_votes:
            votes = [
                {
                    "annotator": f"annotator-{k}",
                    "choice": ["model_a", "model_b", "tie"][(n + k) % 3],
                    "rationale": "" if k else f"because {n}",
                    "unsure": bool(k % 2),
                    **({"grade": (n + k) % 5 - 2} if scale == "graded" else {}),
                    **({"score_a": 1 + k, "score_b": 5 - k} if scale == "pointwise" else {}),
                }
                for k in range(n % 4)
            ]
        scaled = None
        if scale == "graded":
            scaled = {
                "grades": [n % 5 - 2, 1],
                "median_grade": None if n % 6 == 0 else (n % 5 - 2) / 2,
                "soft_label": None if n % 6 == 0 else {"2": n, "1": 0, "0": 1, "-1": 0, "-2": 2},
            }
        elif scale == "pointwise":
            levels = {str(s): (n + s) % 3 for s in range(1, 6)}
            scaled = {
                "scores_a": [1 + n % 5],
                "scores_b": [],
                "mean_score_a": 1.5 + n,
                "mean_score_b": None if n % 4 == 0 else 2.0,
                "soft_label": {"a": levels, "b": levels},
            }
        rows.append(
            row_build(
                sample,
                criterion=f"c{n % 3}",
                preference="A" if n % 3 else "B",
                votes=votes,
                provenance="human",
                scaled=scaled,
            )
        )
        names.append(name)
        if sample_of_row is not None:
            sample_of_row.append(sample)
    return rows, names


def _reference_parquet(path, schema, chunks, scale_fields, include_votes) -> None:
    """A row group per chunk from a column of Python values per field (``from_pydict``)."""
    writer = pq.ParquetWriter(str(path), schema, compression="snappy", write_statistics=False)
    for rows, names in chunks:
        columns: dict[str, list] = {f.name: [] for f in schema}
        for row, name in zip(rows, names, strict=True):
            for field in (*ROW_FIELDS, *scale_fields):
                columns[field].append(row.get(field))
            columns["image"].append(
                {"bytes": IMAGES[name], "path": row["image_path"]} if name else None
            )
            if include_votes:
                columns[VOTES_FIELD].append(row.get(VOTES_FIELD) or [])
        writer.write_table(pa.Table.from_pydict(columns, schema=schema))
    writer.close()


@pytest.mark.parametrize("scale", ["pairwise", "graded", "pointwise"])
@pytest.mark.parametrize("include_votes", [False, True])
def test_parquet_equals_the_row_by_row_reference(tmp_path, scale, include_votes):
    rows, names = _rows(scale, include_votes)
    chunks = [(rows[:10], names[:10]), (rows[10:11], names[10:11]), (rows[11:], names[11:])]
    writer = ParquetRowWriter(
        tmp_path / "new.parquet",
        include_votes=include_votes,
        read_image=IMAGES.__getitem__,
        scale=scale,
    )
    for chunk_rows, chunk_names in chunks:
        writer.write(chunk_rows, chunk_names)
    writer.write([], [])
    writer.close()
    _reference_parquet(
        tmp_path / "ref.parquet",
        writer.schema,
        chunks,
        tuple(SCALE_TYPES.get(scale, {})),
        include_votes,
    )
    assert (tmp_path / "new.parquet").read_bytes() == (tmp_path / "ref.parquet").read_bytes()
    table = pq.read_table(tmp_path / "new.parquet")
    assert table.num_rows == len(rows)
    images = table.column("image").to_pylist()
    assert [image is None for image in images] == [not name for name in names]
    assert {image["bytes"] for image in images if image} == {IMAGES[n] for n in names if n}
    assert b"" in {image["bytes"] for image in images if image}
    assert table.column("question").to_pylist() == [row["question"] for row in rows]


def test_zip_equals_the_zipfile_reference(tmp_path):
    rows, _ = _rows("graded", True)
    data = b"".join(jsonl_line(row) for row in rows) * 50
    entries = [("images/p1.png", IMAGES["img/a.png"]), ("images/é 2.jpg", IMAGES["img/b.jpg"])]
    entries.append(("images/empty.png", b""))

    archive = ZipWriter(tmp_path / "new.zip")
    for name, image in entries:
        archive.add_image(name, image)
    for start in range(0, len(data), 7777):  # the rows in chunks, deflated as they come
        archive.add_rows(data[start : start + 7777])
    archive.add_jsonl()
    archive.close()

    with zipfile.ZipFile(tmp_path / "ref.zip", "w", allowZip64=True) as ref:
        for name, image in entries:
            info = _zip_info(name, compress=zipfile.ZIP_STORED)
            with ref.open(info, "w", force_zip64=True) as dst:
                dst.write(image)
        info = _zip_info(JSONL_ENTRY, compress=zipfile.ZIP_DEFLATED)
        info._compresslevel = JSONL_DEFLATE_LEVEL  # ZipFile.open takes the level from the info
        with ref.open(info, "w", force_zip64=True) as dst:
            dst.write(data)

    assert (tmp_path / "new.zip").read_bytes() == (tmp_path / "ref.zip").read_bytes()
    with zipfile.ZipFile(tmp_path / "new.zip") as zf:
        assert zf.testzip() is None
        assert zf.read("images/é 2.jpg") == IMAGES["img/b.jpg"]
        assert zf.read(JSONL_ENTRY) == data


def test_zip_without_rows_holds_an_empty_jsonl(tmp_path):
    archive = ZipWriter(tmp_path / "new.zip")
    archive.add_jsonl()
    archive.close()
    with zipfile.ZipFile(tmp_path / "new.zip") as zf:
        assert zf.namelist() == [JSONL_ENTRY]
        assert zf.read(JSONL_ENTRY) == b""


def test_an_abandoned_zip_stops_its_deflate(tmp_path):
    archive = ZipWriter(tmp_path / "new.zip")
    archive.add_rows(b'{"a": 1}\n' * 1000)
    archive.close()
    with zipfile.ZipFile(tmp_path / "new.zip") as zf:
        assert zf.namelist() == []


def test_zip_refuses_an_unsafe_image_path(tmp_path):
    archive = ZipWriter(tmp_path / "new.zip")
    with pytest.raises(ValueError):
        archive.add_image("../escape.png", b"x")
    archive.close()


@pytest.mark.parametrize("scale", ["pairwise", "graded", "pointwise"])
@pytest.mark.parametrize("include_votes", [False, True])
def test_sample_lines_equal_jsonl_line(scale, include_votes):
    """Per-sample fragments give each row's jsonl_line bytes, whatever changes between rows."""
    samples: list = []
    rows, _ = _rows(scale, include_votes, samples)
    assert len({id(s) for s in samples}) > 1
    # Samples coming back after another, a row with a key fewer (no votes) and one with its own
    # question id between rows of the same sample: each must still give the reference bytes.
    rows = [*rows, rows[0], {k: v for k, v in rows[1].items() if k != VOTES_FIELD}]
    samples = [*samples, samples[0], samples[1]]
    rows.append({**rows[2], "question_id": 'own "id" \\ é'})
    samples.append(samples[2])
    encoder = SampleLines(SAMPLE_FIELDS)
    lines = [encoder.line(row, sample) for row, sample in zip(rows, samples, strict=True)]
    assert lines == [jsonl_line(row) for row in rows]
    assert SampleLines(SAMPLE_FIELDS).line({}, None) == jsonl_line({})
