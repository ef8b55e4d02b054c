"""Starting the curation jobs: a curation run (with an uploaded generations file or on the
stored generations) and a promotion. Each creates its Job and enqueues the task."""

from __future__ import annotations

from typing import IO, Any

from django.db import transaction

from annotation.importing.uploads import upload_keep, upload_size_problem
from annotation.models import Project
from core.jobs import job_create, job_enqueue
from core.models import Job

from .pipeline import RunOptions


def curation_start(
    *, project: Project, by: Any, options: RunOptions, file: IO | None = None, images: str = ""
) -> Job:
    """Queue a curation run; with ``file``, its generations are imported first."""
    from ..tasks import curate_task

    params: dict[str, Any] = {"options": options.as_dict(), "images": images}
    message = "Queued: pairing and filtering the stored generations"
    if file is not None:
        problem = upload_size_problem(file)
        if problem:
            raise ValueError(problem)
        filename, path = upload_keep(project=project, upload=file, default="generations.jsonl")
        params.update(path=path, filename=filename)
        message = f"Queued: {filename}"
    with transaction.atomic():
        job = job_create(
            kind=Job.Kind.CURATE, project=project, created_by=by, params=params, message=message
        )
        job_enqueue(job, curate_task)
    return job


def promotion_start(
    *,
    project: Project,
    by: Any,
    count: int | None,
    seed: int = 0,
    calibration_seeds: int = 0,
) -> Job:
    """Queue the promotion of the kept pairs (``count`` of them, or all)."""
    from ..tasks import promote_task

    params = {"count": count, "seed": seed, "calibration_seeds": calibration_seeds}
    with transaction.atomic():
        job = job_create(
            kind=Job.Kind.PROMOTE,
            project=project,
            created_by=by,
            params=params,
            message=f"Queued: promote {'all kept' if count is None else count} pairs",
        )
        job_enqueue(job, promote_task)
    return job
