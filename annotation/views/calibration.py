"""The calibration discussion and the lead's calibration actions.

The lead sees every seed item with the reference label and all annotators' votes, and acts on
each annotator (mark calibrated, another round) and on references. An annotator may read the same
discussion, without the actions, once they have labeled every seed item of their round; they see
their peers by pseudonym and their own entries as "you" (annotation.selectors.calibration).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.selectors.calibration import calibration_discussion
from annotation.services import calibration as calibration_services
from annotation.services import work_types
from core.permissions import get_member, is_lead, lead_required

from ..forms import CalibrationFilterForm, PageForm, ReferenceForm, form_errors
from ..models import Choice, Project, Split
from ..services import work
from ..services.calibration import NeedsConfirmation, calibration_mark_checked

# Work modes in which an annotator has finished (at least) the current seed round.
SEED_ROUND_FINISHED = {"awaiting_review", "formal", "done"}


def _not_open_yet(project: Project, user) -> work_types.WorkState | None:
    """The annotator's state while the discussion is closed to them, else None (open)."""
    if is_lead(user):
        return None
    state = work.work_state(project=project, annotator=user)
    if state.mode == "not_member":
        raise PermissionDenied("You are not an annotator in this project.")
    return None if state.mode in SEED_ROUND_FINISHED else state


def _back_to_discussion(request: HttpRequest, project: Project) -> HttpResponseRedirect:
    """Return to the discussion with the filters the lead had on."""
    base = reverse("calibration", args=[project.slug])
    target = request.POST.get("next", "")
    # Only our own page, never an arbitrary URL from the form.
    if target != base and not target.startswith((base + "?", base + "#")):
        target = base
    return HttpResponseRedirect(target)


@login_required
@require_GET
def calibration(request: HttpRequest, slug: str) -> HttpResponse:
    """Seed items with reference and votes, one seed sample per page; per-annotator agreement.

    An annotator who has not labeled every seed item yet gets a page that says when it opens.
    Filters and pages swap the results in place for htmx requests.
    """
    project = get_object_or_404(Project, slug=slug)
    closed = _not_open_yet(project, request.user)
    if closed is not None:
        return render(
            request,
            "annotation/calibration_closed.html",
            {"project": project, "state": closed, "remaining": closed.total - closed.done},
        )
    # A filter value that does not parse is dropped: the page shows the unfiltered view of it.
    filters = CalibrationFilterForm(request.GET).filters()
    discussion = calibration_discussion(project=project, viewer=request.user, **filters)
    page = Paginator(discussion.samples, 1).get_page(PageForm(request.GET).number())
    query = {
        "criterion": filters["criterion_id"] or "",
        "split": filters["split"] or "",
        "disagreements": "1" if filters["only_disagreements"] else "",
    }
    template = "annotation/calibration.html"
    if request.htmx and request.htmx.target == "disc-results":
        template += "#results"
    return render(
        request,
        template,
        {
            "project": project,
            "discussion": discussion,
            "page": page,
            "query": "&".join(f"{k}={v}" for k, v in query.items() if v),
            "can_act": is_lead(request.user),
            "filters": {
                "criterion": filters["criterion_id"],
                "split": filters["split"] or "",
                "disagreements": filters["only_disagreements"],
            },
            "splits": [(value, label) for value, label in Split.choices],
            "choices": Choice.choices,
        },
    )


@lead_required
@require_POST
def calibration_mark(request: HttpRequest, slug: str, member_id: int) -> HttpResponse:
    """Let an annotator start formal work."""
    project = get_object_or_404(Project, slug=slug)
    member = get_member(project, member_id)
    try:
        calibration_mark_checked(
            project=project,
            member=member,
            by=request.user,
            confirmed=request.POST.get("confirm") == "1",
        )
    except NeedsConfirmation as refused:
        messages.error(request, str(refused))
        return _back_to_discussion(request, project)
    messages.success(request, f"{member.user.get_username()} is calibrated: formal work opens.")
    return _back_to_discussion(request, project)


@lead_required
@require_POST
def calibration_round(request: HttpRequest, slug: str, member_id: int) -> HttpResponse:
    """Send an annotator through the seed items again; their earlier votes stay in history."""
    project = get_object_or_404(Project, slug=slug)
    member = get_member(project, member_id)
    member = calibration_services.calibration_new_round(
        project=project, member=member, by=request.user
    )
    messages.success(
        request,
        f"{member.user.get_username()} starts calibration round {member.calibration_round}.",
    )
    return _back_to_discussion(request, project)


@lead_required
@require_POST
def reference_set(request: HttpRequest, slug: str) -> HttpResponse:
    """Set or change the reference label of a seed item."""
    project = get_object_or_404(Project, slug=slug)
    form = ReferenceForm(request.POST, project=project)
    if not form.is_valid():
        for message in form_errors(form).values():
            messages.error(request, message)
        return _back_to_discussion(request, project)
    sample = form.cleaned_data["sample_id"]
    criterion = form.cleaned_data["criterion_id"]
    preference = form.cleaned_data["preference"]
    calibration_services.reference_label_set(
        sample=sample, criterion=criterion, preference=preference, by=request.user
    )
    messages.success(request, f"Reference for {sample.external_id} · {criterion.name} saved.")
    return _back_to_discussion(request, project)
