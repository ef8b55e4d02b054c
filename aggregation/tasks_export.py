"""Celery task building a dataset version (thin: the work is in services.versions)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.contrib.auth import get_user_model

from annotation.models import Job
from annotation.services.jobs import job_execute
from core.text import counted

from .services.versions import version_build


def _work(job: Job, progress: Any) -> dict[str, Any]:
    params = job.params or {}
    by = get_user_model().objects.filter(pk=job.created_by_id).first()
    version = version_build(
        project=job.project,
        by=by,
        include_votes=bool(params.get("include_votes")),
        include_seeds=params.get("include_seeds"),
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
    job = job_execute(job_id, _work)
    return job.pk if job else None
