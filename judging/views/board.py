"""Leaderboard extras: the project's latest board, its CSV / LaTeX export, two judges compared."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from aggregation.models import DatasetVersion
from aggregation.selectors.export import version_rows_readable, versions_ready
from core.permissions import get_project_for_user

from ..board_export import (
    BoardColumn,
    BoardRow,
    board_csv,
    board_latex,
    replaces_count,
    statistics_cells,
)
from ..forms import BoardQueryForm, CompareQueryForm
from ..selectors import leaderboard as selectors
from ..selectors.compare import Distinction, judges_compare, rows_with_questions

#: Rows where the judges differ, per page of the comparison.
DIFF_PAGE_SIZE = 25
EXPORT_TYPES = {"csv": "text/csv; charset=utf-8", "tex": "application/x-tex; charset=utf-8"}


@login_required
@require_safe
def leaderboard_latest(request: HttpRequest, slug: str) -> HttpResponse:
    """The leaderboard of the project's newest ready version (from the project navigation)."""
    project = get_project_for_user(request.user, slug)
    latest = versions_ready(project=project).order_by("-number").first()
    if latest is not None:
        return redirect("leaderboard", slug=project.slug, number=latest.number)
    return render(request, "judging/leaderboard_none.html", {"project": project})


def _distinction_fields(distinction: Distinction | None, compared_on: str) -> dict:
    """The export's paired-test cells of a judge (empty when it was not tested)."""
    if distinction is None:
        return {}
    return {
        "above": distinction.above,
        "compared_on": compared_on,
        "distinct": distinction.significant,
        "p_holm": distinction.p_holm,
    }


def _board(version: DatasetVersion, request: HttpRequest):
    splits = selectors.version_splits(version=version)
    split = BoardQueryForm(request.GET).split_in(splits)
    if split is None:
        raise Http404("This version has no rows.")
    rows, columns, (sort_key, _) = selectors.leaderboard_rows(
        version=version, split=split, sort=BoardQueryForm(request.GET).value("sort")
    )
    labels = {c.key: c.label for c in columns} | {"overall": "Overall"}
    board_columns = [
        BoardColumn(label=c.label, group="criteria" if c.criterion else "metrics") for c in columns
    ]
    board_rows = [
        BoardRow(
            judge=row.judge,
            values=[cell.value for cell in row.cells],
            cis=[cell.ci for cell in row.cells],
            runs=row.runs,
            template_hash=row.scorecard.template_hash,
            last_run=row.last_run_at.date().isoformat() if row.last_run_at else "",
            invalid=row.invalid,
            statistics=statistics_cells(row.scorecard.figures),
            replaces=replaces_count(row.scorecard.figures),
            **_distinction_fields(row.distinction, labels.get(sort_key, "")),
        )
        for row in rows
    ]
    return split, board_columns, board_rows


@login_required
@require_safe
def leaderboard_export(request: HttpRequest, slug: str, number: int, fmt: str) -> HttpResponse:
    """The table of one split as CSV or LaTeX, in the order the page sorts it."""
    if fmt not in EXPORT_TYPES:
        raise Http404("Export as .csv or .tex.")
    version = selectors.version_get_for_user(user=request.user, slug=slug, number=number)
    split, columns, rows = _board(version, request)
    if fmt == "csv":
        body = board_csv(columns, rows)
    else:
        caption = (
            f"Judges on the {selectors.split_label(split).lower()} split of "
            f"{version.project.name}, dataset version {version.number} (accuracy in percent)."
        )
        if any(row.distinct is not None for row in rows):
            caption += (
                " Distinct from above: a paired test against the judge ranked just above on the"
                " sort column, Holm-adjusted p in parentheses."
            )
        if any(row.replaces is not None for row in rows):
            caption += (
                " Replaces an annotator: the criteria on which the judge passed the alternative"
                " annotator test, of those tested."
            )
        body = board_latex(columns, rows, caption=caption)
    response = HttpResponse(body, content_type=EXPORT_TYPES[fmt])
    name = f"{version.project.slug}-v{version.number}-{split}-leaderboard.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_safe
def judges_compare_page(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Two judges side by side: per criterion, then the rows where their verdicts differ."""
    version = selectors.version_get_for_user(user=request.user, slug=slug, number=number)
    if not version_rows_readable(user=request.user, version=version):
        # The rows show the human labels; a version with votes is the lead's (as its rows are).
        raise PermissionDenied("This version's rows are for the project lead.")
    splits = selectors.version_splits(version=version)
    pick = CompareQueryForm(request.GET).pick(
        splits=splits,
        judges_of=lambda split: [
            row.judge for row in selectors.leaderboard_rows(version=version, split=split)[0]
        ],
    )
    split, judge_a, judge_b = pick["split"], pick["a"], pick["b"]
    comparison = page = None
    columns = {}
    if split and judge_a and judge_b:
        comparison = judges_compare(
            version=version,
            split=split,
            judge_a=judge_a,
            judge_b=judge_b,
            criterion=pick["criterion"] or None,
        )
    if comparison is not None:
        keys = [c.criterion for c in comparison.criteria]
        columns = {
            c.criterion: c
            for c in selectors.criterion_columns(version=version, split=split, keys=keys)
        }
        page = Paginator(comparison.differing, DIFF_PAGE_SIZE).get_page(pick["page"])
        page.object_list = rows_with_questions(version=version, rows=list(page.object_list))
    context = {
        "project": version.project,
        "version": version,
        "on_split": pick["judges"],
        "splits": [(s, selectors.split_label(s)) for s in splits],
        "split": split,
        "judge_a": judge_a,
        "judge_b": judge_b,
        "criterion": pick["criterion"],
        "comparison": comparison,
        "criteria": [{"cmp": c, "column": columns.get(c.criterion)} for c in comparison.criteria]
        if comparison
        else [],
        "page": page,
        "paired": comparison.paired if comparison else None,
        "paired_criteria": [
            {"fig": f, "column": columns.get(f.key)} for f in comparison.paired.criteria
        ]
        if comparison and comparison.paired
        else [],
        "base": reverse("judge-compare", args=[slug, number]),
    }
    return render(request, "judging/compare.html", context)
