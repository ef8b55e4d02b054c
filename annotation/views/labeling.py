"""The labeling screen: one (sample, criterion) at a time, submitted in place with htmx.

Every action also works as a plain form POST followed by a redirect, so the screen is usable
without JavaScript. Assignment, voting, the tie cap and the calibration gate live in
``annotation.services.work``; these views only translate requests and pick a template.
"""

from __future__ import annotations

from functools import lru_cache
from types import MappingProxyType
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import get_script_prefix, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import trigger_client_event

from annotation.selectors.work import project_for_labeling
from annotation.services import voting, work_types

from ..ab import SHOWN_CHOICES, canonical_to_shown, shown_texts
from ..forms import ItemForm, ProblemReportForm, SkipForm, VoteForm, form_errors, refusal
from ..models import Choice, ProblemReport, Project
from ..selectors.scale_screen import scale_answer_shown, scale_screen
from ..services import work
from ..services.voting import tie_unavailable_message, vote_lock_message

TEMPLATE = "annotation/label.html"


@lru_cache(maxsize=1024)
def _project_urls(prefix: str, slug: str) -> MappingProxyType:
    """The labeling screen's links of one project, reversed once per process and prefix."""
    names = {
        "project": "project-detail",
        "guidelines": "guidelines",
        "label": "label",
        "back": "label-back",
        "skip": "label-skip",
        "report": "report-problem",
    }
    return MappingProxyType({key: reverse(name, args=[slug]) for key, name in names.items()})


def _urls(project: Project) -> MappingProxyType:
    return _project_urls(get_script_prefix(), project.slug)


def _project(slug: str) -> Project:
    """The project and its criteria, read together (every labeling request needs both)."""
    project = project_for_labeling(slug)
    if project is None:
        raise Http404("No such project.")
    return project


