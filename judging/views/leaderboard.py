"""The leaderboard, the scorecard page, the predictions upload and the judge runner's pages."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from aggregation.charts import Series, lines_svg
from aggregation.models import DatasetVersion
from annotation.forms import JobParamForm
from core.http import queue_unavailable
from core.jobs import JobQueueUnavailable
from core.media import MediaUnwritable, media_unwritable_response
from core.models import Job
from core.permissions import is_lead, lead_required
from judging.selectors.leaderboard import Cell, Column

from ..charts import Bar, bar_chart_svg
from ..forms import BoardQueryForm, JudgeRunForm, PredictionsUploadForm
from ..models import JudgeRun
from ..selectors import leaderboard as selectors
from ..selectors.runner import run_form_context, runner_job_get
from ..services import scoring as services


def _pick_split(request: HttpRequest, splits: list[str]) -> str | None:
    return BoardQueryForm(request.GET).split_in(splits)


def _headers(
    base: str, split: str | None, columns: list[Column], current: tuple[str, bool]
) -> dict[str, Any]:
    """Sortable headers: label, tooltip, the link a click follows and the aria-sort state.

    A first click sorts a figure best first (descending) and the judge name A-Z; a second
    click on the same header reverses it.
    """
    key_now, desc_now = current

    def header(key: str, label: str, title: str = "") -> dict[str, str]:
        if key == key_now:
            next_desc = not desc_now
            state = "descending" if desc_now else "ascending"
            arrow = "▼" if desc_now else "▲"
        else:
            next_desc = key != "judge"
            state, arrow = "none", ""
        query = {"sort": ("-" if next_desc else "") + key}
        if split:
            query = {"split": split, **query}
        return {
            "key": key,
            "label": label,
            "title": title,
            "href": f"{base}?{urlencode(query)}",
            "aria": state,
            "arrow": arrow,
        }

    return {
        "sort_key": key_now,
        "sort_desc": desc_now,
        "judge": header("judge", "Judge"),
        "columns": [header(c.key, c.label, c.title) for c in columns],
        "runs": header("runs", "Voted"),
        "date": header("date", "Last run"),
    }


def _best_by_column(rows: list[selectors.LeaderboardRow], n: int) -> list[float | None]:
    best: list[float | None] = []
    for i in range(n):
        values = [r.cells[i].value for r in rows if r.cells[i].value is not None]
        best.append(max(values) if len(values) > 1 else None)
    return best


@login_required
@require_safe
def leaderboard(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = selectors.version_get_for_user(user=request.user, slug=slug, number=number)
    splits = selectors.version_splits(version=version)
    split = _pick_split(request, splits)
    rows: list[selectors.LeaderboardRow] = []
    columns: list[Column] = []
    sort = ("pacc", True)
    if split:
        rows, columns, sort = selectors.leaderboard_rows(
            version=version, split=split, sort=BoardQueryForm(request.GET).value("sort")
        )
    best = _best_by_column(rows, len(columns))
    base = reverse("leaderboard", args=[slug, number])
    table = [
        {
            "row": row,
            "cells": [
                {"cell": cell, "best": best[i] is not None and cell.value == best[i]}
                for i, cell in enumerate(row.cells)
            ],
        }
        for row in rows
    ]
    context = {
        "project": version.project,
        "version": version,
        "versions": selectors.versions_ready(project=version.project),
        "splits": [(s, selectors.split_label(s)) for s in splits],
        "split": split,
        "split_label": selectors.split_label(split) if split else "",
        "n_headline": len(selectors.HEADLINE),
        "table": table,
        "headers": _headers(base, split, columns, sort),
        "n_criteria": len(columns) - len(selectors.HEADLINE),
        "can_upload": is_lead(request.user),
    }
    if context["can_upload"] and not request.htmx:
        job = runner_job_get(version=version, job_id=JobParamForm(request.GET).job_id())
        context.update(run_form_context(version=version, form=JudgeRunForm(), job=job))
    template = "judging/leaderboard.html#board" if request.htmx else "judging/leaderboard.html"
    return render(request, template, context)


def _criterion_chart(columns: list[Column], cells: list[Cell], judge: str) -> str:
    bars = [
        Bar(label=c.title, value=cell.value, ci=cell.ci, note=cell.detail.rsplit(" ", 1)[0])
        for c, cell in zip(columns, cells, strict=True)
    ]
    return bar_chart_svg(
        bars,
        title=f"Per-criterion accuracy of {judge}",
        reference=50.0,
        reference_label="chance",
        width=700,
        label_width=240,
    )


def _share_chart(diagnostics: dict[str, Any]) -> str:
    bars = [
        Bar(label="Judge predicts A", value=diagnostics.get("pred_a_share")),
        Bar(label="Humans prefer A", value=diagnostics.get("human_a_share")),
    ]
    return bar_chart_svg(
        bars,
        title="Share of A verdicts",
        reference=50.0,
        reference_label="50%",
        row_height=30,
        width=500,
        label_width=140,
    )


def _tie_margin_chart(scalar: dict[str, Any]) -> str:
    sweep = scalar["sweep"]
    scored = max(scalar.get("scored") or 0, 1)
    return lines_svg(
        [f"{p['margin']:g}" for p in sweep],
        [
            Series("Overall accuracy", [p["overall"] or 0.0 for p in sweep]),
            Series("PAcc", [p["pacc"] or 0.0 for p in sweep]),
            Series("Ties (share of scored rows)", [100.0 * p["ties"] / scored for p in sweep]),
        ],
        title="Accuracy, PAcc and ties over the tie margin δ",
        width=700,
        unit="%",
    )


@login_required
@require_safe
def scorecard(request: HttpRequest, slug: str, number: int, judge: str) -> HttpResponse:
    version = selectors.version_get_for_user(user=request.user, slug=slug, number=number)
    splits = selectors.judge_splits(version=version, judge=judge)
    split = _pick_split(request, splits)
    card = selectors.scorecard_get(version=version, judge=judge, split=split or "")
    figures = card.figures
    columns = selectors.criterion_columns(
        version=version, split=split, keys=figures.get("per_criterion") or {}
    )
    crit_cells = selectors.criterion_cells(figures, columns)
    headline = list(
        zip(selectors.headline_columns(), selectors.headline_cells(figures), strict=True)
    )
    diagnostics = figures.get("diagnostics") or {}
    per = figures.get("per_criterion") or {}
    context = {
        "project": version.project,
        "version": version,
        "judge": judge,
        "card": card,
        "figures": figures,
        "splits": [(s, selectors.split_label(s)) for s in splits],
        "split": split,
        "split_label": selectors.split_label(split),
        "headline": headline,
        "overall": figures.get("overall") or {},
        "criteria": [
            {
                "column": column,
                "cell": cell,
                "correct": per.get(column.criterion, {}).get("correct", 0),
                "n": per.get(column.criterion, {}).get("n", 0),
            }
            for column, cell in zip(columns, crit_cells, strict=True)
        ],
        "criterion_chart": mark_safe(_criterion_chart(columns, crit_cells, judge)),
        "share_chart": mark_safe(_share_chart(diagnostics)),
        "tie_margin_chart": (
            mark_safe(_tie_margin_chart(figures["tie_margin"])) if figures.get("tie_margin") else ""
        ),
        "diagnostics": diagnostics,
        "counts": figures.get("counts") or {},
        "run_figures": figures.get("runs") or [],
        "runs": selectors.judge_runs(version=version, judge=judge, split=split),
        "can_upload": is_lead(request.user),
    }
    return render(request, "judging/scorecard.html", context)


def _upload_context(version: DatasetVersion, form: PredictionsUploadForm, job: Job | None):
    return {
        "project": version.project,
        "version": version,
        "form": form,
        "job": job,
        "judges": selectors.judges_on_version(version=version),
    }


def _form_of(job: Job | None) -> PredictionsUploadForm:
    """A fresh form holding what the upload of ``job`` was sent with (all but the files).

    The judge, run index, template hash, split and the lenient box stay filled while the job
    runs and after it fails, so fixing the file and sending it again is one step.
    """
    params = job.params if job is not None else {}
    fields = ("judge", "run_index", "template_hash", "split", "lenient", "tie_margin")
    return PredictionsUploadForm(initial={k: params[k] for k in fields if params.get(k)})


@lead_required
@require_http_methods(["GET", "POST"])
def predictions_upload(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = selectors.version_get_for_user(user=request.user, slug=slug, number=number)
    job = None
    if request.method == "POST":
        form = PredictionsUploadForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                job = services.predictions_upload_enqueue(
                    version=version,
                    judge=form.cleaned_data["judge"],
                    run_index=form.cleaned_data["run_index"],
                    template_hash=form.cleaned_data["template_hash"],
                    lenient=form.cleaned_data["lenient"],
                    split=form.cleaned_data["split"] or None,
                    tie_margin=form.cleaned_data["tie_margin"],
                    verifier_id=getattr(form.cleaned_data["verifier"], "pk", None),
                    file=form.cleaned_data["file"],
                    by=request.user,
                )
            except services.UploadRejected as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            except (JobQueueUnavailable, MediaUnwritable) as exc:
                form.add_error(None, str(exc))
                context = _upload_context(version, form, None)
                template = "judging/upload.html#upload-panel" if request.htmx else None
                page = render(request, template or "judging/upload.html", context)
                if isinstance(exc, MediaUnwritable):
                    return media_unwritable_response(page, exc)
                return queue_unavailable(request, page)
            else:
                if request.htmx:
                    context = _upload_context(version, _form_of(job), job)
                    return render(request, "judging/upload.html#upload-panel", context)
                url = reverse("predictions-upload", args=[slug, number])
                return redirect(f"{url}?job={job.pk}")
        if request.htmx:
            context = _upload_context(version, form, None)
            return render(request, "judging/upload.html#upload-panel", context)
    else:
        job_id = JobParamForm(request.GET).job_id()
        if job_id is not None:
            job = Job.objects.filter(
                pk=job_id, kind=Job.Kind.SCORE_JUDGE, project=version.project
            ).first()
        form = _form_of(job)
    return render(request, "judging/upload.html", _upload_context(version, form, job))


@lead_required
def predictions_upload_status(
    request: HttpRequest, slug: str, number: int, job_id: int
) -> HttpResponse:
    """The upload's job card with the outcome (scorecard links, or the error found)."""
    version = selectors.version_get_for_user(user=request.user, slug=slug, number=number)
    job = get_object_or_404(Job, pk=job_id, kind=Job.Kind.SCORE_JUDGE, project=version.project)
    return render(request, "judging/upload.html#upload-job", {"job": job, "version": version})


@lead_required
@require_POST
def judge_run_delete(request: HttpRequest, slug: str, number: int, run_id: int) -> HttpResponse:
    version = selectors.version_get_for_user(user=request.user, slug=slug, number=number)
    run = get_object_or_404(JudgeRun, pk=run_id, version=version)
    judge, index = run.judge, run.run_index
    cards = services.judge_run_delete(run=run, by=request.user)
    messages.success(request, f"Deleted run {index} of {judge}.")
    if cards:
        return redirect(reverse("scorecard", args=[slug, number, judge]))
    return redirect(reverse("leaderboard", args=[slug, number]))


# --- The judge runner ---------------------------------------------------------------------------
