"""Property tests of the predictions reader, the upload service and the judge-output parser.

Any file is read into predictions or refused with PredictionsFileError naming where; an upload is
stored whole or refused with nothing stored; the parser answers model_a, model_b or None.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aggregation.models import DatasetVersion
from judging.datasets import load_rows_file
from judging.errors import PredictionsFileError
from judging.models import JudgeRun, Prediction, Scorecard
from judging.parsing import parse_judge_output
from judging.predictions import DatasetIndex, read_predictions
from judging.services import scoring as services
from tests.judging.web_data import HAND_PREDICTIONS, make_version

DATA = Path(__file__).parent / "data"
PROPERTY = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
ROWS = load_rows_file(DATA / "rows.jsonl")
INDEX = DatasetIndex(ROWS)
QIDS = ROWS.question_id.tolist()

special = st.sampled_from(
    [
        "",
        "\x00",
        "\ud800",
        "A",
        "B",
        "model_a",
        "tie",
        "Response 1 is better.",
        "**Response 2 is better**",
        "open_ended",
        "reasoning",
        "y" * 140_000,
        *QIDS[:3],
    ]
)
text = st.one_of(special, st.text(st.characters(exclude_categories=()), max_size=30))
value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(),
    text,
    st.lists(text, max_size=2),
    st.dictionaries(text, text, max_size=2),
)
FIELDS = ["question_id", "prompt_id", "criterion", "prediction", "output", "run", "judge", "split"]
record = st.dictionaries(st.sampled_from(FIELDS), value, max_size=5)
raw_line = st.sampled_from(
    ["[" * 100_000 + "]" * 100_000, '{"run": NaN}', '{"run": 1e999}', "[1]", "not json", "\ufeff"]
)


def jsonl_text(lines: list) -> str:
    out = []
    for line in lines:
        out.append(line if isinstance(line, str) else json.dumps(line))
    return "\n".join(out) + "\n"


def csv_text(header: list[str], rows: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def read_checked(data: bytes, name: str) -> None:
    handle = io.BytesIO(data)
    handle.name = name
    try:
        parsed = read_predictions(handle, dataset_index=INDEX, lenient=True)
    except PredictionsFileError as exc:
        assert str(exc)
        str(exc).encode("utf-8")  # printable: no lone surrogate in the message
    else:
        for labels in parsed.run_list():
            assert set(labels.tolist()) <= {"model_a", "model_b", "invalid", None}


@PROPERTY
@given(lines=st.lists(st.one_of(record, raw_line), min_size=1, max_size=5))
def test_any_jsonl_predictions_file_is_read_or_refused(lines):
    read_checked(jsonl_text(lines).encode("utf-8", "surrogatepass"), "p.jsonl")


@PROPERTY
@given(
    header=st.lists(st.sampled_from(FIELDS), min_size=1, max_size=4, unique=True),
    rows=st.lists(st.lists(st.one_of(special, st.text(max_size=20)), max_size=5), max_size=4),
)
def test_any_csv_predictions_file_is_read_or_refused(header, rows):
    read_checked(csv_text(header, rows).encode("utf-8", "surrogatepass"), "p.csv")


@PROPERTY
@given(data=st.binary(max_size=200), name=st.sampled_from(["p.jsonl", "p.csv", "p"]))
def test_any_bytes_are_read_or_refused(data, name):
    read_checked(data, name)


@PROPERTY
@given(output=st.one_of(text, st.text(max_size=300)), tail=special)
def test_the_parser_answers_a_label_or_none(output, tail):
    for candidate in (output, output + "\n" + tail, tail + "\n" + output):
        assert parse_judge_output(candidate) in ("model_a", "model_b", None)


UPLOAD_QIDS = list(HAND_PREDICTIONS)
upload_record = st.fixed_dictionaries(
    {"question_id": st.sampled_from(UPLOAD_QIDS)},
    optional={"prediction": value, "output": value, "run": value, "judge": value},
)


def stored() -> tuple[int, int, int]:
    return JudgeRun.objects.count(), Prediction.objects.count(), Scorecard.objects.count()


@pytest.mark.django_db
@PROPERTY
@given(lines=st.lists(st.one_of(upload_record, raw_line), min_size=1, max_size=5))
def test_an_upload_is_stored_whole_or_not_at_all(project, lead, lines):
    version = DatasetVersion.objects.filter(project=project).first() or make_version(project)
    before = stored()
    upload = io.BytesIO(jsonl_text(lines).encode("utf-8", "surrogatepass"))
    upload.name = "p.jsonl"
    try:
        result = services.judge_run_upload(version=version, judge="j", file=upload, by=lead)
    except services.UploadRejected as exc:
        assert exc.as_dict()["message"]
        assert stored() == before
    else:
        assert stored()[0] == before[0] + len(result.runs)


@PROPERTY
@given(lines=st.lists(st.one_of(record, raw_line, st.binary(max_size=40)), min_size=1, max_size=5))
def test_any_published_rows_file_is_read_or_refused(lines):
    import tempfile

    from judging.errors import DatasetFileError

    rows_fields = {"prompt_id": "p1", "split": "open_ended", "criterion": "clarity"}
    out = []
    for line in lines:
        if isinstance(line, dict):
            line = {**rows_fields, "preference": "model_a", **line}
        if isinstance(line, bytes):
            out.append(line.replace(b"\n", b" "))
        else:
            out.append(jsonl_text([line]).rstrip("\n").encode("utf-8", "surrogatepass"))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.jsonl"
        path.write_bytes(b"\n".join(out) + b"\n")
        try:
            rows = load_rows_file(path)
        except DatasetFileError as exc:
            str(exc).encode("utf-8")
        else:
            assert len(rows) >= 1
