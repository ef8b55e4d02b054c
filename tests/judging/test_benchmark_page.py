"""The lead's page importing the published benchmark: permissions, a job, errors, a real worker."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from aggregation.models import DatasetRow, DatasetVersion
from annotation.models import Slot
from annotation.services.projects import project_create
from core.models import Job
from tests.celery_worker import wait_for
from tests.published_data import published_rows, write_parquet


def shard_uploads(tmp_path, rows):
    out = []
    for split in ("open_ended", "reasoning"):
        path = write_parquet(
            [r for r in rows if r["split"] == split], tmp_path / f"{split}.parquet"
        )
        out.append(SimpleUploadedFile(path.name, path.read_bytes()))
    return out


@pytest.mark.django_db
def test_only_the_lead_may_use_the_page(client, project, annotator):
    url = reverse("benchmark-import", args=[project.slug])
    response = client.get(url)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    assert client.post(url, {}).status_code == 403
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_upload_builds_the_version_and_links_its_leaderboard(
    client, lead, project, tmp_path, django_capture_on_commit_callbacks
):
    rows = published_rows(3, 3, seed=21)
    client.force_login(lead)
    url = reverse("benchmark-import", args=[project.slug])
    page = client.get(url).content.decode()
    assert "Import the published benchmark" in page and "multiple" in page
    versions_page = client.get(reverse("versions", args=[project.slug])).content.decode()
    assert f'href="{url}"' in versions_page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"files": shard_uploads(tmp_path, rows)})
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    assert response.status_code == 302 and response.url == f"{url}?job={job.pk}"
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.result["version"] == 1 and job.result["version_created"] is True
    version = DatasetVersion.objects.get(project=project)
    assert version.manifest["labels"]["source_files"] == ["open_ended.parquet", "reasoning.parquet"]
    assert DatasetRow.objects.filter(version=version).count() == len(rows)
    assert not Slot.objects.exists()
    html = client.get(response.url).content.decode()
    assert "Version 1 (created)" in html
    assert f'href="{reverse("leaderboard", args=[project.slug, 1])}"' in html

    # A second upload of the same files: the job succeeds and finds the same version.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"files": shard_uploads(tmp_path, rows)})
    second = Job.objects.filter(kind=Job.Kind.IMPORT).order_by("-pk").first()
    assert second.result["version_created"] is False
    assert DatasetVersion.objects.count() == 1


@pytest.mark.django_db
def test_a_bad_file_lists_its_problems_and_stores_nothing(
    client, lead, project, tmp_path, django_capture_on_commit_callbacks
):
    rows = published_rows(2, 0, seed=22)
    rows[1] = {**rows[1], "criterion": "speed"}
    path = write_parquet(rows, tmp_path / "bad.parquet")
    client.force_login(lead)
    url = reverse("benchmark-import", args=[project.slug])
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"files": [SimpleUploadedFile("bad.parquet", path.read_bytes())]})
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED
    assert job.result["errors"] == [
        {
            "line": 2,
            "unit": "row",
            "field": "criterion",
            "message": "unknown criterion 'speed' for split open_ended",
        }
    ]
    html = client.get(f"{url}?job={job.pk}").content.decode()
    assert "unknown criterion &#x27;speed&#x27; for split open_ended" in html
    assert not DatasetVersion.objects.exists()
    response = client.post(url, {"files": [SimpleUploadedFile("notes.txt", b"x")]})
    assert "upload .parquet, .jsonl or .zip files" in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_benchmark_job_runs_on_a_real_worker(client, lead, tmp_path, celery_worker):
    project = project_create(name="Bench", slug="bench-worker")
    rows = published_rows(4, 4, seed=23)
    client.force_login(lead)
    client.post(
        reverse("benchmark-import", args=[project.slug]), {"files": shard_uploads(tmp_path, rows)}
    )
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=90)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    version = DatasetVersion.objects.get(project=project)
    assert version.status == DatasetVersion.Status.READY and version.row_count == len(rows)
