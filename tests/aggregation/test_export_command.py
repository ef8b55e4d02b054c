"""``manage.py export_dataset``: build a new version, or copy a stored one with checksums."""

import hashlib
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from aggregation.models import DatasetVersion
from aggregation.services.versions import version_build


def run(*args):
    out, err = StringIO(), StringIO()
    call_command("export_dataset", *args, stdout=out, stderr=err)
    return out.getvalue()


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_builds_a_new_version_and_writes_its_files(project, lead, data, tmp_path):
    out = run("test-project", "--votes", "--by", "lead", "--out", str(tmp_path / "out"))
    version = DatasetVersion.objects.get(project=project)
    assert version.number == 1 and version.include_votes and version.created_by == lead
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == [
        "manifest.json",
        "test-project-v1.jsonl",
        "test-project-v1.parquet",
        "test-project-v1.zip",
    ]
    for record in version.files.all():
        path = tmp_path / "out" / record.file.name.rsplit("/", 1)[-1]
        assert digest(path) == record.sha256 and path.stat().st_size == record.size
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest == version.manifest
    assert "4 rows written" in out
    rows = (tmp_path / "out" / "test-project-v1.jsonl").read_text().splitlines()
    assert len(rows) == 4 and "votes" in json.loads(rows[0])


def test_copies_an_existing_version_with_the_same_bytes(project, lead, data, tmp_path):
    version = version_build(project=project, by=lead)
    version_build(project=project, by=lead)
    run("test-project", "--version", "1", "--out", str(tmp_path))
    assert DatasetVersion.objects.count() == 2  # nothing new was built
    for record in version.files.all():
        path = tmp_path / record.file.name.rsplit("/", 1)[-1]
        assert digest(path) == record.sha256


def test_same_labels_give_the_same_data_files(project, lead, data, tmp_path):
    run("test-project", "--out", str(tmp_path / "a"))
    run("test-project", "--out", str(tmp_path / "b"))
    for suffix in ("jsonl", "parquet", "zip"):
        a = tmp_path / "a" / f"test-project-v1.{suffix}"
        b = tmp_path / "b" / f"test-project-v2.{suffix}"
        assert a.read_bytes() == b.read_bytes()


def test_a_tampered_stored_file_is_refused(project, lead, data, tmp_path):
    version = version_build(project=project, by=lead)
    record = version.files.get(kind="jsonl")
    path = record.file.path
    with open(path, "ab") as fh:
        fh.write(b"{}\n")
    with pytest.raises(CommandError, match="checksum mismatch"):
        run("test-project", "--version", "1", "--out", str(tmp_path))
    assert not (tmp_path / "test-project-v1.jsonl").exists()


def test_errors(project, lead, data, tmp_path):
    with pytest.raises(CommandError, match="no project"):
        run("nope", "--out", str(tmp_path))
    with pytest.raises(CommandError, match="no ready version 3"):
        run("test-project", "--version", "3", "--out", str(tmp_path))
    with pytest.raises(CommandError, match="only apply when building"):
        run("test-project", "--version", "1", "--votes", "--out", str(tmp_path))
    with pytest.raises(CommandError, match="no user"):
        run("test-project", "--by", "ghost", "--out", str(tmp_path))
