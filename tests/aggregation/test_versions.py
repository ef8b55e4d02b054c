"""Version numbering, immutability after later work, failed builds, the build job."""

import hashlib

import pytest
from django.db import DatabaseError, connection, transaction

from aggregation.models import CriterionLabel, DatasetFile, DatasetRow, DatasetVersion
from aggregation.services.versions import version_build, version_build_start
from annotation.models import Vote
from annotation.services.projects import project_create
from core.models import Job
from tests.aggregation.export_data import (
    criteria,
    label_with_votes,
    sample_with_image,
    small_dataset,
)
from tests.celery_worker import wait_for


def snapshot(version: DatasetVersion) -> dict:
    """Everything a version holds: its record, rows, file records and stored bytes."""
    version.refresh_from_db()
    files = {}
    for record in version.files.order_by("kind"):
        with record.file.open("rb") as fh:
            files[record.kind] = (record.file.name, record.size, record.sha256, fh.read())
    return {
        "record": (version.number, version.status, version.row_count, version.manifest),
        "rows": list(version.rows.order_by("id").values_list("question_id", "preference", "data")),
        "files": files,
    }


def test_versions_are_numbered_per_project(project, lead, data):
    assert [version_build(project=project, by=lead).number for _ in range(3)] == [1, 2, 3]
    other = project_create(name="Other", slug="other")
    assert version_build(project=other, by=lead).number == 1
    assert version_build(project=project, by=lead).number == 4
    version = DatasetVersion.objects.get(project=project, number=4)
    assert version.status == "ready" and version.created_by == lead
    assert sorted(version.files.values_list("kind", flat=True)) == [
        "jsonl",
        "jsonl_zip",
        "manifest",
        "parquet",
    ]


def test_a_version_is_unchanged_by_later_votes_aggregation_and_review(
    project, lead, annotators, data
):
    v1 = version_build(project=project, by=lead, include_votes=True)
    before = snapshot(v1)
    # Later work: a revised vote, a re-aggregated label, a new label, review decisions.
    vote = Vote.objects.filter(sample=data["samples"]["p1"]).first()
    vote.rationale = "I changed my mind after a second look."
    vote.choice = "B"
    vote.save()
    CriterionLabel.objects.filter(pk=data["labels"]["p2_0"].pk).update(preference="A")
    label_with_votes(data["samples"]["p2"], data["oe"][1], annotators[3:6], "AAA")
    s4 = sample_with_image(project, "p4")
    label_with_votes(s4, criteria(project)[0], annotators[:3], "BBB")
    from aggregation.models import ReviewDecision

    ReviewDecision.objects.create(
        sample=data["samples"]["r1"], action="discard", reason="redundant", author=lead
    )
    v2 = version_build(project=project, by=lead, include_votes=True)
    assert snapshot(v1) == before
    assert v2.row_count == 5 and v2.manifest["data_sha256"] != v1.manifest["data_sha256"]
    assert "r1" not in set(v2.rows.values_list("prompt_id", flat=True))
    assert "r1" in set(v1.rows.values_list("prompt_id", flat=True))


@pytest.mark.skipif(connection.vendor != "postgresql", reason="triggers are PostgreSQL only")
def test_the_database_refuses_changes_to_a_ready_version(project, lead, data):
    version = version_build(project=project, by=lead)
    attempts = [
        lambda: DatasetVersion.objects.filter(pk=version.pk).update(manifest={}),
        lambda: DatasetVersion.objects.filter(pk=version.pk).update(row_count=1),
        lambda: DatasetVersion.objects.filter(pk=version.pk).update(status="failed"),
        lambda: DatasetRow.objects.filter(version=version).update(preference="model_a"),
        lambda: DatasetRow.objects.filter(version=version).delete(),
        lambda: DatasetRow.objects.create(
            version=version,
            question_id="x",
            prompt_id="x",
            split="open_ended",
            criterion="c",
            preference="model_a",
            data={},
        ),
        lambda: DatasetFile.objects.filter(version=version).update(sha256="0" * 64),
        lambda: DatasetFile.objects.filter(version=version).delete(),
    ]
    for attempt in attempts:
        with pytest.raises(DatabaseError, match=r"ready|built"), transaction.atomic():
            attempt()
    # The note stays editable.
    DatasetVersion.objects.filter(pk=version.pk).update(note="Used for the paper.")
    assert version.rows.count() == 4 and version.files.count() == 4


