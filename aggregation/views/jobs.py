"""Start the aggregation job (lead only): htmx gets the job card, a plain POST is redirected."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_POST
from django_htmx.http import trigger_client_event

from annotation.forms import refusal
from annotation.selectors.projects import project_get
from annotation.splits import split_label
from core.http import queue_unavailable
from core.jobs import JobQueueUnavailable
from core.permissions import lead_required

from ..forms import AggregationStartForm
from ..services.aggregate import aggregation_start as aggregation_start_service


@lead_required
@require_POST
def aggregation_start(request: HttpRequest, slug: str) -> HttpResponse:
    project = project_get(slug=slug)
    form = AggregationStartForm(request.POST)
    if not form.is_valid():
        return refusal(form)
    split = form.cleaned_data["split"] or None
    try:
        job = aggregation_start_service(project=project, split=split, created_by=request.user)
    except JobQueueUnavailable as exc:
        if request.htmx:
            return queue_unavailable(request)
        messages.error(request, str(exc))
        return redirect(reverse("dashboard", args=[project.slug]))
    if request.htmx:
        context = {"project": project, "last_job": job}
        response = render(request, "aggregation/_aggregate_panel.html#aggregate-job", context)
        scope = split_label(split) if split else "all splits"
        return trigger_client_event(response, "toast", {"value": f"Aggregation started ({scope})"})
    try:
        return redirect(reverse("dashboard", args=[project.slug]))
    except NoReverseMatch:
        return redirect("job-status", job.pk)
