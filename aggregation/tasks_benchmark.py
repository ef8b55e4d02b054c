"""Celery task importing the published benchmark (thin: the work is in services.benchmark)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage

from annotation.importing.errors import ImportRejected
from annotation.models import Job
from annotation.services.jobs import job_execute
from core.text import counted

from .services.benchmark import benchmark_import


class BenchmarkFilesInvalid(Exception):
    """The job's short failure message; every problem is in the job's result."""


def _work(job: Job, progress: Any) -> dict[str, Any]:
    params = job.params or {}
    by = get_user_model().objects.filter(pk=job.created_by_id).first()
    try:
        result = benchmark_import(
            project=job.project,
            paths=[default_storage.path(p) for p in params["paths"]],
            images=params.get("images") or None,
            file_names=params.get("filenames"),
            by=by,
            progress=progress,
        )
    except ImportRejected as exc:
        Job.objects.filter(pk=job.pk).update(
            result={"errors": [p.as_dict() for p in exc.problems], "more": exc.more}
        )
        raise BenchmarkFilesInvalid(
            f"{counted(exc.count, 'error')}; nothing was imported"
        ) from None
    return result.as_dict()


@shared_task(name="aggregation.benchmark_import")
def benchmark_import_task(job_id: int) -> int | None:
    """Import the job's files as the published benchmark (one transaction: a re-run is clean)."""
    job = job_execute(job_id, _work)
    return job.pk if job else None
