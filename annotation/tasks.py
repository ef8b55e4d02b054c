"""Celery tasks of the annotation app: the import job and the periodic release of expired leases."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.core.files.storage import default_storage

from core.jobs import job_execute
from core.models import Job
from core.text import counted

from .importing.errors import ImportRejected
from .importing.service import samples_import
from .importing.uploads import upload_discard
from .services.assignment import slots_reclaim_expired

logger = logging.getLogger(__name__)


class ImportFileInvalid(Exception):
    """The job's short failure message; the full list is in the job's result."""


@shared_task(name="annotation.tasks.import_samples")
def import_samples_task(job_id: int) -> None:
    """Validate and import the job's uploaded file; a rejected file stores its error list.

    Safe to run twice: ``job_execute`` lets one attempt at a time claim the job, the import is
    one transaction (a killed attempt leaves nothing) and idempotent by external id.
    """

    def work(job: Job, progress: Any) -> dict[str, Any]:
        params = job.params
        filename = params.get("filename", "the file")
        try:
            report = samples_import(
                project=job.project,
                path=default_storage.path(params["path"]),
                update=bool(params.get("update")),
                filters=params.get("filters") or [],
                images=params.get("images") or None,
                progress=progress,
            )
        except ImportRejected as exc:
            # The error list goes to the result so the page can show it as a table;
            # the raise marks the job failed. A refused upload is not kept.
            upload_discard(params["path"])
            Job.objects.filter(pk=job.pk).update(
                result={"errors": [p.as_dict() for p in exc.problems], "more": exc.more}
            )
            raise ImportFileInvalid(
                f"{counted(exc.count, 'error')} in {filename}; nothing was imported"
            ) from None
        except Exception:
            # The traceback goes to the log only; the lead reads a message.
            logger.exception("import job %s failed on %s", job.pk, params.get("path"))
            upload_discard(params["path"])
            raise ImportFileInvalid(
                f"The import of {filename} failed on a server error; nothing was imported. "
                f"The details are in the server log (job {job.pk})."
            ) from None
        return report.as_dict()

    job_execute(job_id, work)


@shared_task(name="annotation.tasks.reclaim_expired_leases")
def reclaim_expired_leases() -> int:
    """Release every expired, uncompleted slot; returns how many were released.

    A maintenance sweep rather than a user's job, so it writes no Job row; it is idempotent, and
    claims take expired slots directly too, so a missed run only delays the release.
    """
    return slots_reclaim_expired()
