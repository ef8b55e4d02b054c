"""Requests refused before a view runs: NUL in the address (400), bodies over the limits (413)."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from core.models import Job
from judging.models import JudgeRun
from tests.judging.web_data import make_token, make_version, prediction_lines

pytestmark = pytest.mark.django_db

# Every kind of route: pages, htmx fragments, the API, media and static files, the admin.
NUL_PATHS = [
    "/%00",
    "/projects/%00/",
    "/projects/test-project%00/label/",
    "/projects/test-project/import/%00/",
    "/jobs/1%00/",
    "/api/projects/%00/versions/",
    "/api/projects/test-project/versions/1/scorecards/open_ended/judge%00x/",
    "/api/projects/test-project/versions/1/files/jsonl%00",
    "/media/samples/1/web/a%00.png",
    "/media/%00",
    "/static/css/app.css%00",
    "/admin/%00/",
    "/accounts/login/%00",
]
NUL_QUERIES = [
    "/?q=%00",
    "/projects/test-project/import/?job=1%00",
    "/api/projects/?x=%00",
    "/api/projects/test-project/versions/1/rows/?split=%00",
    "/api/projects/test-project/versions/1/rows/?criterion=a%00b&page=1",
    "/api/projects/test-project/versions/1/scorecards/?judge=%00",
    "/accounts/login/?next=/%00",
    "/?%00=1",
]


@pytest.fixture
def every_role(client, lead, annotator, project):
    from annotation.services.projects import member_add

    member_add(project=project, user=annotator)
    make_version(project)
    return {"anonymous": None, "annotator": annotator, "lead": lead}


@pytest.mark.parametrize("url", NUL_PATHS + NUL_QUERIES)
def test_a_nul_anywhere_in_the_address_is_a_400_for_every_role(client, every_role, url):
    for role, user in every_role.items():
        client.logout()
        if user is not None:
            client.force_login(user)
        for method in (client.get, client.post):
            response = method(url)
            assert response.status_code == 400, (role, method.__name__, url)
            message = "The address contains a NUL character (%00)"
            if url.startswith("/api/"):
                assert response.json()["detail"].startswith(message)
            else:
                text = response.content.decode()
                assert message in text and "<h1>Bad address</h1>" in text
                assert "Traceback" not in text


def test_a_token_request_with_nul_is_a_json_400(client, lead, project):
    key = make_token(lead, scope="read")
    response = client.get("/api/projects/?split=%00", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"


def test_a_json_body_over_the_limit_is_a_413_naming_the_limit(client, lead, project, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    version = make_version(project)
    key = make_token(lead, scope="predictions")
    body = json.dumps({"judge": "j", "predictions": prediction_lines(), "pad": "x" * 4000})
    url = reverse("api-predictions-submit", args=[project.slug, version.number])
    response = client.post(
        url, body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {key}"
    )
    assert response.status_code == 413
    size = len(body.encode())
    assert response.json() == {
        "detail": f"This request is {size:,} bytes; request bodies are limited to 2 KB."
    }
    assert not JudgeRun.objects.exists()


def test_an_upload_over_the_limit_is_a_413_page_and_nothing_is_stored(
    client, lead, project, settings
):
    settings.UPLOAD_MAX_BYTES = 64 * 1024
    client.force_login(lead)
    upload = SimpleUploadedFile("big.jsonl", b"{}\n" * 30_000)
    response = client.post(reverse("import-upload", args=[project.slug]), {"file": upload})
    assert response.status_code == 413
    text = response.content.decode()
    assert "uploads are limited to 64 KB" in text and "<h1>Too large</h1>" in text
    # htmx does not swap an error answer in; app.js shows this header as a toast.
    assert response["X-Refusal-Message"].endswith("uploads are limited to 64 KB.")
    assert Job.objects.count() == 0
    assert not (settings.MEDIA_ROOT / "imports").exists()


def test_the_form_refuses_an_upload_over_the_limit_before_storing(lead, project, settings):
    from annotation.views.imports import ImportUploadForm

    settings.UPLOAD_MAX_BYTES = 1024
    form = ImportUploadForm(files={"file": SimpleUploadedFile("a.jsonl", b"x" * 2048)})
    assert not form.is_valid()
    assert form.errors["file"] == ["The file is 2 KB; uploads are limited to 1 KB."]
    assert form.fields["file"].help_text.endswith("At most 1 KB.")


def test_the_limits_live_in_settings():
    assert settings.UPLOAD_MAX_BYTES == 100 * 1024 * 1024
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == 10 * 1024 * 1024
    assert "config.request_guard.RequestGuardMiddleware" in settings.MIDDLEWARE


def test_an_unknown_api_address_is_a_json_404(client, lead):
    client.force_login(lead)
    for url in ("/api/nope/", "/api/projects/x/versions/1.5/", "/api/projects/x/versions/-1/rows/"):
        response = client.get(url)
        assert response.status_code == 404
        assert response.json() == {"detail": "No such API address."}
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and not page["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("csrf_checks", [False, True])
def test_form_fields_over_the_body_limit_are_a_413(lead, project, settings, csrf_checks):
    from django.test import Client

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    client = Client(enforce_csrf_checks=csrf_checks)
    client.force_login(lead)
    upload = SimpleUploadedFile("small.jsonl", b"{}\n")
    response = client.post(
        reverse("import-upload", args=[project.slug]), {"file": upload, "notes": "n" * 10_000}
    )
    assert response.status_code == 413
    assert "request bodies are limited to 4 KB" in response.content.decode()
    assert Job.objects.count() == 0


def test_a_nul_in_a_form_field_is_a_400_naming_the_field(client, annotator, project):
    from annotation.services.projects import member_add

    member_add(project=project, user=annotator)
    client.force_login(annotator)
    url = reverse("label", args=[project.slug])
    response = client.post(url, {"sample_id": "1", "criterion_id": "1", "note": "a\x00b"})
    assert response.status_code == 400
    assert "The form field &#x27;note&#x27; contains a NUL character" in response.content.decode()
    response = client.post(url, "rationale=ok%00", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert response["X-Refusal-Message"].startswith("The form field 'rationale' contains a NUL")


def test_an_api_form_field_with_a_nul_lists_the_field_as_the_upload_errors_do(client, project):
    """The predictions API documents 400 as detail + errors; the guard's answer has both."""
    make_version(project)
    url = reverse("api-predictions-submit", args=[project.slug, 1])
    response = client.post(url, {"judge": "x", "template_hash": "\x00"})
    assert response.status_code == 400
    message = "The form field 'template_hash' contains a NUL character, which no field accepts."
    assert response.json() == {
        "detail": message,
        "errors": [{"line": None, "field": "template_hash", "message": message}],
    }
