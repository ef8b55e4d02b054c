"""Start the judge runner as a background job (the leaderboard's form)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from aggregation.models import DatasetVersion
from core.jobs import job_create, job_enqueue
from core.models import Job
from judging.models import JudgeConfig

from .run import RunnerError


def judge_run_start(
    *, version: DatasetVersion, config: JudgeConfig, judge: str = "", by: Any
) -> Job:
    """Queue a run of ``config`` over ``version`` (raises JobQueueUnavailable, RunnerError)."""
    from judging.tasks import judge_run_task

    if version.status != DatasetVersion.Status.READY:
        raise RunnerError(
            f"version {version.number} is {version.get_status_display().lower()}; "
            "a judge runs on a ready version",
            field="version",
        )
    judge = (judge or config.name).strip()
    with transaction.atomic():
        job = job_create(
            kind=Job.Kind.SCORE_JUDGE,
            project=version.project,
            created_by=by,
            params={
                "runner": True,
                "version_id": version.pk,
                "config_id": config.pk,
                "judge": judge,
            },
            message=f"Queued: {judge} on v{version.number}",
        )
        job_enqueue(job, judge_run_task)
    return job
