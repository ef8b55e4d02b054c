"""The job progress fragment that pages poll with htmx, and the lead's cancel and retry."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from core.http import MESSAGE_HEADER

from .. import jobs as job_services
from ..models import Job
from ..permissions import get_job_for_user, lead_required

#: The header app.js shows as a toast when htmx gets an error answer.


@login_required
def job_status(request: HttpRequest, job_id: int) -> HttpResponse:
    """The job's card (htmx) or page."""
    job = get_job_for_user(request.user, job_id)
    template = "core/job.html#job-card" if request.htmx else "core/job.html"
    return render(request, template, {"job": job})


def _answer(request: HttpRequest, job: Job, *, error: str = "", status: int = 200) -> HttpResponse:
    if request.htmx:
        response = render(request, "core/job.html#job-card", {"job": job}, status=status)
        if error:
            response[MESSAGE_HEADER] = error
        return response
    if error:
        messages.error(request, error)
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
        return redirect(back)
    return redirect("job-status", job.pk)


@lead_required
@require_POST
def job_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    """Cancel a queued or running job (lead only)."""
    job = get_object_or_404(Job, pk=job_id)
    if not job_services.job_cancel(job):
        return _answer(request, job, error="The job has already finished.", status=409)
    if not request.htmx:
        messages.success(request, f"{job.get_kind_display()} #{job.pk} was cancelled.")
    return _answer(request, job)


@lead_required
@require_POST
def job_retry(request: HttpRequest, job_id: int) -> HttpResponse:
    """Queue a failed or cancelled job again, as the same job (lead only)."""
    job = get_object_or_404(Job, pk=job_id)
    try:
        job = job_services.job_retry(job)
    except job_services.JobNotRetriable as exc:
        return _answer(request, job, error=str(exc), status=409)
    except job_services.JobQueueUnavailable as exc:
        job.refresh_from_db()
        return _answer(request, job, error=str(exc), status=503)
    if not request.htmx:
        messages.success(request, f"{job.get_kind_display()} #{job.pk} was queued again.")
    return _answer(request, job)
