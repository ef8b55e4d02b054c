"""The rationale review queue (lead only): the list, one item, keep / discard, reviewed mark."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from aggregation.selectors.review_queue import KIND_CHOICES, PROVENANCE_CHOICES, QueueFilters
from annotation.forms import refusal
from annotation.models import Project, Sample
from annotation.selectors.projects import project_get
from core.permissions import lead_required

from ..forms import QueuePageForm, QueueStateForm, ReviewDecisionForm, ReviewMarkForm
from ..models import ReviewDecision
from ..selectors import review_queue as queue_selectors
from ..services import review as review_services

ITEM_TEMPLATE = "aggregation/review_item.html"


def _get_sample(project: Project, sample_id: int) -> Sample:
    return get_object_or_404(Sample, project=project, pk=sample_id)


def _filters_from_post(form: QueueStateForm) -> QueueFilters:
    # Decision forms carry the queue's filters in a hidden field so that next / previous and
    # the redirect after a plain POST stay inside the same filtered queue.
    return QueueFilters.from_query(QueryDict(form.cleaned_data.get("filters", "").lstrip("?")))


def _item_context(
    project: Project, sample_id: int, filters: QueueFilters, count_position: bool = False
) -> dict[str, Any]:
    item = queue_selectors.review_item(project=project, sample_id=sample_id)
    counts = queue_selectors.review_counts(project=project, filters=filters)
    nav = queue_selectors.review_neighbours(
        project=project,
        filters=filters,
        sample_id=sample_id,
        total=counts["left"] if filters.unreviewed else counts["total"],
        position_budget_ms=None if count_position else queue_selectors.POSITION_BUDGET_MS,
    )
    return {
        "project": project,
        "filters": filters,
        "qs": filters.querystring(),
        "reasons": ReviewDecision.Reason.choices,
        "nav": nav,
        "counts": counts,
        **item,
    }


@require_GET
@lead_required
def review_queue(request: HttpRequest, slug: str) -> HttpResponse:
    project = project_get(slug=slug)
    filters = QueueFilters.from_query(request.GET)
    counts = queue_selectors.review_counts(project=project, filters=filters)
    form = QueuePageForm(request.GET)
    data = queue_selectors.review_page(
        project=project, filters=filters, page=form.number(), counts=counts, **form.keyset()
    )
    context = {
        "project": project,
        "filters": filters,
        "qs": filters.querystring(),
        "criteria_groups": queue_selectors.criterion_choices(project=project),
        "kinds": KIND_CHOICES,
        "provenances": PROVENANCE_CHOICES,
        "counts": counts,
        **data,
    }
    template = "aggregation/review_queue.html"
    if request.htmx and request.htmx.target == "queue-results":
        template += "#results"
    return render(request, template, context)


@require_GET
@lead_required
def review_item(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    project = project_get(slug=slug)
    filters = QueueFilters.from_query(request.GET)
    count_position = request.GET.get("position") == "1"
    return render(
        request, ITEM_TEMPLATE, _item_context(project, sample_id, filters, count_position)
    )


@require_POST
@lead_required
def review_decide(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    project = project_get(slug=slug)
    sample = _get_sample(project, sample_id)
    form = ReviewDecisionForm(request.POST, project=project)
    valid = form.is_valid()
    filters = _filters_from_post(form)
    criterion = form.cleaned_data.get("criterion")
    error: dict[str, Any] | None = None
    if not valid:
        messages = [m for msgs in form.errors.values() for m in msgs]
        error = {"criterion": criterion.pk if criterion else None, "message": " ".join(messages)}
    else:
        try:
            decision = review_services.review_decide(
                sample=sample,
                criterion=criterion,
                action=form.cleaned_data["action"],
                reason=form.cleaned_data["reason"],
                note=form.cleaned_data["note"],
                author=request.user,
            )
        except ValidationError as exc:
            messages = [m for msgs in exc.message_dict.values() for m in msgs]
            error = {
                "criterion": criterion.pk if criterion else None,
                "message": " ".join(messages),
            }
    if error is None and not request.htmx:
        return redirect(reverse("review-item", args=[slug, sample.pk]) + filters.querystring())
    context = _item_context(project, sample.pk, filters)
    context["error"] = error
    context["error_sample"] = bool(error and error["criterion"] is None)
    # A refused discard comes back with what the lead chose and typed.
    context["posted"] = {"reason": form.data.get("reason", ""), "note": form.data.get("note", "")}
    template = ITEM_TEMPLATE + "#review-body" if request.htmx else ITEM_TEMPLATE
    response = render(request, template, context, status=200 if request.htmx else 400)
    if error is None:
        target = decision.criterion.name if decision.criterion else "Whole sample"
        verb = "kept" if decision.action == ReviewDecision.Action.KEEP else "discarded"
        trigger_client_event(response, "toast", {"value": f"{target}: {verb}"})
    return response


@require_POST
@lead_required
def review_mark(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    project = project_get(slug=slug)
    sample = _get_sample(project, sample_id)
    form = ReviewMarkForm(request.POST)
    if not form.is_valid():
        return refusal(form)
    filters = _filters_from_post(form)
    if form.cleaned_data["reviewed"]:
        review_services.sample_mark_reviewed(sample=sample, by=request.user)
    else:
        review_services.sample_unmark_reviewed(sample=sample, by=request.user)
    target = sample.pk
    if form.cleaned_data["go"] == "next":
        target = queue_selectors.review_next_id(
            project=project, filters=filters, sample_id=sample.pk
        )
        if target is None:
            return redirect(reverse("review-queue", args=[slug]) + filters.querystring())
    return redirect(reverse("review-item", args=[slug, target]) + filters.querystring())