def test_a_failed_build_leaves_nothing_visible(project, lead, data, settings, client):
    # Lose an image from storage: reading it fails half-way through the build.
    image = data["samples"]["p2"].image
    image.storage.delete(image.name)
    with pytest.raises(FileNotFoundError):
        version_build(project=project, by=lead)
    version = DatasetVersion.objects.get(project=project)
    assert version.status == "failed" and version.number == 1
    assert "Build failed" in version.note
    assert not DatasetRow.objects.filter(version=version).exists()
    assert not DatasetFile.objects.filter(version=version).exists()
    stored = settings.MEDIA_ROOT / "versions"
    assert not stored.exists() or not any(p.is_file() for p in stored.rglob("*"))
    client.force_login(lead)
    assert client.get(f"/api/projects/{project.slug}/versions/").json() == []
    assert client.get(f"/api/projects/{project.slug}/versions/1/").status_code == 404
    # The next build takes the next number and succeeds once the image is back.
    image.storage.save(image.name, data["samples"]["p1"].image.open("rb"))
    assert version_build(project=project, by=lead).number == 2


def test_a_failed_build_is_a_failed_job(project, lead, data, django_capture_on_commit_callbacks):
    image = data["samples"]["p1"].image
    image.storage.delete(image.name)
    with django_capture_on_commit_callbacks(execute=True):
        job = version_build_start(project=project, by=lead)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "No such file" in job.error
    assert DatasetVersion.objects.get(project=project).status == "failed"


@pytest.mark.django_db(transaction=True)
def test_the_build_job_runs_on_a_real_worker(celery_worker, project, lead, annotators):
    small_dataset(project, annotators)
    job = version_build_start(project=project, by=lead, include_votes=True)
    assert job.kind == Job.Kind.BUILD_VERSION and job.status == Job.Status.QUEUED

    def finished() -> bool:
        job.refresh_from_db()
        return job.is_finished

    wait_for(finished, timeout=120)
    assert job.status == Job.Status.SUCCEEDED, job.error
    version = DatasetVersion.objects.get(project=project)
    assert job.result["version"] == 1 and job.result["rows"] == 4 == version.row_count
    assert version.status == "ready" and version.include_votes and version.job_id == job.pk
    assert job.done == job.total == 4
    record = version.files.get(kind="parquet")
    with record.file.open("rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == record.sha256
    # The worker's files are the same bytes as an in-process build of the same labels.
    again = version_build(project=project, by=lead, include_votes=True)
    assert again.manifest["data_sha256"] == version.manifest["data_sha256"]


def test_versions_page_is_for_the_lead_and_lists_figures(client, project, lead, annotators, data):
    version_build(project=project, by=lead)
    url = f"/projects/{project.slug}/versions/"
    client.force_login(annotators[0])
    assert client.get(url).status_code == 403
    assert client.post(f"{url}build/").status_code == 403
    assert client.get(f"{url}1/files/jsonl").status_code == 403
    client.force_login(lead)
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-version="1"' in html and "Ready" in html
    assert "2 / 1" in html  # prompts per split
    assert "50% / 0%" in html  # conflict share per split
    assert f"{url}1/files/parquet" in html
    detail = client.get(f"{url}1/").content.decode()
    assert "p1__completeness" in detail
    assert DatasetVersion.objects.get(number=1).manifest["data_sha256"] in detail


def test_build_from_the_page(client, project, lead, data, django_capture_on_commit_callbacks):
    client.force_login(lead)
    url = f"/projects/{project.slug}/versions/build/"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"include_votes": "on"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b'data-job-status="queued"' in response.content
    version = DatasetVersion.objects.get(project=project)
    assert version.status == "ready" and version.include_votes and not version.include_seeds
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"include_seeds": "1"})
    assert response.status_code == 302 and response["Location"].endswith("/versions/")
    assert DatasetVersion.objects.get(number=2).include_seeds


def test_lead_downloads_a_file_with_ranges(client, project, lead, data):
    version = version_build(project=project, by=lead)
    client.force_login(lead)
    url = f"/projects/{project.slug}/versions/1/files/jsonl"
    response = client.get(url, HTTP_RANGE="bytes=0-9")
    with version.files.get(kind="jsonl").file.open("rb") as fh:
        whole = fh.read()
    assert response.status_code == 206 and b"".join(response.streaming_content) == whole[:10]
    assert b"".join(client.get(url).streaming_content) == whole


def test_ready_versions_have_one_selector(project):
    """Building and failed versions are never listed nor found by number, on any page."""
    from django.http import Http404

    from aggregation.selectors.export import versions_ready
    from judging.selectors.leaderboard import version_get

    for number, status in enumerate(["ready", "building", "failed", "ready"], start=1):
        DatasetVersion.objects.create(project=project, number=number, status=status)
    assert [v.number for v in versions_ready(project=project)] == [4, 1]
    assert version_get(project=project, number=4).number == 4
    with pytest.raises(Http404):
        version_get(project=project, number=2)
