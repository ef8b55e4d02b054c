"""Celery tasks of the aggregation app: aggregation, version builds, the published benchmark.

Each is a thin wrapper running a service inside the job bookkeeping (core.jobs).
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage

from annotation.importing.errors import ImportRejected
from annotation.models import Project
from core.jobs import ProgressReporter, job_execute
from core.models import Job
from core.text import counted

from .services.aggregate import project_aggregate
from .services.benchmark import benchmark_import
from .services.versions import version_build


@shared_task(name="aggregation.aggregate_project")
def aggregate_project(job_id: int) -> None:
    """Aggregate the job's project (``params["split"]``: one split, or all when null)."""

    def work(job: Job, progress: ProgressReporter) -> dict[str, Any]:
        project = Project.objects.get(pk=job.project_id)
        return project_aggregate(
            project=project, split=job.params.get("split"), job=job, progress=progress
        )

    job_execute(job_id, work)


def _build_version(job: Job, progress: Any) -> dict[str, Any]:
    params = job.params or {}
    by = get_user_model().objects.filter(pk=job.created_by_id).first()
    version = version_build(
        project=job.project,
        by=by,
        include_votes=bool(params.get("include_votes")),
        include_seeds=params.get("include_seeds"),
        include_contested=bool(params.get("include_contested")),
        job=job,
        progress=progress,
    )
    return {
        "version": version.number,
        "version_id": version.pk,
        "rows": version.row_count,
        "summary": f"Version {version.number} is ready: {counted(version.row_count, 'row')}.",
    }


@shared_task(name="aggregation.version_build")
def version_build_task(job_id: int) -> int | None:
    """Build the version a BUILD_VERSION job asks for; a dead attempt's version is rebuilt."""
    job = job_execute(job_id, _build_version)
    return job.pk if job else None


class BenchmarkFilesInvalid(Exception):
    """The job's short failure message; every problem is in the job's result."""


def _import_benchmark(job: Job, progress: Any) -> dict[str, Any]:
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
    job = job_execute(job_id, _import_benchmark)
    return job.pk if job else None
