"""A refused upload is not kept, and the lead reads a message, never a traceback."""

from __future__ import annotations

import json
import zipfile

import pytest
from django.core.files.storage import default_storage
from django.urls import reverse

from annotation.models import Sample
from core.models import Job
from tests.celery_worker import wait_for

from .import_data import png_bytes, sample_line


def damaged_zip(tmp_path, lines) -> str:
    """A zip whose data file fails its CRC check once read."""
    path = tmp_path / "damaged.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("data.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
        archive.writestr("img/red.png", png_bytes())
    data = bytearray(path.read_bytes())
    data[data.index(b"Describe picture")] ^= 0xFF
    path.write_bytes(bytes(data))
    return str(path)


def job_page(client, project, job) -> str:
    return client.get(reverse("import-job", args=[project.slug, job.pk])).content.decode()


@pytest.mark.django_db
def test_a_refused_upload_is_removed_and_its_errors_listed(
    client, project, lead, tmp_path, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    lines = [sample_line("x1", split=["open_ended"]), sample_line("x2", question="a\u0000b")]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("import-upload", args=[project.slug]), {"file": handle})
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    assert job.status == "failed"
    assert [(e["line"], e["field"]) for e in job.result["errors"]] == [(1, "split"), (2, "json")]
    assert not default_storage.exists(job.params["path"])
    assert job.error == "2 errors in bad.jsonl; nothing was imported"
    page = job_page(client, project, job)
    assert "must be text, got list" in page and "contains a NUL character" in page
    assert "Traceback" not in page and ".py" not in page
    assert Sample.objects.count() == 0


@pytest.mark.django_db
def test_an_accepted_upload_is_kept(
    client, project, lead, tmp_path, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    path = tmp_path / "good.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data.jsonl", json.dumps(sample_line("k1")) + "\n")
        archive.writestr("img/red.png", png_bytes())
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("import-upload", args=[project.slug]), {"file": handle})
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    assert job.status == "succeeded" and default_storage.exists(job.params["path"])


@pytest.mark.django_db(transaction=True)
def test_a_damaged_zip_on_a_real_worker_is_a_message_and_is_removed(
    client,
    lead,
    tmp_path,
    celery_worker,
):
    from annotation.services.projects import project_create

    project = project_create(name="Damaged", slug="damaged")
    client.force_login(lead)
    with open(damaged_zip(tmp_path, [sample_line("d1"), sample_line("d2")]), "rb") as handle:
        client.post(reverse("import-upload", args=[project.slug]), {"file": handle})
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=90)
    job.refresh_from_db()
    assert job.status == "failed"
    [error] = job.result["errors"]
    assert (error["line"], error["field"]) == (None, "zip entry")
    assert error["message"].startswith("'data.jsonl' cannot be read: damaged zip (Bad CRC-32")
    assert "Traceback" not in job.error and "/" not in job.error
    assert not default_storage.exists(job.params["path"])
    assert Sample.objects.filter(project=project).count() == 0
