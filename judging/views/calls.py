"""The call inspector: what the judge runner asked of the judge per row, and what it answered."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from core.permissions import lead_required

from ..call_filters import CallQueryForm
from ..selectors import leaderboard as selectors
from ..selectors.calls import calls_inspect, run_criteria, runner_run_get


@lead_required
@require_safe
def judge_run_calls(request: HttpRequest, slug: str, number: int, run_id: int) -> HttpResponse:
    """A runner run's rows, each with its calls: parse method, tokens, outputs and thinking."""
    version = selectors.version_get_for_user(user=request.user, slug=slug, number=number)
    run = runner_run_get(version=version, run_id=run_id)
    criteria = run_criteria(version=version, run=run)
    filters = CallQueryForm(request.GET).filters(criteria=[key for key, _ in criteria])
    inspection = calls_inspect(version=version, run=run, filters=filters)
    context = {
        "project": version.project,
        "version": version,
        "run": run,
        "config": run.stats.get("config") or {},
        "filters": filters,
        "criteria": criteria,
        "methods": inspection.method_options,
        "inspection": inspection,
        "page": inspection.page,
        "base": reverse("judge-run-calls", args=[slug, number, run_id]),
    }
    return render(request, "judging/calls.html", context)
