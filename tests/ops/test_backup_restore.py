"""Backup and restore for real: a project with votes, labels and two dataset versions is backed up,
restored into a fresh database and media folder, and every file, row count and page is the same.

PostgreSQL: the test's own database is dumped in-process; the restore runs as a separate
``manage.py`` process pointed at a new database and media folder (the test's connection stays on
the test database), and the pages are read by a third process through Django's test client.
SQLite (the embedded default, both lanes): the whole site is built, backed up and restored by
``manage.py`` processes, each with its own VAR_DIR.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from psycopg import sql

from aggregation.models import DatasetFile, DatasetVersion
from aggregation.services.aggregate import project_aggregate
from aggregation.services.versions import version_build
from annotation.models import Sample
from demo.build import LEAD, PASSWORD, demo_build

ROOT = Path(__file__).resolve().parent.parent.parent
IS_POSTGRES = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
postgres_only = pytest.mark.skipif(
    not IS_POSTGRES, reason="PostgreSQL only: pg_dump, pg_restore and a second database"
)
# What the settings read, removed from the inherited environment of every child process.
SETTINGS_VARIABLES = {
    "DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL", "REDIS_URL",
    "MEDIA_ROOT", "VAR_DIR", "DEBUG", "SECRET_KEY", "DJANGO_SETTINGS_MODULE",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
}  # fmt: skip
COUNTED_APPS = ("auth", "core", "annotation", "aggregation", "judging", "curation")

# Run in a child process against the restored site: log in with the password (from the
# environment) through the login form, then GET each path; prints status and SHA-256 per path.
PAGES_SCRIPT = """
import hashlib, json, os, sys
import django
django.setup()
from django.test import Client
client = Client()
login = client.post(
    "/accounts/login/",
    {"username": sys.argv[1], "password": os.environ["PAGES_PASSWORD"]},
)
out = {"login": [login.status_code, login.headers.get("Location", "")]}
for path in json.loads(sys.argv[2]):
    response = client.get(path)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    out[path] = [response.status_code, hashlib.sha256(body).hexdigest()]
print(json.dumps(out))
"""


# --- Helpers ----------------------------------------------------------------------------------


def child_env(*, var_dir: Path, database_url: str = "", media_root: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    env.update({"VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "config.settings"})
    if database_url:
        env["DATABASE_URL"] = database_url
    if media_root is not None:
        env["MEDIA_ROOT"] = str(media_root)
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def manage(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = run(["manage.py", *args], env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def pages(env: dict[str, str], username: str, password: str, paths: list[str]) -> dict:
    result = run(
        ["-c", PAGES_SCRIPT, username, json.dumps(paths)], {**env, "PAGES_PASSWORD": password}
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def media_digests(root: Path) -> dict[str, str]:
    """Every file under a media folder, by relative path, with its SHA-256."""
    return {
        p.relative_to(root).as_posix(): sha256(p) for p in sorted(root.rglob("*")) if p.is_file()
    }


def tamper(directory: Path, name: str) -> None:
    """Change one byte in the middle of a backup's file."""
    path = directory / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


# --- PostgreSQL -------------------------------------------------------------------------------


def _server() -> dict[str, str]:
    """The test database's server, as libpq keywords."""
    db = connection.settings_dict
    params = {"host": db.get("HOST"), "port": db.get("PORT"), "user": db.get("USER")}
    if db.get("PASSWORD"):
        params["password"] = db["PASSWORD"]
    return {k: str(v) for k, v in params.items() if v}


def _url(name: str) -> str:
    server = _server()
    secret = f":{quote(server['password'], safe='')}" if "password" in server else ""
    return (
        f"postgres://{quote(server.get('user', ''), safe='')}{secret}@"
        f"{server.get('host', '127.0.0.1')}:{server.get('port', '5432')}/{name}"
    )


def _admin(sql_statement: sql.Composable) -> None:
    with psycopg.connect(dbname="postgres", autocommit=True, **_server()) as admin:
        admin.execute(sql_statement)


