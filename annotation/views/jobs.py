"""The job progress fragment that pages poll with htmx until the job finishes."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from ..models import Job
from ..permissions import is_lead


@login_required
def job_status(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(Job, pk=job_id)
    if not is_lead(request.user) and job.created_by_id != request.user.pk:
        raise PermissionDenied("Not your job.")
    template = "annotation/job.html#job-card" if request.htmx else "annotation/job.html"
    return render(request, template, {"job": job})
