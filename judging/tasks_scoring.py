"""The Celery task that stores and scores an uploaded predictions file."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage

from aggregation.models import DatasetVersion
from annotation.models import Job
from annotation.services.jobs import JobLeaseLost, ProgressReporter, job_execute

from .services import UploadRejected, judge_run_upload


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
                job=job,
                progress=progress,
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
