"""Uploads from the lead's import page: keep the file, queue the import job."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone
from django.utils.text import get_valid_filename

from ..models import Job, Project
from ..services.jobs import job_create, job_enqueue

UPLOAD_SUFFIXES = (".jsonl", ".ndjson", ".parquet", ".zip")


def import_upload_enqueue(
    *,
    project: Project,
    file: IO,
    by: Any,
    update: bool = False,
    filters: list[str] | None = None,
    images: str = "",
) -> Job:
    """Store the upload under ``imports/`` and queue the task that validates and imports it."""
    from ..tasks_import import import_samples_task

    filename = Path(getattr(file, "name", "") or "upload.jsonl").name
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    path = default_storage.save(
        f"imports/{project.slug}/{stamp}-{get_valid_filename(filename)}", file
    )
    with transaction.atomic():
        job = job_create(
            kind=Job.Kind.IMPORT,
            project=project,
            created_by=by,
            params={
                "path": path,
                "filename": filename,
                "update": update,
                "filters": list(filters or []),
                "images": images or "",
            },
            message=f"Queued: {filename}",
        )
        job_enqueue(job, import_samples_task)
    return job
