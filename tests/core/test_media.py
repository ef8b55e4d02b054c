"""Study data under MEDIA_ROOT: sample images for the project's members, the rest for leads."""

import pytest
from django.conf import settings

from annotation.services.projects import member_add


def write(relative: str, content: bytes = b"bytes") -> str:
    path = settings.MEDIA_ROOT / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return f"/media/{relative}"


@pytest.fixture
def sample_image(project):
    return write(f"samples/{project.pk}/web/x.png", b"image bytes")


def test_media_requires_login(client, sample_image):
    response = client.get(sample_image)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_sample_images_go_to_members_only(client, project, annotator, outsider, sample_image):
    client.force_login(outsider)
    assert client.get(sample_image).status_code == 404
    member_add(project=project, user=annotator)
    client.force_login(annotator)
    response = client.get(sample_image)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"image bytes"


def test_exports_and_uploads_go_to_leads_only(client, project, annotator, lead):
    member_add(project=project, user=annotator)
    export = write(f"versions/{project.pk}/v1-key/rows.jsonl", b"rows")
    upload = write(f"imports/{project.slug}/0123456789abcdef/upload.jsonl", b"upload")
    client.force_login(annotator)
    assert client.get(export).status_code == 404
    assert client.get(upload).status_code == 404
    client.force_login(lead)
    assert b"".join(client.get(export).streaming_content) == b"rows"
    response = client.get(upload)
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="upload.jsonl"'


def test_media_rejects_path_traversal(client, lead, sample_image):
    client.force_login(lead)
    assert client.get("/media/../config/settings.py").status_code == 404
    assert client.get("/media/samples/../../x").status_code == 404