@pytest.fixture
def fresh_database() -> Iterator[str]:
    """A new, empty database on the test server (its name); dropped at the end."""
    name = f"restore_{uuid.uuid4().hex[:12]}"
    _admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        _admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def tables_of(name: str) -> list[str]:
    with psycopg.connect(dbname=name, **_server()) as db:
        rows = db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    return sorted(r[0] for r in rows)


def counts_of(name: str, labels: list[str]) -> dict[str, int]:
    """Rows per model table in the database ``name``, by model label."""
    counts = {}
    with psycopg.connect(dbname=name, **_server()) as db:
        for label in labels:
            table = apps.get_model(label)._meta.db_table
            query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
            counts[label] = db.execute(query).fetchone()[0]
    return counts


def counts_here() -> dict[str, int]:
    return {
        model._meta.label: model._base_manager.count()
        for label in COUNTED_APPS
        for model in apps.get_app_config(label).get_models()
        if model._meta.managed and not model._meta.proxy
    }


def recording_pg_dump(folder: Path) -> Path:
    """A ``pg_dump`` first on PATH that writes down its arguments and PGPASSWORD, then runs the
    real one."""
    real = shutil.which("pg_dump")
    assert real, "pg_dump is needed for the PostgreSQL backup"
    folder.mkdir()
    script = folder / "pg_dump"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > "{folder}/argv"\n'
        f'printf "%s" "$PGPASSWORD" > "{folder}/password"\n'
        f'exec "{real}" "$@"\n'
    )
    script.chmod(0o755)
    return folder


def build_project(settings) -> tuple[list[DatasetVersion], Sample]:
    """The demo project (samples with images, 9 annotators' votes), aggregated, two versions."""
    result = demo_build()
    project = result.project
    project_aggregate(project=project)
    lead = User.objects.get(username=LEAD)
    versions = [
        version_build(project=project, by=lead),
        version_build(project=project, by=lead, include_votes=True, include_contested=True),
    ]
    # The restored site runs with Django's default hashers: the lead's password hashed by one.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    lead.set_password(PASSWORD)
    lead.save()
    sample = Sample.objects.filter(project=project).exclude(image="").order_by("pk").first()
    return versions, sample


