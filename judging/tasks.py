"""Celery tasks of the judging app: scoring an uploaded predictions file, running a judge."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage

from aggregation.models import DatasetVersion
from core.jobs import JobLeaseLost, ProgressReporter, job_execute
from core.models import Job
from judging.services.scoring import UploadRejected, judge_run_upload

from .models import JudgeConfig
from .runner.fallback import upload_verifier
from .runner.run import RunnerError, judge_run_execute
from .services.panel import panel_run_execute


def _score(job: Job, progress: ProgressReporter) -> dict[str, Any]:
    params = job.params
    version = DatasetVersion.objects.select_related("project").get(pk=params["version_id"])
    by = get_user_model().objects.filter(pk=job.created_by_id).first()
    try:
        with default_storage.open(params["path"], "rb") as handle:
            result = judge_run_upload(
                version=version,
                judge=params.get("judge") or "",
                file=handle,
                run_index=params.get("run_index"),
                by=by,
                lenient=bool(params.get("lenient")),
                split=params.get("split") or None,
                template_hash=params.get("template_hash") or "",
                tie_margin=float(params.get("tie_margin") or 0.0),
                job=job,
                progress=progress,
                verify=upload_verifier(params.get("verifier_id")),
            )
    except UploadRejected as exc:
        # The page lists every error with its line and field; the job's error keeps the text.
        Job.objects.filter(pk=job.pk).update(result={"errors": exc.errors, "more": exc.more})
        default_storage.delete(params["path"])
        raise
    except JobLeaseLost:
        raise  # the attempt that took the job over is reading the file
    except BaseException:
        default_storage.delete(params["path"])
        raise
    default_storage.delete(params["path"])
    return {
        "summary": result.summary(),
        "judge": result.run.judge,
        "runs": [r.run_index for r in result.runs],
        "run_ids": [r.pk for r in result.runs],
        "splits": [c.split for c in result.scorecards],
        "warnings": result.warnings,
        "unparsable": sum(r.stats.get("unparsable", 0) for r in result.runs),
    }


@shared_task(name="judging.predictions_score", acks_late=True)
def predictions_score(job_id: int) -> None:
    """Store and score the predictions file of an upload job (safe to deliver twice).

    A killed worker leaves the file in place, so the job's next attempt reads it again.
    """
    job_execute(job_id, _score)


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
        "truncated": result.truncated,
        "truncated_rows": result.truncated_rows[:5],
    }


@shared_task(name="judging.judge_run", acks_late=True)
def judge_run_task(job_id: int) -> None:
    """Run a judge over a dataset version (safe to deliver twice; a new attempt resumes)."""
    job_execute(job_id, _run)


def _panel(job: Job, progress: ProgressReporter) -> dict[str, Any]:
    params = job.params
    ids = list(params.get("config_ids") or [])
    found = {c.pk: c for c in JudgeConfig.objects.select_related("verifier").filter(pk__in=ids)}
    missing = [
        name for pk, name in zip(ids, params.get("judges") or ids, strict=False) if pk not in found
    ]
    if missing:
        raise RunnerError(f"the judge config {', '.join(map(str, missing))} no longer exists")
    result = panel_run_execute(
        project=job.project, configs=[found[pk] for pk in ids], job=job, progress=progress
    )
    return result.as_dict()


@shared_task(name="judging.panel_run", acks_late=True)
def panel_run_task(job_id: int) -> None:
    """Pre-label a project's items with a judge panel (safe to deliver twice; resumes)."""
    job_execute(job_id, _panel)