def _item_context(
    project: Project,
    item: work_types.WorkItem,
    *,
    choice: str | None = None,
    rationale: str | None = None,
    errors: dict[str, str] | None = None,
    skip_reason: str = "",
    previous: tuple[int, int] | None = None,
    unsure: bool | None = None,
    answer: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The screen of ``item``; ``previous`` is the (sample, criterion) answered just before.

    ``answer`` is the grade or scores typed on a refused vote, shown again as they were.
    """
    sample = item.sample
    if choice is None and item.vote is not None:
        choice = canonical_to_shown(item.vote.choice, item.swapped)
    if answer is None:
        answer = scale_answer_shown(item.vote, item.swapped)
    if rationale is None:
        rationale = item.vote.rationale if item.vote is not None else ""
    if unsure is None:
        unsure = item.vote.unsure if item.vote is not None else False
    left_text, right_text = shown_texts(sample.response_a, sample.response_b, item.swapped)
    return {
        "project": project,
        "item": item,
        "sample": sample,
        "criterion": item.criterion,
        "left_text": left_text,
        "right_text": right_text,
        "choice": choice or "",
        "rationale": rationale,
        "unsure": unsure,
        "errors": errors or {},
        "done": item.done,
        "total": item.total,
        "ties_available": item.ties_available,
        "problem_kinds": ProblemReport.Kind.choices,
        "urls": _urls(project),
        "back_url": _back_url(project, item),
        "tie_reason": _tie_reason(project, item),
        "skip_reason": skip_reason,
        "criterion_changed": previous is not None and previous[1] != item.criterion.pk,
        **scale_screen(project, item.criterion, answer, errors),
    }


def _typed_answer(form: VoteForm) -> dict[str, str]:
    """The grade and scores of a refused submission, as typed."""
    return {name: str(form.data.get(name, "")) for name in ("grade", "score_left", "score_right")}


def _tie_reason(project: Project, item: work_types.WorkItem) -> str | None:
    """Why the Tie button is off on this screen, or None when a tie may be chosen."""
    if item.ties_available is None or item.ties_available > 0:
        return None
    if item.vote is not None and item.vote.choice == Choice.TIE:
        return None  # keeping a tie already cast costs nothing
    return tie_unavailable_message(cap=project.tie_cap, wait=item.tie_wait)


def _revisit_context(project: Project, item: work_types.WorkItem) -> dict[str, Any]:
    """An item opened again (Back): says up front when its vote may no longer be revised."""
    context = _item_context(project, item)
    notice = vote_lock_message(project=project, vote=item.vote)
    if notice:
        context["notice"] = notice
    return context


def _back_url(project: Project, item: work_types.WorkItem) -> str:
    url = _urls(project)["back"]
    if item.vote is not None:
        # Revisiting a voted item: Back goes to the vote before it, not to the latest one.
        url += f"?sample={item.sample.pk}&criterion={item.criterion.pk}"
    return url


def _screen(request: HttpRequest, project: Project, context: dict[str, Any], status: int = 200):
    template = f"{TEMPLATE}#work" if request.htmx else TEMPLATE
    return render(request, template, context, status=status)


def _next_context(
    project: Project, user: Any, previous: tuple[int, int] | None = None
) -> dict[str, Any]:
    item = work.work_next(project=project, annotator=user)
    if item is not None:
        return _item_context(project, item, previous=previous)
    state = work.work_state(project=project, annotator=user)
    if state.mode == "not_member":
        raise PermissionDenied("You are not an annotator in this project.")
    return {
        "project": project,
        "item": None,
        "state": state,
        "done": state.done,
        "total": state.total,
        "ties_available": state.ties_available,
    }


@login_required
@require_http_methods(["GET", "POST"])
def label(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the current item (or an end screen). POST: submit a vote, then the next item."""
    project = _project(slug)
    if request.method == "GET":
        return _screen(request, project, _next_context(project, request.user))
    form = VoteForm(request.POST, scale=project.label_scale)
    form.is_valid()
    if form.id_errors():
        return refusal(form)
    sample_id = form.cleaned_data["sample_id"]
    criterion_id = form.cleaned_data["criterion_id"]
    # Shown again as typed when the vote is refused.
    shown_choice = form.data.get("choice", "")
    rationale = form.data.get("rationale", "")
    errors = form_errors(form)
    if not errors:
        try:
            voting.vote_submit(
                project=project,
                annotator=request.user,
                sample_id=sample_id,
                criterion_id=criterion_id,
                shown_choice=form.cleaned_data["choice"],
                rationale=form.cleaned_data["rationale"],
                seconds=form.cleaned_data["seconds"],
                unsure=form.cleaned_data["unsure"],
                shown_grade=form.cleaned_data["grade"],
                shown_scores=(form.cleaned_data["score_left"], form.cleaned_data["score_right"]),
            )
        except work_types.VoteRejected as rejected:
            errors = {rejected.field: rejected.message}
    if errors:
        try:
            item = work.work_item(
                project=project,
                annotator=request.user,
                sample_id=sample_id,
                criterion_id=criterion_id,
            )
        except (PermissionDenied, Http404):
            # The item itself is gone (lease lost, reassigned): say so above the next one.
            context = _next_context(project, request.user)
            context["notice"] = " ".join(errors.values())
            return _screen(request, project, context, status=422)
        context = _item_context(
            project,
            item,
            choice=shown_choice if shown_choice in SHOWN_CHOICES else "",
            answer=_typed_answer(form),
            rationale=rationale,
            errors=errors,
            unsure=bool(form.cleaned_data.get("unsure")),
        )
        # 422 for both paths; labeling.js tells htmx to swap it in like a success.
        return _screen(request, project, context, status=422)
    if not request.htmx:
        return redirect("label", slug=project.slug)
    context = _next_context(project, request.user, previous=(sample_id, criterion_id))
    response = _screen(request, project, context)
    response["HX-Push-Url"] = _urls(project)["label"]
    return _status(response, "Vote saved")


def _status(response: HttpResponse, message: str) -> HttpResponse:
    """A short confirmation, shown by the swapped-in screen in its status line (app.js)."""
    return trigger_client_event(response, "toast", {"value": message}, after="settle")


@login_required
@require_POST
def label_skip(request: HttpRequest, slug: str) -> HttpResponse:
    """Skip an item for now, with a reason; it comes back after the annotator's other items."""
    project = _project(slug)
    form = SkipForm(request.POST)
    form.is_valid()
    if form.id_errors():
        return refusal(form)
    sample_id = form.cleaned_data["sample_id"]
    criterion_id = form.cleaned_data["criterion_id"]
    errors = {"skip": " ".join(form_errors(form).values())} if form.errors else {}
    if not errors:
        try:
            work.item_skip(
                project=project,
                annotator=request.user,
                sample_id=sample_id,
                criterion_id=criterion_id,
                reason=form.cleaned_data["reason"],
            )
        except work_types.VoteRejected as rejected:
            errors = {"skip": rejected.message}
        except (PermissionDenied, Http404) as gone:
            context = _next_context(project, request.user)
            context["notice"] = str(gone) or "This item is not yours to skip."
            return _screen(request, project, context, status=422)
    if errors:
        item = work.work_item(
            project=project, annotator=request.user, sample_id=sample_id, criterion_id=criterion_id
        )
        context = _item_context(
            project, item, errors=errors, skip_reason=form.data.get("reason", "")
        )
        return _screen(request, project, context, status=422)
    if not request.htmx:
        return redirect("label", slug=project.slug)
    context = _next_context(project, request.user, previous=(sample_id, criterion_id))
    response = _screen(request, project, context)
    response["HX-Push-Url"] = _urls(project)["label"]
    return _status(response, "Skipped for now: it comes back after your other items")


@login_required
@require_GET
def label_item(request: HttpRequest, slug: str, sample_id: int, criterion_id: int) -> HttpResponse:
    """Revisit one of the annotator's own items (used by Back)."""
    project = _project(slug)
    item = work.work_item(
        project=project, annotator=request.user, sample_id=sample_id, criterion_id=criterion_id
    )
    return _screen(request, project, _revisit_context(project, item))


@login_required
@require_GET
def label_back(request: HttpRequest, slug: str) -> HttpResponse:
    """Go to the vote cast before the given item (or the latest vote) to revise it."""
    project = _project(slug)
    # A malformed starting point is ignored: Back then goes to the latest vote.
    before = ItemForm(request.GET).before()
    item = work.vote_previous(project=project, annotator=request.user, before=before)
    if item is None:
        if not request.htmx:
            return redirect("label", slug=project.slug)
        response = _screen(request, project, _next_context(project, request.user))
        return _status(response, "No earlier vote to revise")
    url = reverse("label-item", args=[project.slug, item.sample.pk, item.criterion.pk])
    if not request.htmx:
        return redirect(url)
    response = _screen(request, project, _revisit_context(project, item))
    response["HX-Push-Url"] = url
    return response


@login_required
@require_POST
def report_problem(request: HttpRequest, slug: str) -> HttpResponse:
    """Flag a sample (broken image, unreadable response); it leaves the annotator's queue."""
    project = _project(slug)
    form = ProblemReportForm(request.POST)
    if not form.is_valid():
        return refusal(form)
    work.problem_report(
        project=project,
        annotator=request.user,
        sample_id=form.cleaned_data["sample_id"],
        kind=form.cleaned_data["kind"],
        note=form.cleaned_data["note"],
    )
    if not request.htmx:
        return redirect("label", slug=project.slug)
    response = _screen(request, project, _next_context(project, request.user))
    response["HX-Push-Url"] = _urls(project)["label"]
    return _status(response, "Problem reported; the sample left your queue")
