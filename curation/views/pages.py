"""The lead's curation page: upload and run, the funnel, the pair browser, the decisions CSV,
promotion. Thin: forms in, services and selectors out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST, require_safe

from annotation.forms import JobParamForm
from annotation.selectors.projects import project_get
from core.csv_safe import csv_writer
from core.http import queue_unavailable
from core.jobs import JobQueueUnavailable
from core.media import MediaUnwritable, media_unwritable_response
from core.models import Job
from core.permissions import lead_required

from ..forms import CurationForm, PairFilterForm, PromoteForm
from ..presenters.funnel import funnel_columns, funnel_svg, row_label
from ..selectors import pairs as selectors
from ..services.jobs import curation_start, promotion_start

PAGE_SIZE = 25
KINDS = (Job.Kind.CURATE, Job.Kind.PROMOTE)


def _context(project: Any, **extra: Any) -> dict[str, Any]:
    run = selectors.run_latest(project=project)
    rows = run.funnel if run else []
    return {
        "project": project,
        "run": run,
        "funnel_rows": [{**r, "label": row_label(r)} for r in rows],
        "funnel_columns": funnel_columns(rows),
        "funnel_chart": mark_safe(funnel_svg(rows)) if rows else "",  # escaped in funnel_svg
        "counts": selectors.curation_counts(project=project),
        "recent": Job.objects.filter(project=project, kind__in=KINDS)[:5],
        "form": extra.pop("form", None) or CurationForm(),
        "promote_form": extra.pop("promote_form", None) or PromoteForm(),
        **extra,
    }


@lead_required
def curation_page(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the page; POST: start a curation run (with an uploaded file, or on stored data)."""
    project = project_get(slug=slug)
    if request.method != "POST":
        job = None
        job_id = JobParamForm(request.GET).job_id()
        if job_id is not None:
            job = Job.objects.filter(pk=job_id, project=project, kind__in=KINDS).first()
        return render(request, "curation/curation.html", _context(project, job=job))
    form = CurationForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            job = curation_start(
                project=project,
                by=request.user,
                options=form.options(),
                file=form.cleaned_data["file"],
                images=form.cleaned_data["images"],
            )
        except (JobQueueUnavailable, MediaUnwritable) as exc:
            form.add_error(None, str(exc))
            page = render(request, "curation/curation.html", _context(project, form=form))
            if isinstance(exc, MediaUnwritable):
                return media_unwritable_response(page, exc)
            return queue_unavailable(request, page)
        return redirect(f"{reverse('curation', args=[slug])}?job={job.pk}#job")
    return render(request, "curation/curation.html", _context(project, form=form), status=400)


@lead_required
@require_POST
def curation_promote(request: HttpRequest, slug: str) -> HttpResponse:
    """Start the promotion of the kept pairs."""
    project = project_get(slug=slug)
    form = PromoteForm(request.POST)
    if not form.is_valid():
        return render(
            request, "curation/curation.html", _context(project, promote_form=form), status=400
        )
    try:
        job = promotion_start(
            project=project,
            by=request.user,
            count=form.cleaned_data["count"],
            seed=form.cleaned_data["seed"],
            calibration_seeds=form.cleaned_data["calibration_seeds"],
        )
    except JobQueueUnavailable as exc:
        form.add_error(None, str(exc))
        page = render(request, "curation/curation.html", _context(project, promote_form=form))
        return queue_unavailable(request, page)
    return redirect(f"{reverse('curation', args=[slug])}?job={job.pk}#job")


@lead_required
@require_safe
def curation_job(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """The job's card (polled); once finished, the funnel and counts come along out of band."""
    project = project_get(slug=slug)
    job = get_object_or_404(Job, pk=job_id, project=project, kind__in=KINDS)
    context = _context(project, job=job, oob=job.is_finished)
    return render(request, "curation/_job.html", context)


@lead_required
@require_safe
def curation_pairs(request: HttpRequest, slug: str) -> HttpResponse:
    """Every candidate pair with how it was made and each filter's decision and reason."""
    project = project_get(slug=slug)
    form = PairFilterForm(request.GET)
    data = form.cleaned_data if form.is_valid() else {}
    pairs = selectors.pairs_filtered(
        project=project,
        split=data.get("split") or "",
        source=data.get("source") or "",
        status=data.get("status") or "",
    )
    page = Paginator(pairs, PAGE_SIZE).get_page(data.get("page") or 1)
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "curation/pairs.html",
        {
            "project": project,
            "form": form,
            "page": page,
            "query": query.urlencode(),
            "sources": selectors.pair_sources(project=project),
        },
    )


class _Echo:
    def write(self, value: str) -> str:
        return value


@lead_required
@require_safe
def curation_decisions_csv(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    """Every pair's decisions as CSV, one row per pair and filter."""
    project = project_get(slug=slug)
    writer = csv_writer(_Echo())

    def rows() -> Iterator[str]:
        yield writer.writerow(selectors.CSV_HEADER)
        for row in selectors.decision_rows(project=project):
            yield writer.writerow(row)

    response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-curation.csv"'
    return response
