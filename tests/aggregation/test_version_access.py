"""Who reads which rows and files of a version: whatever names annotators is the lead's.

Every role (lead, member annotator, another project's annotator, a user without a role) by every
kind of authentication (session, read token, predictions token, revoked token), on the rows and
every file of a version with votes and of a label-only one.
"""

from __future__ import annotations

import io
import json
import zipfile

import pyarrow.parquet as pq
import pytest
from django.test import Client

from aggregation.models import AgreementSnapshot
from aggregation.services.aggregate import project_aggregate
from aggregation.services.versions import version_build
from annotation.models import Vote
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP
from core.tokens import token_create, token_revoke
from tests.aggregation.export_data import small_dataset
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

BASE = "/api/projects/test-project/versions"
KINDS = ("jsonl", "jsonl_zip", "parquet", "manifest")
ROLES = ("lead", "member", "other_annotator", "no_role")
AUTHS = ("session", "read", "predictions", "revoked")
RATIONALE = "Rationale {n}: the left answer names every lamp on the table."


@pytest.fixture
def versions(project, lead, annotators):
    """Version 1 with votes and version 2 without, over the same labels and agreement figures."""
    small_dataset(project, annotators)
    for n, vote in enumerate(Vote.objects.order_by("pk"), start=1):
        Vote.objects.filter(pk=vote.pk).update(rationale=RATIONALE.format(n=n))
    project_aggregate(project=project, n_boot=0, min_overlap=1)
    with_votes = version_build(project=project, by=lead, include_votes=True)
    labels_only = version_build(project=project, by=lead)
    return with_votes, labels_only


def user_for(role: str, project, lead, annotators):
    if role == "lead":
        return lead
    if role == "member":
        return annotators[0]
    if role == "other_annotator":
        user = make_user("elsewhere", ANNOTATOR_GROUP)
        member_add(project=project_create(name="Other", slug="other"), user=user)
        return user
    return make_user("nobody")


