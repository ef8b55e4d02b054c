"""The Celery task of the judge runner: make the calls of a run and score it."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.contrib.auth import get_user_model

from aggregation.models import DatasetVersion
from annotation.models import Job
from annotation.services.jobs import ProgressReporter, job_execute

from .models import JudgeConfig
from .runner.run import RunnerError, judge_run_execute


def _run(job: Job, progress: ProgressReporter) -> dict[str, Any]:
    params = job.params
    version = DatasetVersion.objects.select_related("project").get(pk=params["version_id"])
    config = JudgeConfig.objects.select_related("verifier").filter(pk=params["config_id"]).first()
    if config is None:
        raise RunnerError("the judge config of this run no longer exists")
    by = get_user_model().objects.filter(pk=job.created_by_id).first()
    result = judge_run_execute(
        version=version,
        config=config,
        judge=params.get("judge") or "",
        by=by,
        job=job,
        progress=progress,
    )
    return {
        "summary": result.summary(),
        "estimate": result.estimate.text(),
        "judge": result.judge,
        "splits": [c.split for c in result.scorecards],
        "run_ids": [r.pk for r in result.runs],
        "calls": result.calls,
        "made": result.made,
        "cached": result.cached,
        "failed": result.failed,
        "tokens": result.tokens,
        "cost": result.cost,
        "partial": result.partial,
        "failures": result.failures[:5],
    }


@shared_task(name="judging.judge_run", acks_late=True)
def judge_run_task(job_id: int) -> None:
    """Run a judge over a dataset version (safe to deliver twice; a new attempt resumes)."""
    job_execute(job_id, _run)
