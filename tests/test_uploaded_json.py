"""Every reader of uploaded JSON goes through one parser: a repeated key is refused (naming the key
and the line), a UTF-8 byte order mark at the start of the file is accepted.

The readers: sample imports, judge predictions (JSONL, CSV, lmms-eval logs, the API's JSON body),
dataset files, curation generations, prompt templates.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from annotation.importing.errors import ImportRejected
from annotation.importing.limits import BOM, JsonInputError, json_loads
from annotation.importing.service import samples_import
from annotation.models import Sample
from curation.models import RawPrompt
from curation.services.generations import generations_import
from judging.datasets import load_rows_file
from judging.errors import DatasetFileError, PredictionsFileError
from judging.predictions import DatasetIndex, read_predictions
from judging.prompt import template_from_bytes
from tests.annotation.import_data import png_bytes, sample_line, write_jsonl
from tests.curation.data import open_prompt, write_generations
from tests.judging.test_lmms_eval_log import log_line
from tests.judging.web_data import make_token, make_version

DATA = Path(__file__).parent / "judging" / "data"
ROWS = DATA / "rows.jsonl"


def twice(key: str) -> str:
    """The refusal of a JSON object naming ``key`` twice."""
    return f"invalid JSON: the key {key!r} appears twice"


def _repeat_key(line: dict, key: str, first: object) -> str:
    """``line`` as JSON text with ``key`` written twice: ``first``, then the line's own value."""
    rest = json.dumps(line)[1:]
    return "{" + json.dumps(key) + ": " + json.dumps(first) + ", " + rest


def _with_bom(path: Path) -> Path:
    path.write_bytes(BOM.encode() + path.read_bytes())
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1, "a": 2}', twice("a")),
        ('{"a": {"b": [{"c": 1, "c": 1}]}}', twice("c")),
        ('[{"x": 1}, {"x": 2, "y": 3, "x": 4}]', twice("x")),
    ],
)
def test_a_repeated_key_is_refused_at_any_depth(text, message):
    with pytest.raises(JsonInputError) as refused:
        json_loads(text)
    assert str(refused.value) == message
    assert json_loads('{"a": 1, "A": 2}') == {"a": 1, "A": 2}


def test_a_leading_bom_is_dropped_once_from_text_and_bytes():
    assert json_loads(BOM + '{"a": 1}') == {"a": 1}
    assert json_loads(BOM.encode() + b'{"a": 1}') == {"a": 1}
    with pytest.raises(JsonInputError):
        json_loads(BOM + BOM + '{"a": 1}')


@pytest.mark.django_db
def test_a_sample_import_names_the_key_and_line(project, tmp_path):
    lines = [sample_line("s1"), _repeat_key(sample_line("s2"), "question", "Hidden question?")]
    path = write_jsonl(tmp_path / "d" / "data.jsonl", lines, images={"img/red.png": png_bytes()})
    with pytest.raises(ImportRejected) as refused:
        samples_import(project=project, path=path)
    assert [(p.line, p.field, p.message) for p in refused.value.problems] == [
        (2, "json", twice("question"))
    ]
    assert not Sample.objects.filter(project=project).exists()


@pytest.mark.django_db
def test_a_sample_import_accepts_a_bom(project, tmp_path):
    path = write_jsonl(
        tmp_path / "d" / "data.jsonl",
        [sample_line("s1"), sample_line("s2")],
        images={"img/red.png": png_bytes()},
    )
    samples_import(project=project, path=_with_bom(path))
    assert sorted(Sample.objects.values_list("external_id", flat=True)) == ["s1", "s2"]


@pytest.fixture(scope="module")
def index():
    return DatasetIndex(load_rows_file(ROWS))


def test_a_predictions_line_names_the_key_and_line(tmp_path, index):
    path = tmp_path / "judge.jsonl"
    first = {"question_id": "o1__completeness", "prediction": "model_a"}
    second = {"question_id": "o1__hallucination", "prediction": "model_b"}
    path.write_text(json.dumps(first) + "\n" + _repeat_key(second, "prediction", "model_a") + "\n")
    with pytest.raises(PredictionsFileError) as refused:
        read_predictions(path, dataset_index=index)
    assert refused.value.line == 2
    assert refused.value.message == "not valid JSON (" + twice("prediction") + ")"


def test_an_lmms_eval_log_line_names_the_key_and_line(tmp_path, index):
    good = log_line("o1__completeness", "Response 1 is better.")
    bad = _repeat_key(log_line("o1__hallucination", "Response 2."), "filtered_resps", ["x"])
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(good) + "\n" + bad + "\n")
    with pytest.raises(PredictionsFileError) as refused:
        read_predictions(path, dataset_index=index)
    assert refused.value.line == 2
    assert twice("filtered_resps") in refused.value.message


@pytest.mark.parametrize("name", ["judge_alpha.jsonl", "judge_beta.csv"])
def test_predictions_files_accept_a_bom(tmp_path, index, name):
    plain = read_predictions(DATA / name, dataset_index=index)
    path = tmp_path / name
    path.write_bytes((DATA / name).read_bytes())
    marked = read_predictions(_with_bom(path), dataset_index=index)
    assert marked.stats() == plain.stats()
    assert marked.run_indices == plain.run_indices


def test_a_dataset_file_names_the_key_and_line_and_accepts_a_bom(tmp_path):
    lines = ROWS.read_text().splitlines()
    row = json.loads(lines[2])
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join([*lines[:2], _repeat_key(row, "preference", "model_b")]) + "\n")
    with pytest.raises(DatasetFileError) as refused:
        load_rows_file(path)
    assert refused.value.line == 3
    assert refused.value.message == "not valid JSON (" + twice("preference") + ")"
    path.write_text("\n".join(lines) + "\n")
    assert len(load_rows_file(_with_bom(path)).question_id) == len(lines)


@pytest.mark.django_db
def test_curation_generations_name_the_key_and_line_and_accept_a_bom(project, tmp_path):
    prompts = [open_prompt("o1"), open_prompt("o2")]
    path = write_generations(tmp_path, prompts)
    first, second = path.read_text().splitlines()
    path.write_text(first + "\n" + _repeat_key(json.loads(second), "split", "reasoning") + "\n")
    with pytest.raises(ImportRejected) as refused:
        generations_import(project=project, path=path)
    assert [(p.line, p.field, p.message) for p in refused.value.problems] == [
        (2, "json", twice("split"))
    ]
    path = _with_bom(write_generations(tmp_path, prompts))
    assert generations_import(project=project, path=path).created == 2
    assert RawPrompt.objects.filter(project=project).count() == 2


def test_a_prompt_template_accepts_a_bom():
    plain = template_from_bytes(b"Judge $question.")
    assert template_from_bytes(BOM.encode() + b"Judge $question.").text == plain.text


@pytest.mark.django_db
def test_the_api_body_names_the_key_and_accepts_a_bom(lead, project):
    make_version(project)
    client = Client(HTTP_AUTHORIZATION=f"Token {make_token(lead, scope='predictions')}")
    url = f"/api/projects/{project.slug}/versions/1/predictions/"
    body = {"judge": "j", "predictions": [{"question_id": "x", "prediction": "model_a"}]}
    repeated = _repeat_key(body, "judge", "k")
    refused = client.post(url, repeated, content_type="application/json")
    assert refused.status_code == 400
    assert refused.json()["detail"] == "JSON parse error: " + twice("judge")
    marked = client.post(url, BOM + json.dumps(body), content_type="application/json")
    assert marked.status_code == 400  # read: the id is not in the version
    assert [e["field"] for e in marked.json()["errors"]] == ["question_id"]
