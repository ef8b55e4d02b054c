"""The lead's dashboard: progress, agreement, results and the aggregation job panel."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe

from annotation.models import Job
from annotation.permissions import lead_required
from annotation.selectors import project_get

from .. import charts
from ..selectors_dashboard import STATISTICS, Dashboard, dashboard_figures

SERIES_COLORS = {"κ (Cohen)": "#1f5fbf", "Fleiss' κ": "#2a9d8f", "α (Krippendorff)": "#e09f3e"}
SERIES_NAMES = {"cohen": "κ (Cohen)", "fleiss": "Fleiss' κ", "alpha": "α (Krippendorff)"}
OUTCOME_COLORS = {
    "kept_unanimous": "#1f7a3f",
    "kept_majority_tie": "#74b488",
    "dropped_split": "#b42318",
    "dropped_ties": "#e07a5f",
    "dropped_missing": "#9aa1ab",
}


def _bar(stat: dict[str, Any] | None, series: str) -> charts.Bar:
    stat = stat or {}
    value = stat.get("value")
    ci = stat.get("ci") if value is not None else None
    if value is None:
        note = stat.get("undefined_reason") or "not computed yet"
    else:
        note = f"95% CI {ci[0]:.2f} to {ci[1]:.2f}" if ci and None not in ci else "no CI"
    return charts.Bar(series=series, value=value, ci=ci, note=note)


def _charts(figures: Dashboard) -> dict[str, Any]:
    """The SVG charts of the page (already escaped by the chart functions)."""
    out: dict[str, Any] = {"agreement": {}, "heat": {}, "outcomes": None, "balance": {}}
    for row in figures.agreement:
        groups = [
            charts.BarGroup(
                label="All criteria",
                bars=[_bar(row["raw_overall"][k], SERIES_NAMES[k]) for k, _ in STATISTICS],
            )
        ] + [
            charts.BarGroup(
                label=c["name"], bars=[_bar(c["raw"][k], SERIES_NAMES[k]) for k, _ in STATISTICS]
            )
            for c in row["per_criterion"]
        ]
        out["agreement"][row["split"]] = mark_safe(
            charts.ci_bars_svg(
                groups, title=f"Agreement per criterion, {row['label']}", colors=SERIES_COLORS
            )
        )
        pairwise = row["pairwise"]
        out["heat"][row["split"]] = mark_safe(
            charts.heat_map_svg(
                charts.HeatMap(
                    labels=pairwise["annotators"],
                    values=pairwise["kappa"],
                    overlap=pairwise["overlap"],
                ),
                title=f"Cohen's κ per annotator pair, {row['label']}",
            )
        )
    if figures.results:
        out["outcomes"] = mark_safe(
            charts.stacked_bars_svg(
                [
                    charts.StackRow(
                        label=r["label"],
                        segments=[
                            charts.Segment(o["label"], o["n"], OUTCOME_COLORS[o["outcome"]])
                            for o in r["outcomes"]
                        ],
                    )
                    for r in figures.results
                ],
                title="Labels kept and dropped, by reason",
            )
        )
        for r in figures.results:
            out["balance"][r["split"]] = mark_safe(
                charts.stacked_bars_svg(
                    [
                        charts.StackRow(
                            label=b["criterion"].name,
                            segments=[
                                charts.Segment("A preferred", b["a"], "#1f5fbf"),
                                charts.Segment("B preferred", b["b"], "#7a3fb4"),
                            ],
                            note="no kept label for this criterion",
                        )
                        for b in r["balance"]
                    ],
                    title=f"Kept labels preferring A vs B, {r['label']}",
                    width=560,
                )
            )
    return out


@lead_required
def dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    project = project_get(slug=slug)
    figures = dashboard_figures(project=project)
    jobs = Job.objects.filter(project=project)
    last_job = jobs.filter(kind=Job.Kind.AGGREGATE).first()
    context = {
        "project": project,
        "figures": figures,
        "charts": _charts(figures),
        "series_names": SERIES_NAMES,
        "statistics": STATISTICS,
        "outcome_colors": OUTCOME_COLORS,
        "last_job": last_job,
        "job": last_job,
        "version_build_url": reverse("version-build", args=[slug]),
        "last_build_job": jobs.filter(kind=Job.Kind.BUILD_VERSION).first(),
        "versions_url": reverse("versions", args=[slug]),
    }
    return render(request, "aggregation/dashboard.html", context)
