"""Study data under MEDIA_ROOT is served only to logged-in users."""

import pytest
from django.conf import settings


@pytest.fixture
def media_file():
    path = settings.MEDIA_ROOT / "samples" / "x.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"image bytes")
    return path


def test_media_requires_login(client, media_file, annotator):
    response = client.get("/media/samples/x.txt")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    client.force_login(annotator)
    response = client.get("/media/samples/x.txt")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"image bytes"


def test_media_rejects_path_traversal(client, annotator, media_file):
    client.force_login(annotator)
    assert client.get("/media/../config/settings.py").status_code in (400, 404)
    assert client.get("/media/samples/../../x").status_code in (400, 404)
