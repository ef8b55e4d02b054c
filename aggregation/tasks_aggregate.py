"""The aggregation Celery task: a thin wrapper that runs the service inside the job bookkeeping."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from annotation.models import Project
from core.jobs import ProgressReporter, job_execute
from core.models import Job

from .services.aggregate import project_aggregate


@shared_task(name="aggregation.aggregate_project")
def aggregate_project(job_id: int) -> None:
    """Aggregate the job's project (``params["split"]``: one split, or all when null)."""

    def work(job: Job, progress: ProgressReporter) -> dict[str, Any]:
        project = Project.objects.get(pk=job.project_id)
        return project_aggregate(
            project=project, split=job.params.get("split"), job=job, progress=progress
        )

    job_execute(job_id, work)
