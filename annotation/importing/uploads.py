"""Uploads from the lead's import page: keep the file, queue the import job.

Every upload is stored by :func:`upload_store`: when the media folder refuses the write, it
raises :class:`core.media.MediaUnwritable` (a plain message, no server path) and leaves nothing
behind, and no job is created.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction

from core.jobs import job_create, job_enqueue
from core.media import MediaUnwritable, upload_storage_name
from core.models import Job

from ..models import Project
from .limits import size_text

logger = logging.getLogger(__name__)

UPLOAD_SUFFIXES = (".jsonl", ".ndjson", ".parquet", ".zip")


def upload_store(name: str, upload: Any) -> str:
    """Store an upload under ``name`` (in a fresh random folder); the path it was stored as.

    A write the media folder refuses raises MediaUnwritable; a partly written file is removed
    with its folder. The error, with its server path, goes to the log only.
    """
    try:
        return default_storage.save(name, upload)
    except OSError as exc:
        logger.error("could not store the upload %s: %s", name, exc)
        upload_discard(name)
        raise MediaUnwritable("the uploaded file") from exc


def upload_keep(*, project: Project, upload: Any, default: str) -> tuple[str, str]:
    """Store an upload in a fresh random folder of the project's imports: (its name, the path)."""
    name = Path(getattr(upload, "name", "") or default).name
    path = upload_store(upload_storage_name(f"imports/{project.slug}", name, default), upload)
    return name, path


def uploads_keep(
    *, project: Project, uploads: Sequence[Any], default: str
) -> list[tuple[str, str]]:
    """Store several uploads (one random folder each); if one fails, none is kept."""
    kept: list[tuple[str, str]] = []
    try:
        for upload in uploads:
            kept.append(upload_keep(project=project, upload=upload, default=default))
    except MediaUnwritable:
        for _, path in kept:
            upload_discard(path)
        raise
    return kept


def import_upload_enqueue(
    *,
    project: Project,
    file: IO,
    by: Any,
    update: bool = False,
    filters: list[str] | None = None,
    images: str = "",
) -> Job:
    """Store the upload under ``imports/<slug>/<random>/`` and queue the task that imports it."""
    from ..tasks import import_samples_task

    problem = upload_size_problem(file)
    if problem:
        raise ValueError(problem)
    filename, path = upload_keep(project=project, upload=file, default="upload.jsonl")
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


def upload_size_problem(file: IO) -> str | None:
    """Why an upload is refused before it is stored: larger than ``UPLOAD_MAX_BYTES``."""
    limit = settings.UPLOAD_MAX_BYTES
    size = getattr(file, "size", None)
    if size is not None and size > limit:
        return f"The file is {size_text(size)}; uploads are limited to {size_text(limit)}."
    return None


def upload_discard(path: str) -> None:
    """Remove a stored upload that was refused or whose import failed, and its folder if empty."""
    try:
        default_storage.delete(path)
    except OSError:
        logger.warning("could not remove the refused upload %s", path, exc_info=True)
        return
    upload_folder_discard(path)


def upload_folder_discard(path: str) -> None:
    """Remove the random folder an upload was stored in, once it is empty."""
    # Not empty or already gone (OSError), or a remote storage, whose ``path()`` raises
    # NotImplementedError by Django's Storage contract (it has no folders to remove): leave it.
    with contextlib.suppress(OSError, NotImplementedError):
        Path(default_storage.path(path)).parent.rmdir()