def client_for(auth: str, user, lead) -> Client:
    if auth == "session":
        client = Client()
        client.force_login(user)
        return client
    scope = "predictions" if auth == "predictions" else "read"
    token, key = token_create(user=user, name="access test", by=lead, scope=scope)
    if auth == "revoked":
        token_revoke(token=token, by=lead)
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def body_of(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def readable_text(kind: str, body: bytes) -> str:
    """The text a file holds, whatever its packing (the zip's members, the Parquet's values)."""
    if kind == "jsonl_zip":
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            return "\n".join(
                archive.read(name).decode("utf-8", "replace") for name in archive.namelist()
            )
    if kind == "parquet":
        table = pq.read_table(io.BytesIO(body))
        return json.dumps(table.to_pylist(), default=str) + " ".join(table.column_names)
    return body.decode()


def expected(role: str, auth: str, has_votes: bool, kind: str | None) -> int:
    """The status the rule gives: ``kind`` None is the rows endpoint."""
    if auth == "revoked":
        return 401
    if role == "lead":
        return 200
    if role != "member":
        return 403
    if kind == "manifest" or has_votes:
        return 403
    return 200


def assert_names_no_annotator(text: str, annotators) -> None:
    assert "Rationale " not in text
    assert "annotator_0" not in text
    assert '"votes"' not in text and " votes" not in text
    for user in annotators:
        assert f'"{user.username}"' not in text


@pytest.mark.parametrize("auth", AUTHS)
@pytest.mark.parametrize("role", ROLES)
def test_rows_and_files_by_role_and_auth(project, lead, annotators, versions, role, auth):
    user = user_for(role, project, lead, annotators)
    client = client_for(auth, user, lead)
    for version in versions:
        has_votes = version.include_votes
        url = f"{BASE}/{version.number}"
        response = client.get(f"{url}/rows/")
        status = expected(role, auth, has_votes, None)
        assert response.status_code == status, (role, auth, version.number, "rows")
        if status == 200 and role != "lead":
            assert response.json()["count"] == version.row_count
            assert_names_no_annotator(response.content.decode(), annotators)
        if status == 403:
            assert "Rationale " not in response.content.decode()
        for kind in KINDS:
            response = client.get(f"{url}/files/{kind}")
            status = expected(role, auth, has_votes, kind)
            assert response.status_code == status, (role, auth, version.number, kind)
            body = body_of(response)
            if status == 200 and role != "lead":
                assert body == version.files.get(kind=kind).file.read()
                assert_names_no_annotator(readable_text(kind, body), annotators)
            if status != 200:
                assert b"Rationale " not in body and b"PAR1" not in body
            head = client.head(f"{url}/files/{kind}")
            assert head.status_code == status, (role, auth, version.number, kind, "HEAD")


@pytest.mark.parametrize("auth", ("session", "read", "predictions"))
def test_lead_reads_the_votes_and_rationales(project, lead, annotators, versions, auth):
    client = client_for(auth, lead, lead)
    rows = client.get(f"{BASE}/1/rows/").json()["results"]
    assert rows[0]["votes"][0]["rationale"].startswith("Rationale ")
    for kind in ("jsonl", "jsonl_zip", "parquet"):
        text = readable_text(kind, body_of(client.get(f"{BASE}/1/files/{kind}")))
        assert "Rationale " in text and "annotator_01" in text
    manifest = json.loads(body_of(client.get(f"{BASE}/1/files/manifest")))
    assert manifest["agreement"]["open_ended"]["pairwise"]["annotators"][0] == "annotator_01"


def test_member_sees_only_the_files_they_may_download_and_a_manifest_without_names(
    project, lead, annotators, versions
):
    client = client_for("read", annotators[0], lead)
    listed = {v["number"]: {f["kind"] for f in v["files"]} for v in client.get(f"{BASE}/").json()}
    assert listed == {1: set(), 2: {"jsonl", "jsonl_zip", "parquet"}}
    for number in (1, 2):
        detail = client.get(f"{BASE}/{number}/").json()
        agreement = detail["manifest"]["agreement"]["open_ended"]
        assert "pairwise" not in agreement and "per_annotator" not in agreement
        assert agreement["cohen"] == versions[0].manifest["agreement"]["open_ended"]["cohen"]
        assert "annotator_0" not in json.dumps(detail)
    lead_view = client_for("read", lead, lead).get(f"{BASE}/1/").json()
    assert lead_view["manifest"] == versions[0].manifest
    assert {f["kind"] for f in lead_view["files"]} == set(KINDS)


def test_no_version_file_holds_a_username(project, lead, annotators, versions):
    snapshot = AgreementSnapshot.objects.get(project=project, split="open_ended")
    usernames = snapshot.figures["pairwise"]["annotators"]
    assert usernames == sorted(u.username for u in annotators[:6])  # the snapshot is the lead's
    voters = {v.annotator.username for v in Vote.objects.select_related("annotator")}
    for version in versions:
        for record in version.files.all():
            with record.file.open("rb") as fh:
                text = readable_text(record.kind, fh.read())
            for username in voters:
                assert f'"{username}"' not in text, (version.number, record.kind, username)
                assert f"{username} " not in text and f"{username}," not in text
        pairwise = version.manifest["agreement"]["open_ended"]["pairwise"]
        assert pairwise["annotators"] == [f"annotator_0{i}" for i in range(1, 7)]
        assert set(version.manifest["agreement"]["open_ended"]["per_annotator"]) == set(
            pairwise["annotators"]
        )


def test_pairwise_table_follows_the_pseudonyms_not_the_usernames(project, lead):
    # Joined in the reverse of the alphabetical order: the table must be reordered.
    users = [make_user(name, ANNOTATOR_GROUP) for name in ("zed", "yan", "xia")]
    for user in users:
        member_add(project=project, user=user)
    small_dataset(project, users * 2)
    project_aggregate(project=project, n_boot=0, min_overlap=1)
    figures = AgreementSnapshot.objects.get(project=project, split="open_ended").figures
    assert figures["pairwise"]["annotators"] == ["xia", "yan", "zed"]
    manifest = version_build(project=project, by=lead).manifest
    pairwise = manifest["agreement"]["open_ended"]["pairwise"]
    assert pairwise["annotators"] == ["annotator_01", "annotator_02", "annotator_03"]
    # annotator_01 is zed, the last row of the snapshot's table.
    assert pairwise["overlap"][0] == [row[2] for row in reversed(figures["pairwise"]["overlap"])]
    assert (
        manifest["agreement"]["open_ended"]["per_annotator"]["annotator_01"]
        == (figures["per_annotator"]["zed"])
    )


def test_web_download_follows_the_same_rule(project, lead, annotators, versions, client):
    client.force_login(annotators[0])
    for number in (1, 2):
        for kind in KINDS:
            assert (
                client.get(f"/projects/test-project/versions/{number}/files/{kind}").status_code
                == 403
            )
    client.force_login(lead)
    for kind in KINDS:
        assert client.get(f"/projects/test-project/versions/1/files/{kind}").status_code == 200


def test_schema_documents_the_lead_only_403s(client, lead):
    client.force_login(lead)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    for path in (
        "/api/projects/{slug}/versions/{number}/rows/",
        "/api/projects/{slug}/versions/{number}/files/{kind}",
    ):
        operation = paths[path]["get"]
        assert "names annotators" in operation["responses"]["403"]["description"], path
        assert "lead" in operation["description"].lower(), path


def test_version_page_marks_the_files_for_leads_only(project, lead, annotators, versions, client):
    client.force_login(lead)
    with_votes = client.get("/projects/test-project/versions/1/").content.decode()
    labels_only = client.get("/projects/test-project/versions/2/").content.decode()
    assert with_votes.count(">leads only</span>") == 4
    assert labels_only.count(">leads only</span>") == 1
