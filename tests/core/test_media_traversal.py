"""Media paths: a traversal corpus for every role, unguessable upload names, proxy hand-off."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import Http404
from django.test import Client, RequestFactory

from annotation.importing.uploads import import_upload_enqueue
from annotation.models import Project
from annotation.services.projects import member_add, project_create
from config.urls import media
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP, media_file
from tests.conftest import make_user

SECRET = b"SECRET-BYTES-of-project-Q-do-not-leak"
OUTSIDE = b"OUTSIDE-MEDIA-ROOT-secret"
IMAGE = b"\x89PNG image bytes of P"
TOKEN = "0123456789abcdef0123456789abcdef"
ROLES = ("anonymous", "annotator_p", "annotator_q", "no_role", "lead")


@dataclass
class World:
    """Two projects, their members, a secret upload of Q, a P image and planted symlinks."""

    p: Project
    q: Project
    users: dict[str, User | None]
    secret: str  # media-relative path of Q's upload
    image: str  # media-relative path of P's web image


def _write(relative: str, content: bytes) -> Path:
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


@pytest.fixture
def world(db, tmp_path) -> World:
    p = project_create(name="P", slug="proj-p")
    q = project_create(name="Q", slug="proj-q")
    ann_p = make_user("ann-p", ANNOTATOR_GROUP)
    ann_q = make_user("ann-q", ANNOTATOR_GROUP)
    member_add(project=p, user=ann_p)
    member_add(project=q, user=ann_q)
    users = {
        "anonymous": None,
        "annotator_p": ann_p,
        "annotator_q": ann_q,
        "no_role": make_user("no-role"),
        "lead": make_user("the-lead", LEAD_GROUP),
    }
    secret = f"imports/{q.slug}/{TOKEN}/secret.jsonl"
    secret_file = _write(secret, SECRET)
    _write(f"versions/{q.pk}/v1-abc/rows.jsonl", SECRET)
    image = f"samples/{p.pk}/web/ok.png"
    _write(image, IMAGE)
    outside = tmp_path / "outside" / "secret.txt"
    outside.parent.mkdir()
    outside.write_bytes(OUTSIDE)
    web = Path(settings.MEDIA_ROOT) / "samples" / str(p.pk) / "web"
    os.symlink(outside, web / "link.png")  # planted link to a file outside MEDIA_ROOT
    os.symlink(secret_file, web / "inner.png")  # planted link to another project's file
    os.symlink(outside.parent, web / "outdir")  # planted link to a folder outside
    return World(p=p, q=q, users=users, secret=secret, image=image)


def corpus(w: World) -> list[str]:
    """Request paths after ``/media/`` as a client would send them (percent-encoded)."""
    pid, target = w.p.pk, w.secret
    return [
        f"samples/{pid}/../../{target}",
        f"samples/{pid}/web/../../../{target}",
        f"samples/{pid}/%2e%2e/%2e%2e/{target}",
        f"samples/{pid}/%2E%2E/%2E%2E/{target}",
        f"samples/{pid}/.%2e/.%2e/{target}",
        f"samples/{pid}/%252e%252e/%252e%252e/{target}",
        f"samples/{pid}/web/..%252f..%252f..%252f{target}",
        f"samples/{pid}/..%2f..%2f{target}",
        f"samples/{pid}/..%2F..%2F{target}",
        f"samples/{pid}/%2e%2e%2f%2e%2e%2f{target}",
        f"samples/{pid}/..%5c..%5c{target}",
        f"samples/{pid}/%2e%2e%5c%2e%2e%5c{target}",
        f"samples/{pid}\\..\\..\\{target}",
        f"samples/{pid}/web/..\\..\\..\\{target}",
        f"samples/{pid}/%00/../../{target}",
        f"samples/{pid}/..%00/..%00/{target}",
        f"samples/{pid}/web/ok.png%00.jsonl",
        f"samples/{pid}/%c0%ae%c0%ae/%c0%ae%c0%ae/{target}",
        f"samples/{pid}/%c0%ae%c0%ae%c0%af%c0%ae%c0%ae%c0%af{target}",
        f"samples/{pid}/%e0%80%ae%e0%80%ae/%e0%80%ae%e0%80%ae/{target}",
        f"samples/{pid}/%u002e%u002e/%u002e%u002e/{target}",
        f"samples/{pid}/%e2%80%a4%e2%80%a4/%e2%80%a4%e2%80%a4/{target}",  # one dot leader
        f"samples/{pid}/%ef%bc%8e%ef%bc%8e/%ef%bc%8e%ef%bc%8e/{target}",  # fullwidth stop
        f"samples/{pid}/.../{target}",
        f"samples/{pid}/..;/..;/{target}",
        "/etc/passwd",
        "%2fetc%2fpasswd",
        "../../../../etc/passwd",
        "%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "samples/%2e%2e/%2e%2e/etc/passwd",
        f"/{target}",
        f"//{target}",
        f"samples//{pid}/web/ok.png",
        f"samples/{pid}//web/ok.png",
        f"samples/{pid}/./web/ok.png",
        f"./samples/{pid}/web/ok.png",
        f"samples/{pid}/web/./ok.png",
        f"samples/{pid}/original/../web/ok.png",
        f"samples/{pid}/web/ok.png/",
        f"samples/{pid}/web/ok.png.",
        f"samples/{pid}/web/ok.png%20",
        f"samples/{pid}/web/ok.png::$DATA",
        f"samples/{pid}/web/link.png",
        f"samples/{pid}/web/inner.png",
        f"samples/{pid}/web/outdir/secret.txt",
        f"samples/0{pid}/web/ok.png",
        f"imports/{w.q.slug}/{TOKEN}/../{TOKEN}/secret.jsonl",
        f"imports/{w.q.slug}/./{TOKEN}/secret.jsonl",
        f"samples/{pid}/web/.hidden",
        "~root/.ssh/id_rsa",
    ]


def _client(w: World, role: str) -> Client:
    client = Client()
    if w.users[role] is not None:
        client.force_login(w.users[role])
    return client


def _body(response) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


def _assert_refused(response, role: str, label: str, path_info: str = "") -> None:
    """Refused: 400 for a NUL (the request guard, before any view), else 302 or 404."""
    body = _body(response)
    assert SECRET not in body and OUTSIDE not in body, label
    if "\x00" in path_info:
        assert response.status_code == 400, label
    elif role == "anonymous":
        assert response.status_code == 302, label
        assert response["Location"].startswith("/accounts/login/"), label
    else:
        assert response.status_code == 404, label


def test_corpus_is_large(world):
    assert len(corpus(world)) >= 40


@pytest.mark.parametrize("role", ROLES)
def test_traversal_corpus_through_the_client(world, role):
    from urllib.parse import unquote

    client = _client(world, role)
    for suffix in corpus(world):
        url = f"/media/{suffix}"
        _assert_refused(client.get(url), role, suffix, unquote(url))


@pytest.mark.parametrize("role", ROLES)
def test_traversal_corpus_raw_path_info(world, role):
    """PATH_INFO exactly as given (undecoded), and as a server that decodes once gives it."""
    from urllib.parse import unquote_to_bytes

    client = _client(world, role)
    for suffix in corpus(world):
        raw = f"/media/{suffix}"
        _assert_refused(client.get("/", PATH_INFO=raw), role, f"raw {raw}", raw)
        decoded = unquote_to_bytes(raw).decode("iso-8859-1")
        _assert_refused(client.get("/", PATH_INFO=decoded), role, f"decoded {raw}", decoded)


ODD_PATHS = [
    "samples/{pid}/web/ok.png\x00",
    "samples/{pid}/web\\ok.png",
    "samples/{pid}/web/ok.png\n",
    "samples/{pid}/web/ok.png ",
    "samples/{pid}/web/ok.png\u2024",
    "samples/{pid}/\u2024\u2024/\u2024\u2024/{target}",
    "samples/{pid}/\uff0e\uff0e/\uff0e\uff0e/{target}",
    "samples/{pid}/\u0130/ok.png",
    "samples/{pid}/web/\u006f\u030ak.png",
    "samples/{pid}/../../{target}",
    "/{target}",
    "{target_abs}",
    "",
    "samples/{pid}/web/" + "a" * 2000 + ".png",
]


@pytest.mark.parametrize("role", ROLES)
def test_odd_paths_straight_to_the_view(world, role):
    """Strings no client sends, given to the view as the captured path."""
    factory = RequestFactory()
    target_abs = str(Path(settings.MEDIA_ROOT) / world.secret)
    for template in ODD_PATHS:
        path = template.format(pid=world.p.pk, target=world.secret, target_abs=target_abs)
        request = factory.get("/media/x")
        request.user = world.users[role] or AnonymousUser()
        request.session = {}
        if role == "anonymous":
            _assert_refused(media(request, path=path), role, repr(path))
            continue
        with pytest.raises(Http404):
            media(request, path=path)
        assert media_file(world.users[role], path) is None, repr(path)


EXPECTED_PLAIN = {
    # role: (P's image, Q's upload, Q's version file)
    "anonymous": (302, 302, 302),
    "annotator_p": (200, 404, 404),
    "annotator_q": (404, 404, 404),
    "no_role": (404, 404, 404),
    "lead": (200, 200, 200),
}


@pytest.mark.parametrize("role", ROLES)
def test_plain_paths_per_role(world, role):
    client = _client(world, role)
    paths = (world.image, world.secret, f"versions/{world.q.pk}/v1-abc/rows.jsonl")
    statuses = tuple(client.get(f"/media/{p}").status_code for p in paths)
    assert statuses == EXPECTED_PLAIN[role]


def test_unknown_prefixes_and_projects_are_refused_even_to_leads(world):
    client = _client(world, "lead")
    for relative in (
        "other/x.png",
        "samples/999999/web/ok.png",
        "versions/999999/v1-abc/rows.jsonl",
        f"imports/no-such-project/{TOKEN}/secret.jsonl",
        "judging/uploads/v999999/x.jsonl",
        f"samples/{world.p.pk}/elsewhere/ok.png",
    ):
        _write(relative, SECRET)
        response = client.get(f"/media/{relative}")
        assert response.status_code == 404, relative
        assert SECRET not in _body(response)


@pytest.mark.parametrize(
    ("name", "content_type", "disposition"),
    [
        ("ok.png", "image/png", "inline"),
        ("ok.jpg", "image/jpeg", "inline"),
        ("ok.webp", "image/webp", "inline"),
        ("ok.gif", "image/gif", "inline"),
        ("evil.svg", "image/svg+xml", "attachment"),
        ("evil.html", "text/html", "attachment"),
        ("rows.jsonl", None, "attachment"),
    ],
)
def test_types_and_disposition(world, name, content_type, disposition):
    relative = f"samples/{world.p.pk}/web/{name}"
    _write(relative, b"<svg onload=alert(1)>")
    response = _client(world, "annotator_p").get(f"/media/{relative}")
    assert response.status_code == 200
    if content_type:
        assert response["Content-Type"] == content_type
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == f'{disposition}; filename="{name}"'


def test_ranges_and_head(world):
    client = _client(world, "annotator_p")
    url = f"/media/{world.image}"
    response = client.get(url, headers={"Range": "bytes=0-3"})
    assert response.status_code == 206
    assert _body(response) == IMAGE[:4]
    assert response["Content-Range"] == f"bytes 0-3/{len(IMAGE)}"
    assert client.get(url, headers={"Range": "bytes=999-"}).status_code == 416
    head = client.head(url)
    assert head.status_code == 200 and head["Content-Length"] == str(len(IMAGE))
    assert client.post(url).status_code == 405


def test_x_accel_mode(world, settings):
    settings.MEDIA_SERVE = "x-accel"
    settings.MEDIA_ACCEL_PREFIX = "/internal-media/"
    response = _client(world, "lead").get(f"/media/{world.secret}")
    assert response.status_code == 200
    assert response["X-Accel-Redirect"] == f"/internal-media/{world.secret}"
    assert response.content == b""
    assert response["Content-Disposition"] == 'attachment; filename="secret.jsonl"'
    assert response["X-Content-Type-Options"] == "nosniff"
    image = _client(world, "annotator_p").get(f"/media/{world.image}")
    assert image["X-Accel-Redirect"] == f"/internal-media/{world.image}"
    assert image["Content-Type"] == "image/png"
    assert image["Content-Disposition"] == 'inline; filename="ok.png"'
    refused = _client(world, "annotator_p").get(f"/media/{world.secret}")
    assert refused.status_code == 404 and not refused.has_header("X-Accel-Redirect")


def test_x_sendfile_mode(world, settings):
    settings.MEDIA_SERVE = "x-sendfile"
    response = _client(world, "lead").get(f"/media/{world.secret}")
    assert response.status_code == 200
    assert response["X-Sendfile"] == str((Path(settings.MEDIA_ROOT) / world.secret).resolve())
    assert response.content == b""
    assert response["X-Content-Type-Options"] == "nosniff"
    refused = _client(world, "no_role").get(f"/media/{world.secret}")
    assert refused.status_code == 404 and not refused.has_header("X-Sendfile")


def test_upload_names_are_unguessable(world, lead):
    """Two uploads of the same name in the same second get different, random, non-time paths."""
    jobs = [
        import_upload_enqueue(
            project=world.p,
            file=SimpleUploadedFile("Ünïcode rows (1).jsonl", b"{}\n"),
            by=lead,
        )
        for _ in range(2)
    ]
    paths = [job.params["path"] for job in jobs]
    assert paths[0] != paths[1]
    for job, path in zip(jobs, paths, strict=True):
        assert job.params["filename"] == "Ünïcode rows (1).jsonl"
        # A random folder and the cleaned name: no time stamp (the old ``YYYYmmdd-HHMMSS-``).
        assert re.fullmatch(rf"imports/{world.p.slug}/[0-9a-f]{{32}}/Unicode_rows_1_\.jsonl", path)
        assert not re.search(r"\d{8}-\d{6}", path)
    tokens = {re.fullmatch(r"imports/[^/]+/([0-9a-f]{32})/.*", p)[1] for p in paths}
    assert len(tokens) == 2


def test_benchmark_upload_names_are_unguessable(world, lead):
    from aggregation.services.benchmark import benchmark_upload_enqueue

    job = benchmark_upload_enqueue(
        project=world.p,
        files=[SimpleUploadedFile("rows.parquet", b"x"), SimpleUploadedFile("rows.parquet", b"y")],
        by=lead,
    )
    paths = job.params.get("paths") or []
    # The import itself fails on these bytes and may clean up; the names are what matters here.
    assert job.params["filenames"] == ["rows.parquet", "rows.parquet"]
    assert len(set(paths)) == 2
    for path in paths:
        assert re.fullmatch(rf"imports/{world.p.slug}/[0-9a-f]{{32}}/rows\.parquet", path), path


def test_safe_names():
    from core.media import upload_safe_name

    assert upload_safe_name("../../etc/passwd") == "passwd"
    assert upload_safe_name("..\\..\\x.jsonl") == "x.jsonl"
    assert upload_safe_name("Ünïcode rows (1).jsonl") == "Unicode_rows_1_.jsonl"
    assert upload_safe_name(".htaccess") == "htaccess"
    assert upload_safe_name("...", "upload.jsonl") == "upload.jsonl"
    long = upload_safe_name("a" * 300 + ".parquet")
    assert len(long) == 100 and long.endswith(".parquet")