@postgres_only
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_postgresql_backup_restores_into_a_fresh_database_and_media_folder(
    tmp_path, settings, fresh_database, monkeypatch
):
    versions, sample = build_project(settings)
    media_root = Path(settings.MEDIA_ROOT)
    records = list(DatasetFile.objects.order_by("version__number", "kind"))
    originals = {r.file.name: sha256(media_root / r.file.name) for r in records}
    assert {r.file.name: r.sha256 for r in records} == originals
    assert [(v.number, v.files.count()) for v in versions] == [(1, 4), (2, 5)]
    counts = counts_here()
    assert counts["annotation.Vote"] > 1000 and counts["aggregation.CriterionLabel"] > 100
    assert counts["aggregation.DatasetVersion"] == 2 and counts["aggregation.DatasetRow"] > 100

    backup = tmp_path / "backup"
    out = io.StringIO()
    # The server trusts local connections, so any password works: the one set here must reach
    # pg_dump in its environment only, never in its arguments or the output.
    password = f"pw-{uuid.uuid4().hex}"
    recorder = recording_pg_dump(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{recorder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setitem(connection.settings_dict, "PASSWORD", password)
    call_command("backup_create", out=str(backup), stdout=out)
    monkeypatch.undo()
    assert (recorder / "password").read_text() == password
    argv = (recorder / "argv").read_text().splitlines()
    assert argv[0] == "--format=custom" and "--snapshot" in argv and password not in argv
    assert "Backup written to" in out.getvalue() and password not in out.getvalue()
    assert sorted(p.name for p in backup.iterdir()) == [
        "database.dump",
        "manifest.json",
        "media.tar",
    ]
    manifest = json.loads((backup / "manifest.json").read_text())
    assert manifest["database"]["strategy"] == "postgresql"
    assert manifest["database"]["file"]["sha256"] == sha256(backup / "database.dump")
    assert manifest["media"]["file"]["sha256"] == sha256(backup / "media.tar")
    assert manifest["media"]["files"] == len(media_digests(media_root))
    assert manifest["row_counts"] == counts
    assert "0001_initial" in manifest["migrations"]["aggregation"]
    listed = manifest["file_sets"]["dataset_versions"]
    assert [(s["key"], s["status"]) for s in listed] == [("demo v1", "ready"), ("demo v2", "ready")]
    assert {f["name"]: f["sha256"] for s in listed for f in s["files"]} == originals
    assert password not in (backup / "manifest.json").read_text()

    restored_media = tmp_path / "restored" / "media"
    env = child_env(
        var_dir=tmp_path / "restored" / "var",
        database_url=_url(fresh_database),
        media_root=restored_media,
    )
    # A backup with one byte changed in its media archive is refused before anything is written.
    tampered = tmp_path / "tampered"
    shutil.copytree(backup, tampered)
    tamper(tampered, "media.tar")
    refused = run(["manage.py", "backup_restore", "--from", str(tampered)], env)
    assert refused.returncode == 1
    assert "media.tar: SHA-256" in refused.stderr and "nothing was restored" in refused.stderr
    assert tables_of(fresh_database) == [] and not restored_media.exists()

    restored = manage(["backup_restore", "--from", str(backup)], env)
    lines = restored.stdout.splitlines()
    assert f"Row counts: as in the backup ({len(counts)} tables)." in lines
    assert [line.split(":")[0] for line in lines if line.startswith(("OK", "MISMATCH"))] == [
        "OK        demo v1 (ready)",
        "OK        demo v2 (ready)",
    ]
    assert "Verified: 2 dataset versions OK." in lines
    assert {name: sha256(restored_media / name) for name in originals} == originals
    assert media_digests(restored_media) == media_digests(media_root)
    assert counts_of(fresh_database, list(counts)) == counts

    # A second restore into the now full database is refused.
    again = run(["manage.py", "backup_restore", "--from", str(backup)], env)
    assert again.returncode == 1 and "database is not empty" in again.stderr

    base = f"/projects/{versions[0].project.slug}"
    downloads = [
        f"{base}/versions/2/files/{r.kind}" for r in records if r.version_id == versions[1].pk
    ]
    seen = pages(
        env,
        LEAD,
        PASSWORD,
        ["/", f"{base}/dashboard/", f"{base}/versions/", f"{base}/versions/1/",
         f"{base}/versions/2/", f"{base}/samples/", sample.image.url, *downloads],
    )  # fmt: skip
    assert seen.pop("login") == [302, "/"]
    assert {path: status for path, (status, _) in seen.items()} == dict.fromkeys(seen, 200)
    assert seen[sample.image.url][1] == sha256(media_root / sample.image.name)
    assert {path: seen[path][1] for path in downloads} == {
        f"{base}/versions/2/files/{r.kind}": r.sha256
        for r in records
        if r.version_id == versions[1].pk
    }


# --- SQLite, the embedded default -----------------------------------------------------------


@pytest.fixture(scope="module")
def embedded(tmp_path_factory) -> dict[str, Path]:
    """The embedded demo (SQLite) with two dataset versions, and its backup."""
    tmp = tmp_path_factory.mktemp("embedded")
    env = child_env(var_dir=tmp / "site")
    manage(["migrate", "--no-input", "-v", "0"], env)
    manage(["demo_setup"], env)
    manage(["export_dataset", "demo", "--out", str(tmp / "export1")], env)
    manage(["export_dataset", "demo", "--votes", "--out", str(tmp / "export2")], env)
    manage(["backup_create", "--out", str(tmp / "backup")], env)
    return {"tmp": tmp, "site": tmp / "site", "backup": tmp / "backup"}


def sqlite_counts(path: Path) -> dict[str, int]:
    import sqlite3

    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def test_the_sqlite_backup_round_trips_on_the_embedded_default(embedded):
    backup, site = embedded["backup"], embedded["site"]
    manifest = json.loads((backup / "manifest.json").read_text())
    assert manifest["database"]["strategy"] == "sqlite"
    assert manifest["database"]["file"]["name"] == "database.sqlite3"
    listed = manifest["file_sets"]["dataset_versions"]
    assert [(s["key"], len(s["files"])) for s in listed] == [("demo v1", 4), ("demo v2", 4)]

    target = embedded["tmp"] / "restored"
    env = child_env(var_dir=target)
    restored = manage(["backup_restore", "--from", str(backup)], env)
    assert [line[:25] for line in restored.stdout.splitlines() if line[:2] in {"OK", "MI"}] == [
        "OK        demo v1 (ready)",
        "OK        demo v2 (ready)",
    ]
    assert media_digests(target / "media") == media_digests(site / "media")
    counts = sqlite_counts(target / "db.sqlite3")
    assert counts == sqlite_counts(site / "db.sqlite3")
    assert counts["annotation_vote"] > 1000 and counts["aggregation_datasetversion"] == 2

    version_file = sorted((target / "media").rglob("demo-v2.parquet"))[0]
    seen = pages(
        env,
        "lead",
        "multicrit-demo",
        ["/projects/demo/dashboard/", "/projects/demo/versions/2/",
         "/projects/demo/versions/2/files/parquet"],
    )  # fmt: skip
    assert seen.pop("login") == [302, "/"]
    assert [status for status, _ in seen.values()] == [200, 200, 200]
    assert seen["/projects/demo/versions/2/files/parquet"][1] == sha256(version_file)


def test_a_tampered_archive_is_refused_before_anything_is_restored(embedded):
    tampered = embedded["tmp"] / "tampered"
    shutil.copytree(embedded["backup"], tampered)
    tamper(tampered, "media.tar")
    target = embedded["tmp"] / "untouched"
    result = run(
        ["manage.py", "backup_restore", "--from", str(tampered)], child_env(var_dir=target)
    )
    assert result.returncode == 1
    assert "the backup does not match its manifest, nothing was restored" in result.stderr
    assert "media.tar: SHA-256" in result.stderr
    assert not (target / "db.sqlite3").exists() and not (target / "media").exists()


def test_a_version_file_changed_since_its_build_is_reported_as_a_mismatch(embedded):
    """A media folder whose version file went bad is backed up faithfully; the restore's check
    of each version against its stored checksums finds it, and the command fails."""
    damaged = embedded["tmp"] / "damaged"
    shutil.copytree(embedded["backup"], damaged)
    archive = damaged / "media.tar"
    with (
        tarfile.open(embedded["backup"] / "media.tar") as source,
        tarfile.open(archive, "w") as out,
    ):
        for member in source.getmembers():
            data = bytearray(source.extractfile(member).read())
            if member.name.endswith("demo-v2.parquet"):
                data[len(data) // 2] ^= 0xFF
                bad = member.name
            out.addfile(member, io.BytesIO(bytes(data)))
    manifest = json.loads((damaged / "manifest.json").read_text())
    manifest["media"]["file"].update(sha256=sha256(archive), size=archive.stat().st_size)
    (damaged / "manifest.json").write_text(json.dumps(manifest))

    target = embedded["tmp"] / "damaged-site"
    result = run(["manage.py", "backup_restore", "--from", str(damaged)], child_env(var_dir=target))
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line[:2] in {"OK", "MI"}]
    assert lines[0].startswith("OK        demo v1 (ready): 4 files")
    assert lines[1].startswith(f"MISMATCH  demo v2 (ready): 4 files: {bad}: SHA-256 ")
    assert len(lines) == 2
    assert "1 dataset version with a mismatch" in result.stderr
