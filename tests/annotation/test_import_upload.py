"""The lead's upload page: who may use it, and an upload running as a real job."""

from __future__ import annotations

import json
import zipfile

import pytest
from django.urls import reverse

from annotation.models import Sample
from core.models import Job
from tests.celery_worker import wait_for

from .import_data import png_bytes, sample_line


def zip_upload(tmp_path, lines, name="upload.zip"):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
        archive.writestr("img/red.png", png_bytes())
    return path


@pytest.mark.django_db
def test_anonymous_is_sent_to_login_and_annotator_is_refused(client, project, annotator):
    url = reverse("import-upload", args=[project.slug])
    response = client.get(url)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    assert client.post(url, {}).status_code == 403
    assert Job.objects.count() == 0


@pytest.mark.django_db
def test_page_lists_formats_and_recent_imports(client, project, lead):
    client.force_login(lead)
    response = client.get(reverse("import-upload", args=[project.slug]))
    text = response.content.decode()
    assert response.status_code == 200
    assert "Multi-Crit rows" in text and "No imports yet." in text


@pytest.mark.django_db
def test_wrong_file_type_is_a_form_error(client, project, lead, tmp_path):
    client.force_login(lead)
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with open(path, "rb") as handle:
        response = client.post(reverse("import-upload", args=[project.slug]), {"file": handle})
    assert "Upload a .jsonl, .parquet or .zip file." in response.content.decode()
    assert Job.objects.count() == 0


@pytest.mark.django_db
def test_eager_upload_stores_samples_and_shows_the_summary(
    client, project, lead, tmp_path, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    path = zip_upload(tmp_path, [sample_line("u1"), sample_line("u2", is_seed=True)])
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("import-upload", args=[project.slug]), {"file": handle, "filters": ["length"]}
        )
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    assert response.status_code == 302 and response["Location"].endswith(f"?job={job.pk}")
    assert job.status == "succeeded" and job.created_by == lead
    assert job.params["path"].startswith(f"imports/{project.slug}/")
    assert (job.result["created"], job.result["removed_by_filter"]) == (2, {"length": 0})
    assert sorted(Sample.objects.values_list("external_id", flat=True)) == ["u1", "u2"]
    page = client.get(response["Location"]).content.decode()
    assert "upload.zip</strong> is imported: 2 new, 0 updated and 0 unchanged" in page


@pytest.mark.django_db
def test_htmx_upload_of_a_bad_file_lists_every_error(
    client, project, lead, tmp_path, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    path = zip_upload(
        tmp_path, [sample_line("b1", split="chat"), {"id": "b2", "split": "open_ended"}]
    )
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("import-upload", args=[project.slug]), {"file": handle}, HTTP_HX_REQUEST="true"
        )
    assert 'id="upload-panel"' in response.content.decode()
    assert "<html" not in response.content.decode()
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    assert job.status == "failed"
    assert [(e["line"], e["field"]) for e in job.result["errors"]] == [
        (1, "split"),
        (2, "question"),
        (2, "response_a"),
        (2, "response_b"),
        (2, "image"),
    ]
    assert Sample.objects.count() == 0
    status = client.get(reverse("import-job", args=[project.slug, job.pk]), HTTP_HX_REQUEST="true")
    text = status.content.decode()
    assert "upload.zip was refused: 5 errors" in text and "<html" not in text
    assert "unknown split &#x27;chat&#x27;" in text and "hx-trigger" not in text


@pytest.mark.django_db(transaction=True)
def test_upload_runs_on_a_real_worker(client, lead, tmp_path, celery_worker):
    from annotation.services.projects import project_create

    project = project_create(name="Worker project", slug="worker-project")
    client.force_login(lead)
    path = zip_upload(tmp_path, [sample_line(f"w{i}") for i in range(12)])
    with open(path, "rb") as handle:
        client.post(reverse("import-upload", args=[project.slug]), {"file": handle})
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=90)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert (job.done, job.total, job.result["created"]) == (12, 12, 12)
    assert Sample.objects.filter(project=project).count() == 12
