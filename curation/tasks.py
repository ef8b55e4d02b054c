"""Celery tasks of the curation app: a curation run and a promotion, each a Job."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.core.files.storage import default_storage

from annotation.importing.errors import ImportRejected
from annotation.importing.uploads import upload_discard
from core.jobs import job_execute
from core.models import Job

from .services.generations import generations_import
from .services.pipeline import RunOptions, curation_run
from .services.promote import pairs_promote
from .services.verdicts import CurationError

logger = logging.getLogger(__name__)


class CurationFailed(Exception):
    """The job's short failure message; a refused file's error list is in the job's result."""


def _refused(job: Job, exc: ImportRejected, what: str) -> CurationFailed:
    Job.objects.filter(pk=job.pk).update(
        result={"errors": [p.as_dict() for p in exc.problems], "more": exc.more}
    )
    return CurationFailed(f"{exc.count} error(s) in {what}; nothing was changed")


def _kept(result: dict[str, Any]) -> str:
    """Says that the generations of the upload were stored before the run failed."""
    report = result.get("generations")
    if not report:
        return ""
    return f" The generations file was stored ({report['summary']}): run again without a file."


@shared_task(name="curation.tasks.curate")
def curate_task(job_id: int) -> None:
    """Import the uploaded generations (if any), then pair and filter; safe to run twice."""

    def work(job: Job, progress: Any) -> dict[str, Any]:
        params = job.params
        path = params.get("path")
        result: dict[str, Any] = {}
        try:
            if path:
                report = generations_import(
                    project=job.project,
                    path=default_storage.path(path),
                    images=params.get("images") or None,
                    progress=progress,
                )
                result["generations"] = report.as_dict()
            run = curation_run(
                project=job.project,
                options=RunOptions(
                    **{
                        **params["options"],
                        "filters": tuple(params["options"]["filters"]),
                        "judges": tuple(params["options"]["judges"]),
                    }
                ),
                by=job.created_by,
                progress=progress,
            )
        except ImportRejected as exc:
            if path:
                upload_discard(path)
            raise _refused(job, exc, params.get("filename", "the file")) from None
        except CurationError as exc:
            raise CurationFailed(str(exc) + _kept(result)) from None
        except Exception:
            logger.exception("curation job %s failed", job.pk)
            raise CurationFailed(
                f"The curation failed on a server error; the pairs were not changed. The "
                f"details are in the server log (job {job.pk}).{_kept(result)}"
            ) from None
        total = run.funnel[-1] if run.funnel else {"in": 0, "out": 0}
        result.update(run=run.pk, pairs=total["in"], kept=total["out"])
        made = total["in"]
        result["summary"] = f"{made} pair{'' if made == 1 else 's'} made, {total['out']} kept"
        return result

    job_execute(job_id, work)


@shared_task(name="curation.tasks.promote")
def promote_task(job_id: int) -> None:
    """Promote the kept pairs to Samples; idempotent through the sample import."""

    def work(job: Job, progress: Any) -> dict[str, Any]:
        params = job.params
        try:
            report = pairs_promote(
                project=job.project,
                count=params.get("count"),
                seed=int(params.get("seed") or 0),
                calibration_seeds=int(params.get("calibration_seeds") or 0),
                progress=progress,
            )
        except ImportRejected as exc:
            raise _refused(job, exc, "the promoted pairs") from None
        except CurationError as exc:
            raise CurationFailed(str(exc)) from None
        return report.as_dict()

    job_execute(job_id, work)
