"""The dataset API: lists, detail, rows, downloads with Range/ETag, and who may read what."""

import hashlib

import pytest
from django.test import Client

from aggregation.services.versions import version_build
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP
from core.tokens import token_create, token_revoke
from tests.aggregation.export_data import small_dataset
from tests.conftest import make_user

BASE = "/api/projects/test-project/versions"


@pytest.fixture
def built(project, lead, annotators):
    small_dataset(project, annotators)
    return version_build(project=project, by=lead, include_votes=True)


@pytest.fixture
def lead_key(lead):
    return token_create(user=lead, name="scripts", by=lead)[1]


def api(key: str | None = None, **headers) -> Client:
    if key is not None:
        headers["HTTP_AUTHORIZATION"] = f"Token {key}"
    return Client(**headers)


def body_of(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def stored(version, kind) -> bytes:
    with version.files.get(kind=kind).file.open("rb") as fh:
        return fh.read()


def test_projects_list(project, built, lead_key):
    project_create(name="Empty", slug="empty")
    data = api(lead_key).get("/api/projects/").json()
    assert [(p["slug"], p["versions"], p["latest_version"]) for p in data] == [
        ("empty", 0, None),
        ("test-project", 1, 1),
    ]
    assert data[1]["url"] == "http://testserver/api/projects/test-project/versions/"


def test_versions_list_shows_only_ready_versions(project, lead, built, lead_key):
    from aggregation.models import DatasetVersion

    DatasetVersion.objects.create(project=project, number=2, status="building")
    DatasetVersion.objects.create(project=project, number=3, status="failed")
    data = api(lead_key).get(f"{BASE}/").json()
    assert [v["number"] for v in data] == [1]
    v = data[0]
    assert v["row_count"] == 4 and v["include_votes"] is True
    assert v["data_sha256"] == built.manifest["data_sha256"]
    files = {f["kind"]: f for f in v["files"]}
    assert set(files) == {"jsonl", "jsonl_zip", "parquet", "manifest"}
    assert files["parquet"]["name"] == "test-project-v1.parquet"
    assert files["parquet"]["sha256"] == built.files.get(kind="parquet").sha256
    assert files["jsonl"]["url"] == f"http://testserver{BASE}/1/files/jsonl"
    assert api(lead_key).get(f"{BASE}/2/").status_code == 404


def test_version_detail_has_the_manifest(built, lead_key):
    data = api(lead_key).get(f"{BASE}/1/").json()
    assert data["number"] == 1 and data["manifest"] == built.manifest
    assert data["manifest"]["counts"]["rows"] == 4
    assert data["rows_url"] == f"http://testserver{BASE}/1/rows/"


def test_rows_are_paginated_and_filtered(built, lead_key):
    client = api(lead_key)
    everything = client.get(f"{BASE}/1/rows/").json()
    assert everything["count"] == 4 and everything["next"] is None
    first = everything["results"][0]
    assert list(first) == [
        "question_id", "prompt_id", "split", "criterion", "question", "image_path",
        "pred_a", "pred_b", "model_a", "model_b", "preference", "provenance", "votes",
    ]  # fmt: skip
    assert first == built.rows.order_by("id").first().data
    assert list(first["votes"][0]) == ["annotator", "choice", "rationale", "unsure"]
    page = client.get(f"{BASE}/1/rows/", {"page_size": 3, "page": 2}).json()
    assert page["count"] == 4 and [r["question_id"] for r in page["results"]] == [
        everything["results"][3]["question_id"]
    ]
    assert page["previous"] and page["next"] is None
    reasoning = client.get(f"{BASE}/1/rows/", {"split": "reasoning"}).json()
    assert [r["prompt_id"] for r in reasoning["results"]] == ["r1"]
    criterion = everything["results"][0]["criterion"]
    filtered = client.get(f"{BASE}/1/rows/", {"criterion": criterion, "split": "open_ended"})
    assert {r["criterion"] for r in filtered.json()["results"]} == {criterion}
    assert filtered.json()["count"] == 2
    bad = client.get(f"{BASE}/1/rows/", {"split": "nope"})
    assert bad.status_code == 400 and "split" in bad.json()
    assert client.get(f"{BASE}/1/rows/", {"page": 9}).status_code == 404


@pytest.mark.parametrize("kind", ["jsonl", "jsonl_zip", "parquet", "manifest"])
def test_download_streams_the_stored_file_with_its_etag(built, lead_key, kind):
    response = api(lead_key).get(f"{BASE}/1/files/{kind}")
    assert response.status_code == 200 and response.streaming
    body = body_of(response)
    assert body == stored(built, kind)
    record = built.files.get(kind=kind)
    assert response["ETag"] == f'"{record.sha256}"' == f'"{hashlib.sha256(body).hexdigest()}"'
    assert response["Content-Length"] == str(record.size)
    assert response["Accept-Ranges"] == "bytes"
    assert "attachment" in response["Content-Disposition"]


def test_range_requests(built, lead_key):
    whole = stored(built, "parquet")
    size = len(whole)
    client = api(lead_key)
    url = f"{BASE}/1/files/parquet"
    for header, first, last in [
        ("bytes=0-99", 0, 99),
        ("bytes=100-", 100, size - 1),
        ("bytes=-50", size - 50, size - 1),
        (f"bytes=10-{size + 500}", 10, size - 1),
    ]:
        response = client.get(url, HTTP_RANGE=header)
        assert response.status_code == 206, header
        assert body_of(response) == whole[first : last + 1]
        assert response["Content-Range"] == f"bytes {first}-{last}/{size}"
        assert response["Content-Length"] == str(last - first + 1)
    for header in (f"bytes={size}-", "bytes=50-10", "bytes=abc", "bytes=-0"):
        response = client.get(url, HTTP_RANGE=header)
        assert response.status_code == 416, header
        assert response["Content-Range"] == f"bytes */{size}"
    # Several ranges, and a unit other than bytes (RFC 9110 14.2), get the whole file.
    for header in ("bytes=0-1,5-6", "lines=0-1"):
        response = client.get(url, HTTP_RANGE=header)
        assert response.status_code == 200 and body_of(response) == whole, header
    # A stale If-Range gets the whole file too.
    response = client.get(url, HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE='"stale"')
    assert response.status_code == 200 and body_of(response) == whole


def test_etag_gives_304(built, lead_key):
    etag = f'"{built.files.get(kind="jsonl").sha256}"'
    client = api(lead_key)
    response = client.get(f"{BASE}/1/files/jsonl", HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 304 and response.content == b""
    assert response["ETag"] == etag
    response = client.get(f"{BASE}/1/files/jsonl", HTTP_IF_NONE_MATCH='"other"')
    assert response.status_code == 200 and body_of(response) == stored(built, "jsonl")


def test_unknown_file_kind_is_404(built, lead_key):
    assert api(lead_key).get(f"{BASE}/1/files/csv").status_code == 404


ENDPOINTS = [
    "/api/projects/test-project/versions/",
    f"{BASE}/1/",
    f"{BASE}/1/rows/",
    f"{BASE}/1/files/parquet",
]


def assert_no_data(response, status):
    assert response.status_code == status
    body = body_of(response)
    assert b"question_id" not in body and b"PAR1" not in body and b"manifest" not in body


def test_no_token_is_401(built):
    for url in [*ENDPOINTS, "/api/projects/"]:
        response = api().get(url)
        assert_no_data(response, 401)
        assert response["WWW-Authenticate"] == "Token"


def test_unknown_and_revoked_tokens_are_401(built, lead):
    token, key = token_create(user=lead, name="old", by=lead)
    assert api(key).get(ENDPOINTS[1]).status_code == 200
    token_revoke(token=token, by=lead)
    for url in [*ENDPOINTS, "/api/projects/"]:
        response = api(key).get(url)
        assert_no_data(response, 401)
        assert "revoked" in response.json()["detail"]
    assert_no_data(api("mcs_not-a-key").get(ENDPOINTS[0]), 401)


def test_annotator_token_reads_only_their_projects(project, lead, annotators, built):
    member = annotators[0]
    key = token_create(user=member, name="mine", by=lead)[1]
    client = api(key)
    # Version 1 holds the votes: the lead's only. Version 2 holds labels only.
    assert client.get(ENDPOINTS[2]).status_code == 403
    labels_only = version_build(project=project, by=lead)
    assert client.get(f"{BASE}/2/rows/").json()["count"] == 4
    assert body_of(client.get(f"{BASE}/2/files/parquet")) == stored(labels_only, "parquet")
    other = project_create(name="Other", slug="other")
    version_build(project=other, by=lead)
    assert [p["slug"] for p in client.get("/api/projects/").json()] == ["test-project"]
    for url in ("/api/projects/other/versions/", "/api/projects/other/versions/1/",
                "/api/projects/other/versions/1/rows/",
                "/api/projects/other/versions/1/files/jsonl"):  # fmt: skip
        assert_no_data(client.get(url), 403)
    # A lead's token reads every project.
    lead_client = api(token_create(user=lead, name="all", by=lead)[1])
    assert lead_client.get("/api/projects/other/versions/1/").status_code == 200


def test_removed_member_and_outsider_tokens_read_nothing(project, lead, annotators, built):
    from annotation.models import ProjectMember

    member = annotators[1]
    key = token_create(user=member, name="mine", by=lead)[1]
    ProjectMember.objects.filter(project=project, user=member).update(is_active=False)
    assert api(key).get("/api/projects/").json() == []
    for url in ENDPOINTS:
        assert_no_data(api(key).get(url), 403)
    stranger = make_user("stranger", ANNOTATOR_GROUP)
    key = token_create(user=stranger, name="x", by=lead)[1]
    assert_no_data(api(key).get(ENDPOINTS[2]), 403)
    member_add(project=project, user=stranger)
    assert api(key).get(ENDPOINTS[1]).status_code == 200


# Every route of the API with the status a write through a read token gets there.
WRITE_REFUSALS = {
    **{
        url: {"post": 405, "put": 405, "patch": 405, "delete": 405}
        for url in ["/api/projects/", *ENDPOINTS]
    },
    f"{BASE}/1/predictions/": {"post": 403, "put": 405, "patch": 405, "delete": 405},
    f"{BASE}/1/scorecards/": {"post": 405, "put": 405, "patch": 405, "delete": 405},
    f"{BASE}/1/compare/": {"post": 405, "put": 405, "patch": 405, "delete": 405},
    f"{BASE}/1/scorecards/open_ended/org/judge/": {
        "post": 405,
        "put": 405,
        "patch": 405,
        "delete": 405,
    },
}


def _all_api_route_names() -> set[str]:
    """The names of every route mounted under /api/ by the apps."""
    from config.api_urls import urlpatterns

    return {p.name for resolver in urlpatterns for p in resolver.url_patterns}


def _row_counts() -> dict[str, int]:
    """The number of rows of every model: a write anywhere changes one of them."""
    from django.apps import apps

    return {m._meta.label: m._default_manager.count() for m in apps.get_models()}


def test_tokens_are_read_only(built, lead_key):
    """Every write method on every API route, with a read token: refused, nothing stored."""
    from django.urls import resolve

    assert {resolve(url).url_name for url in WRITE_REFUSALS} == _all_api_route_names()
    before = _row_counts()
    body = {"judge": "org/judge", "predictions": [{"id": "p1", "criterion": "x", "choice": "A"}]}
    for url, refusals in WRITE_REFUSALS.items():
        for method, status in refusals.items():
            response = getattr(api(lead_key), method)(url, body, content_type="application/json")
            assert response.status_code == status, (method, url)
    assert _row_counts() == before


def test_predictions_scope_reads_too(built, lead):
    key = token_create(user=lead, name="judge runner", by=lead, scope="predictions")[1]
    assert api(key).get(ENDPOINTS[1]).json()["number"] == 1


def test_session_login_works_for_the_browsable_api(built, lead, client):
    client.force_login(lead)
    response = client.get(f"{BASE}/1/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert b"data_sha256" in response.content and b"Version Detail" in response.content
    assert client.get(f"{BASE}/1/rows/").json()["count"] == 4


def test_openapi_schema_lists_the_dataset_endpoints(built, lead, client):
    client.force_login(lead)
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    paths = schema["paths"]
    for path in (
        "/api/projects/",
        "/api/projects/{slug}/versions/",
        "/api/projects/{slug}/versions/{number}/",
        "/api/projects/{slug}/versions/{number}/rows/",
        "/api/projects/{slug}/versions/{number}/files/{kind}",
    ):
        assert "get" in paths[path], path
    rows = paths["/api/projects/{slug}/versions/{number}/rows/"]["get"]
    assert {p["name"] for p in rows["parameters"]} >= {"split", "criterion", "page", "page_size"}
    files = paths["/api/projects/{slug}/versions/{number}/files/{kind}"]["get"]
    assert {"200", "206", "304", "416"} <= set(files["responses"])
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
    assert b"cdn." not in docs.content  # the UI is served locally, nothing downloads


def test_stored_paths_are_unguessable_and_never_shown(built, lead_key, client, annotators, lead):
    record = built.files.get(kind="parquet")
    folder = record.file.name.split("/")[2]
    assert folder.startswith("v1-") and len(folder) == len("v1-") + 16
    body = api(lead_key).get(f"{BASE}/1/").content.decode()
    assert folder not in body
    guessed = f"/media/versions/{built.project_id}/v1/test-project-v1.parquet"
    # Export files are for leads only (others get 404); even a lead cannot guess the path.
    client.force_login(annotators[0])
    assert client.get(guessed).status_code == 404
    assert client.get(f"/media/{record.file.name}").status_code == 404
    client.force_login(lead)
    assert client.get(guessed).status_code == 404
