"""Hostile predictions through the API and files: a 400 naming the line and field, never a 500."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.importing.limits import JUDGE_OUTPUT_MAX_CHARS
from judging.models import JudgeRun, Prediction, Scorecard
from tests.judging.web_data import HAND_PREDICTIONS, make_token, make_version

pytestmark = pytest.mark.django_db

QIDS = list(HAND_PREDICTIONS)
VERDICT = "\n\nResponse 1 is better."


@pytest.fixture
def api(lead, project):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {make_token(lead, scope='predictions')}")
    client.version = make_version(project)
    return client


def url(api) -> str:
    return reverse("api-predictions-submit", args=[api.version.project.slug, api.version.number])


def stored() -> tuple[int, int, int]:
    return JudgeRun.objects.count(), Prediction.objects.count(), Scorecard.objects.count()


def post_json(api, raw: str):
    return api.post(url(api), raw, content_type="application/json")


def lines(third: dict) -> list[dict]:
    items = [{"question_id": q, "prediction": "A"} for q in QIDS]
    items[2] = {"question_id": QIDS[2], **third}
    return items


def refused(response, line, field, message):
    assert response.status_code == 400, response.content
    body = response.json()
    assert set(body) == {"detail", "errors"}
    [error] = body["errors"]
    assert (error["line"], error["field"]) == (line, field)
    assert message in error["message"]
    assert stored() == (0, 0, 0)


def test_deep_json_is_a_400(api):
    raw = '{"judge": "j", "predictions": [' + "[" * 100_000 + "]" * 100_000 + "]}"
    refused(post_json(api, raw), None, None, "nested deeper than 32 levels")
    refused(post_json(api, "[" * 50 + "]" * 50), None, None, "nested deeper than 32 levels")


@pytest.mark.parametrize(
    ("third", "field", "message"),
    [
        ({"output": "fine\u0000" + VERDICT}, "output", "contains a NUL character at character 5"),
        ({"prediction": "A\u0000"}, "prediction", "contains a NUL character"),
        ({"prediction": "A", "judge": "j\u0000"}, "judge", "contains a NUL character"),
        ({"output": "x\ud800" + VERDICT}, "output", "unpaired surrogate"),
        ({"prediction": "A", "run": "\udfff"}, "run", "unpaired surrogate"),
        ({"prediction": "A", "run": 1.5}, "run", "must be a whole number"),
        ({"prediction": "A", "run": 1e300}, "run", "32767 or less"),
        ({"prediction": "A", "run": 10**30}, "run", "32767 or less"),
        ({"prediction": "A", "split": "o" * 400}, "split", "longer than 300 characters"),
        ({"output": "x" * (JUDGE_OUTPUT_MAX_CHARS + 1)}, "output", "longer than 100,000"),
    ],
)
def test_bad_text_in_a_line_names_the_line_and_field(api, third, field, message):
    body = json.dumps({"judge": "j", "predictions": lines(third)})
    refused(post_json(api, body), 3, field, message)


def test_a_lone_surrogate_in_the_judge_name_is_a_field_error(api):
    body = json.dumps({"judge": "j\udc00", "predictions": lines({"prediction": "A"})})
    refused(post_json(api, body), None, "judge", "Surrogate characters are not allowed")


def test_nan_and_infinity_are_refused(api):
    item = f'{{"question_id": "{QIDS[0]}", "prediction": NaN}}'
    raw = '{"judge": "j", "predictions": [' + item + "]}"
    refused(post_json(api, raw), None, None, "NaN is not a JSON value")


def csv_upload(rows: list[tuple[str, str]]) -> SimpleUploadedFile:
    out = io.StringIO()
    out.write("question_id,output\n")
    for qid, output in rows:
        out.write(f'{qid},"{output}"\n')
    return SimpleUploadedFile("p.csv", out.getvalue().encode(), content_type="text/csv")


def test_a_csv_field_over_131072_characters_is_a_400(api):
    rows = [(q, "Response 1 is better.") for q in QIDS]
    rows[1] = (QIDS[1], "y" * 140_000 + VERDICT)
    response = api.post(url(api), {"judge": "j", "file": csv_upload(rows)}, format="multipart")
    refused(response, 3, "output", "longer than 100,000 characters (140,023)")


def test_a_csv_output_at_the_limit_is_accepted(api):
    rows = [(q, "Response 1 is better.") for q in QIDS]
    rows[1] = (QIDS[1], "y" * (JUDGE_OUTPUT_MAX_CHARS - len(VERDICT)) + VERDICT)
    response = api.post(url(api), {"judge": "j", "file": csv_upload(rows)}, format="multipart")
    assert response.status_code == 201, response.content
    assert Prediction.objects.count() == len(QIDS)


def test_a_file_with_nul_bytes_names_the_line(api):
    data = b"question_id,prediction\n" + f"{QIDS[0]},A\n".encode() + f"{QIDS[1]},A\x00\n".encode()
    upload = SimpleUploadedFile("p.csv", data, content_type="text/csv")
    response = api.post(url(api), {"judge": "j", "file": upload}, format="multipart")
    refused(response, 3, "prediction", "contains a NUL character")
