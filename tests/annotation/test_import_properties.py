"""Property tests of the importers: any file gives a report or a list of problems, nothing else.

Hypothesis writes JSONL samples, Multi-Crit rows (JSONL and Parquet) and damaged zips from
hostile values (NUL, lone surrogates, deep nesting, wrong types, odd paths). The import either
succeeds or raises ImportRejected; on a refusal the database is as before (no partial write).
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from annotation.importing.errors import ImportRejected
from annotation.importing.service import samples_import
from annotation.models import ReferenceLabel, Sample, Slot

from .import_data import png_bytes, sample_line

pytestmark = pytest.mark.django_db

PROPERTY = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PNG = png_bytes()

# Text as hostile files carry it: surrogates and NUL included, and the values the readers know.
special = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "\ud800",
        "a\udfffb",
        "open_ended",
        "reasoning",
        "A",
        "B",
        "tie",
        "model_a",
        "model_b",
        "cross",
        "same_model",
        "clarity",
        "logic",
        "img/red.png",
        "../img/red.png",
        "/etc/passwd",
        "C:\\x.png",
        "img\\red.png",
        "x" * 70_000,
    ]
)
text = st.one_of(special, st.text(st.characters(exclude_categories=()), max_size=30))
scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
json_value = st.recursive(
    scalar,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(text, children, max_size=4)
    ),
    max_leaves=12,
)
SAMPLE_FIELDS = [
    "id",
    "split",
    "question",
    "image",
    "response_a",
    "response_b",
    "model_a",
    "model_b",
    "source",
    "pair_type",
    "is_seed",
    "reference_answer",
    "metadata",
    "reference",
]
ROW_FIELDS = [
    "prompt_id",
    "question_id",
    "split",
    "criterion",
    "question",
    "image_path",
    "pred_a",
    "pred_b",
    "model_a",
    "model_b",
    "preference",
    "metadata",
]


def mutated(base: dict, fields: list[str]) -> st.SearchStrategy[dict]:
    """``base`` with some fields replaced by hostile values or removed."""
    return st.dictionaries(
        st.sampled_from(fields), st.one_of(json_value, st.just(None)), max_size=4
    ).map(lambda changes: {**base, **changes})


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


raw_line = st.one_of(
    st.binary(max_size=60),
    st.sampled_from(
        [
            deep(100_000),
            '{"metadata": ' + deep(5000) + "}",
            '{"id": NaN}',
            '{"id": 1e999}',
            '{"id": ' + "7" * 5000 + "}",
            "\ufeff{}",
            '"just a string"',
            "[1, 2]",
        ]
    ),
)
line_value = st.one_of(
    mutated(sample_line("s1"), SAMPLE_FIELDS),
    mutated(sample_line("s2", split="reasoning"), SAMPLE_FIELDS),
)


def encode(line: dict | bytes | str) -> bytes:
    if isinstance(line, bytes):
        return line.replace(b"\n", b" ")
    if isinstance(line, str):
        return line.encode("utf-8", "surrogatepass")
    return json.dumps(line).encode()


def state(project) -> tuple[int, int, int, list]:
    return (
        Sample.objects.filter(project=project).count(),
        Slot.objects.filter(sample__project=project).count(),
        ReferenceLabel.objects.filter(sample__project=project).count(),
        sorted(Sample.objects.filter(project=project).values_list("external_id", "content_hash")),
    )


def import_checked(project, path: Path) -> None:
    """The property: a report, or a refusal that leaves the database as it was."""
    before = state(project)
    try:
        report = samples_import(project=project, path=path)
    except ImportRejected as exc:
        assert exc.problems or exc.more
        for problem in exc.problems:
            # Messages are stored as JSON and shown on a page: printable, no NUL, no surrogate.
            assert "\x00" not in problem.message + problem.field
            (problem.message + problem.field).encode("utf-8")
        assert state(project) == before
    else:
        assert report.samples >= 0


def in_folder(files: dict[str, bytes]) -> tuple[tempfile.TemporaryDirectory, dict[str, Path]]:
    folder = tempfile.TemporaryDirectory()
    paths = {}
    for name, data in files.items():
        path = Path(folder.name) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        paths[name] = path
    return folder, paths


@PROPERTY
@given(lines=st.lists(st.one_of(line_value, raw_line), min_size=1, max_size=4))
def test_any_jsonl_file_is_imported_or_refused_whole(project, lines):
    data = b"\n".join(encode(line) for line in lines) + b"\n"
    folder, paths = in_folder({"data.jsonl": data, "img/red.png": PNG})
    with folder:
        import_checked(project, paths["data.jsonl"])


row_base = {
    "prompt_id": "p1",
    "question_id": "p1__clarity",
    "split": "open_ended",
    "criterion": "clarity",
    "question": "Which is better?",
    "image_path": "img/red.png",
    "pred_a": "One.",
    "pred_b": "Two.",
    "model_a": "m1",
    "model_b": "m2",
    "preference": "model_a",
}


@PROPERTY
@given(rows=st.lists(mutated(row_base, ROW_FIELDS), min_size=1, max_size=4))
def test_any_multicrit_jsonl_file_is_imported_or_refused_whole(project, rows):
    rows[0] = {**rows[0], "prompt_id": rows[0].get("prompt_id") or "p1", "criterion": "clarity"}
    data = b"\n".join(encode(row) for row in rows) + b"\n"
    folder, paths = in_folder({"rows.jsonl": data, "img/red.png": PNG})
    with folder:
        import_checked(project, paths["rows.jsonl"])


parquet_text = st.one_of(special, st.text(max_size=20))
parquet_row = st.fixed_dictionaries(
    {
        "prompt_id": st.sampled_from(["p1", "p2", "", "p\x00"]),
        "split": st.sampled_from(["open_ended", "reasoning", "chat", "\x00"]),
        "criterion": st.sampled_from(["clarity", "logic", "completeness", "x\x00"]),
        "question": parquet_text,
        "pred_a": parquet_text,
        "pred_b": parquet_text,
        "preference": st.sampled_from(["model_a", "model_b", "tie", ""]),
        "image": st.sampled_from([PNG, PNG[:20], b"", b"\x00" * 10]),
    }
)


@PROPERTY
@given(rows=st.lists(parquet_row, min_size=1, max_size=4))
def test_any_parquet_file_is_imported_or_refused_whole(project, rows):
    try:
        table = pa.Table.from_pylist(rows)
    except (pa.ArrowException, UnicodeEncodeError):
        assume(False)  # not representable in Parquet at all
    out = io.BytesIO()
    pq.write_table(table, out)
    folder, paths = in_folder({"rows.parquet": out.getvalue()})
    with folder:
        import_checked(project, paths["rows.parquet"])


def good_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("samples.jsonl", json.dumps(sample_line("z1")) + "\n")
        archive.writestr("img/red.png", PNG)
    return out.getvalue()


GOOD_ZIP = good_zip()
with zipfile.ZipFile(io.BytesIO(GOOD_ZIP)) as _archive:
    _first = _archive.infolist()[0]
    # Where the members' compressed bytes are: a flip there shows only when a member is read.
    DATA_START = _first.header_offset + 30 + len(_first.filename)
    DATA_END = _archive.start_dir
position = st.one_of(st.integers(0, len(GOOD_ZIP) - 1), st.integers(DATA_START, DATA_END - 1))


@PROPERTY
@given(
    flips=st.lists(st.tuples(position, st.integers(1, 255)), min_size=1, max_size=3),
    cut=st.one_of(st.none(), st.integers(0, len(GOOD_ZIP))),
)
def test_any_damaged_zip_is_imported_or_refused_whole(project, flips, cut):
    data = bytearray(GOOD_ZIP)
    for at, mask in flips:
        data[at] ^= mask
    if cut is not None:
        data = data[:cut]
    folder, paths = in_folder({"upload.zip": bytes(data)})
    with folder:
        import_checked(project, paths["upload.zip"])
