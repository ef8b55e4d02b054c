"""The lead's dashboard: progress, agreement, results and the aggregation job panel."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from aggregation.selectors.dashboard import STATISTICS, dashboard_figures
from aggregation.selectors.panel_audit import panel_audit_figures
from aggregation.selectors.savings import votes_saved
from annotation.selectors.projects import project_get
from annotation.selectors.reports import reports_open_count
from core.health import worker_seen
from core.models import Job
from core.permissions import lead_required

from ..presenters.activity import dashboard_alerts, throughput_present
from ..presenters.dashboard import (
    OUTCOME_COLORS,
    SERIES_NAMES,
    dashboard_charts,
    dashboard_present,
)
from ..presenters.panel_audit import panel_audit_present
from ..selectors.scale_distribution import scale_distribution


@lead_required
def dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    """The dashboard page of one project."""
    project = project_get(slug=slug)
    figures = dashboard_present(dashboard_figures(project=project))
    jobs = Job.objects.filter(project=project)
    last_job = jobs.filter(kind=Job.Kind.AGGREGATE).first()
    context = {
        "alerts": dashboard_alerts(figures.annotators, figures.agreement, cap=project.tie_cap),
        "throughput": throughput_present(figures.throughput),
        "project": project,
        "figures": figures,
        "charts": dashboard_charts(figures),
        "series_names": SERIES_NAMES,
        "statistics": STATISTICS,
        "outcome_colors": OUTCOME_COLORS,
        "last_job": last_job,
        "job": last_job,
        "version_build_url": reverse("version-build", args=[slug]),
        "last_build_job": jobs.filter(kind=Job.Kind.BUILD_VERSION).first(),
        "versions_url": reverse("versions", args=[slug]),
        "reports_open": reports_open_count(project=project),
        "panel_audit": panel_audit_present(panel_audit_figures(project=project)),
        "savings": votes_saved(project=project),
        "scale_table": scale_distribution(project=project),
        "worker_seen": worker_seen(),
    }
    return render(request, "aggregation/dashboard.html", context)
