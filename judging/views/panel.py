"""The judge panel page: choose the panel, start it, watch its job, read what it wrote."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_safe

from annotation.forms import JobParamForm
from annotation.models import Project
from annotation.selectors.projects import project_get
from core.http import queue_unavailable
from core.jobs import JobQueueUnavailable
from core.permissions import lead_required

from ..forms import PanelForm
from ..runner.run import RunnerError
from ..selectors.panel import panel_job_get, panel_jobs, panel_summary
from ..services.panel import panel_run_start


def _context(project: Project, form: PanelForm, job: Any = None) -> dict[str, Any]:
    return {
        "project": project,
        "form": form,
        "job": job,
        "summary": panel_summary(project=project),
        "recent": panel_jobs(project=project),
        "has_configs": form.fields["judges"].queryset.exists(),
    }


@lead_required
@require_http_methods(["GET", "POST"])
def panel_page(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the page; POST: start a panel run with the ticked judge configs."""
    project = project_get(slug=slug)
    if request.method == "GET":
        job = panel_job_get(project=project, job_id=JobParamForm(request.GET).job_id())
        return render(request, "judging/panel.html", _context(project, PanelForm(), job))
    form = PanelForm(request.POST)
    if form.is_valid():
        try:
            job = panel_run_start(
                project=project, configs=list(form.cleaned_data["judges"]), by=request.user
            )
        except RunnerError as exc:
            form.add_error(None, str(exc))
        except JobQueueUnavailable as exc:
            form.add_error(None, str(exc))
            page = render(request, "judging/panel.html", _context(project, form))
            return queue_unavailable(request, page)
        else:
            return redirect(f"{reverse('judge-panel', args=[slug])}?job={job.pk}#panel-job")
    return render(request, "judging/panel.html", _context(project, form), status=400)


@lead_required
@require_safe
def panel_job(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """The panel job's card, polled while it runs; once done the page's figures come along."""
    project = project_get(slug=slug)
    job = panel_job_get(project=project, job_id=job_id)
    if job is None:
        raise Http404("No such panel job.")
    context = _context(project, PanelForm(), job)
    context["oob"] = job.is_finished
    return render(request, "judging/panel.html#panel-job", context)
