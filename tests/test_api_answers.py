"""The answers the API's schema run found at odds with the schema, each pinned by value.

Downloads in the media type of their kind, the split filters refusing an empty or unknown value
with the parameter named, multipart fields that are never null, and byte ranges on an empty file
(RFC 9110 section 14).
"""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from aggregation.http import CONTENT_TYPES
from aggregation.models import DatasetFile, DatasetVersion
from core.http import RangeNotSatisfiable, byte_range
from tests.judging.web_data import jsonl, make_token, make_version, prediction_lines

pytestmark = pytest.mark.django_db

BASE = "/api/projects/test-project/versions"


def _file(version: DatasetVersion, kind: str, body: bytes) -> None:
    record = DatasetFile(version=version, kind=kind, size=len(body), sha256="0" * 64)
    record.file.save(f"{kind}.bin", ContentFile(body), save=False)
    record.save()


@pytest.fixture
def version(project):
    return make_version(project)


@pytest.fixture
def client(lead) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {make_token(lead, scope='predictions')}")


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_each_kind_is_served_in_its_documented_media_type(client, version):
    for kind in CONTENT_TYPES:
        _file(version, kind, b"{}\n")
    schema = client.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/projects/{slug}/versions/{number}/files/{kind}"]["get"]
    documented = set(operation["responses"]["200"]["content"])
    assert (
        documented
        == set(operation["responses"]["206"]["content"])
        == {
            "application/x-ndjson",
            "application/zip",
            "application/vnd.apache.parquet",
            "application/json",
        }
    )
    served = {kind: client.get(f"{BASE}/1/files/{kind}")["Content-Type"] for kind in CONTENT_TYPES}
    assert served == {
        "jsonl": "application/x-ndjson",
        "contested": "application/x-ndjson",
        "jsonl_zip": "application/zip",
        "parquet": "application/vnd.apache.parquet",
        "manifest": "application/json",
    }
    assert "format" not in {p["name"] for p in operation["parameters"]}


@pytest.mark.parametrize("value", ["", "AAA", "open-ended"])
def test_an_empty_or_unknown_split_is_a_400_naming_it(client, version, value):
    expected = f'"{value}" is not a split: use open_ended or reasoning.'
    for path in ("scorecards/", "rows/"):
        response = client.get(f"{BASE}/1/{path}", {"split": value})
        assert response.status_code == 400, path
        assert response.json() == {"split": [expected]}, path
    assert client.get(f"{BASE}/1/scorecards/", {"split": "reasoning"}).status_code == 200


def test_the_scorecards_filters_are_documented_as_served(client):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/projects/{slug}/versions/{number}/scorecards/"]["get"]
    query = {p["name"]: p["schema"] for p in operation["parameters"] if p["in"] == "query"}
    assert query["split"]["enum"] == ["open_ended", "reasoning"]
    assert query["judge"]["minLength"] == 1
    assert "400" in operation["responses"]


def test_multipart_fields_are_never_null_and_json_ones_may_be(client, version):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]
    body = schema["paths"]["/api/projects/{slug}/versions/{number}/predictions/"]["post"]
    content = body["requestBody"]["content"]
    form = components[content["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[-1]]
    as_json = components[content["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]]
    assert not [name for name, field in form["properties"].items() if field.get("nullable")]
    assert form["required"] == ["file"] and as_json["required"] == ["predictions"]
    assert form["properties"]["file"] == {
        "type": "string",
        "format": "binary",
        "description": "A JSONL or CSV predictions file.",
    }
    assert "file" not in as_json["properties"] and "predictions" not in form["properties"]
    assert as_json["properties"]["run_index"]["nullable"] is True
    # A form leaves an option out (or sends an empty split); the literal text "null" is no number.
    upload = SimpleUploadedFile("judge.jsonl", jsonl(prediction_lines()))
    sent = {"judge": "j", "file": upload, "split": ""}
    assert client.post(f"{BASE}/1/predictions/", sent).status_code == 201
    upload.seek(0)
    refused = client.post(f"{BASE}/1/predictions/", {**sent, "run_index": "null"})
    assert refused.status_code == 400
    assert [e["field"] for e in refused.json()["errors"]] == ["run_index"]
    nulls = {"judge": "j", "predictions": prediction_lines(), "run_index": None, "split": None}
    response = client.post(f"{BASE}/1/predictions/", nulls, content_type="application/json")
    assert response.status_code == 201, response.content


@pytest.mark.parametrize(
    ("header", "size", "expected"),
    [
        ("bytes=0-0", 5, (0, 0)),
        ("bytes=-2", 5, (3, 4)),
        ("BYTES=1-", 5, (1, 4)),
        ("lines=0-1", 5, None),  # another unit: ignored (MUST)
        ("bytes=0-1,3-4", 5, None),  # several ranges: the whole file (MAY)
        ("bytes=-5", 0, None),  # satisfiable on an empty file, but no 206 says zero bytes
    ],
)
def test_byte_ranges(header, size, expected):
    assert byte_range(header, size) == expected


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("bytes=0-", "range 'bytes=0-' starts at or past the end of the file (0 bytes)"),
        ("bytes=0-0", "range 'bytes=0-0' starts at or past the end of the file (0 bytes)"),
        ("bytes=-0", "a suffix range of 0 bytes asks for nothing"),
        ("bytes=3-1", "range 'bytes=3-1' ends before it starts"),
    ],
)
def test_ranges_an_empty_file_cannot_satisfy(header, message):
    with pytest.raises(RangeNotSatisfiable) as refused:
        byte_range(header, 0)
    assert str(refused.value) == message


def test_a_range_on_an_empty_file_over_http(client, version):
    _file(version, DatasetFile.Kind.JSONL, b"")
    url = f"{BASE}/1/files/jsonl"
    refused = client.get(url, HTTP_RANGE="bytes=0-")
    assert refused.status_code == 416
    assert refused["Content-Range"] == "bytes */0"
    assert refused["Content-Type"] == "text/plain"
    assert refused.content == b"range 'bytes=0-' starts at or past the end of the file (0 bytes)"
    whole = client.get(url, HTTP_RANGE="bytes=-10")
    assert (whole.status_code, whole["Content-Length"], _body(whole)) == (200, "0", b"")
    assert "Content-Range" not in whole


def test_a_head_ignores_the_range(client, version):
    _file(version, DatasetFile.Kind.JSONL, b"0123456789")
    response = client.head(f"{BASE}/1/files/jsonl", HTTP_RANGE="bytes=0-1")
    assert (response.status_code, response["Content-Length"]) == (200, "10")
