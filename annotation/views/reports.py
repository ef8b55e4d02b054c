"""The lead's inbox of problem reports: read them, open the sample, close each one."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.selectors.reports import STATES, reassign_targets, reports_inbox, reports_open_count
from core.permissions import lead_required

from ..forms import ReportCloseForm, form_error_text
from ..models import ProblemReport
from ..selectors.projects import project_get
from ..services.problem_reports import problem_report_close

DONE = {
    ProblemReport.Outcome.RESOLVED: "resolved; the sample is back in the queue",
    ProblemReport.Outcome.REASSIGNED: "closed; the sample went to {to}",
    ProblemReport.Outcome.DISCARDED: "closed; the sample was retired",
}


@lead_required
@require_GET
def reports(request: HttpRequest, slug: str) -> HttpResponse:
    """Open reports oldest first, or (``?state=closed``) the closed ones with who closed them."""
    project = project_get(slug=slug)
    state = request.GET.get("state", "open")
    state = state if state in STATES else "open"
    return render(
        request,
        "annotation/reports.html",
        {
            "project": project,
            "state": state,
            "reports": reports_inbox(project=project, state=state),
            "n_open": reports_open_count(project=project),
            "targets": reassign_targets(project=project),
            "outcomes": ProblemReport.Outcome,
        },
    )


@lead_required
@require_POST
def report_close_view(request: HttpRequest, slug: str, report_id: int) -> HttpResponse:
    """Resolve, reassign or discard one report; the inbox says what happened."""
    project = project_get(slug=slug)
    report = get_object_or_404(
        ProblemReport.objects.select_related("sample"), pk=report_id, sample__project=project
    )
    form = ReportCloseForm(request.POST, project=project)
    if not form.is_valid():
        messages.error(request, form_error_text(form))
        return redirect("reports", slug=project.slug)
    to = form.cleaned_data["to"]
    outcome = form.cleaned_data["outcome"]
    try:
        problem_report_close(
            report=report,
            outcome=outcome,
            by=request.user,
            note=form.cleaned_data["note"],
            to_annotator=to if outcome == ProblemReport.Outcome.REASSIGNED else None,
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        done = DONE[outcome].format(to=to.get_username() if to else "")
        messages.success(request, f"Report on {report.sample.external_id} {done}.")
    return redirect("reports", slug=project.slug)
