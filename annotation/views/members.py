"""The lead's membership page: annotators, their progress and open slots, and the lead's moves."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.selectors.members import member_rows, users_addable
from annotation.services import assignment
from core.permissions import get_member, lead_required

from ..forms import MemberAddForm, SlotReassignForm, form_errors
from ..models import Project, Slot
from ..services.projects import member_add


@lead_required
@require_GET
def members(request: HttpRequest, slug: str) -> HttpResponse:
    """Annotators with calibration state, assigned/done counts and their unfinished slots."""
    project = get_object_or_404(Project, slug=slug)
    rows = member_rows(project=project)
    calibrated = [r.member for r in rows if r.member.is_active and r.member.is_calibrated]
    return render(
        request,
        "annotation/members.html",
        {
            "project": project,
            "rows": rows,
            "addable": users_addable(project=project),
            "reassign_targets": calibrated,
            "n_active": sum(1 for r in rows if r.member.is_active),
            "n_open": sum(len(r.open_slots) for r in rows),
        },
    )


@lead_required
@require_POST
def member_add_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Add an existing user to the project as an annotator."""
    project = get_object_or_404(Project, slug=slug)
    form = MemberAddForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_errors(form)["user_id"])
    else:
        user = form.cleaned_data["user_id"]
        member_add(project=project, user=user)
        messages.success(request, f"{user.get_username()} is now an annotator of {project.name}.")
    return redirect("members", slug=project.slug)


@lead_required
@require_POST
def member_remove_view(request: HttpRequest, slug: str, member_id: int) -> HttpResponse:
    """Remove an annotator: their unfinished slots go back to the pool, their votes stay."""
    project = get_object_or_404(Project, slug=slug)
    member = get_member(project, member_id)
    released = assignment.member_remove(project=project, member=member, by=request.user)
    messages.success(
        request,
        f"{member.user.get_username()} was removed; {released} unfinished slot"
        f"{'' if released == 1 else 's'} released, votes kept.",
    )
    return redirect("members", slug=project.slug)


@lead_required
@require_POST
def slot_reassign_view(request: HttpRequest, slug: str, slot_id: int) -> HttpResponse:
    """Move an unfinished slot to another calibrated annotator, or back to open."""
    project = get_object_or_404(Project, slug=slug)
    slot = get_object_or_404(
        Slot.objects.select_related("sample", "annotator"), pk=slot_id, sample__project=project
    )
    form = SlotReassignForm(request.POST, project=project)
    if not form.is_valid():
        messages.error(request, form_errors(form)["to"])
        return redirect("members", slug=project.slug)
    target = form.cleaned_data["to"]
    try:
        assignment.slot_reassign(slot=slot, to_annotator=target, by=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        where = target.get_username() if target else "the open pool"
        messages.success(request, f"{slot.sample.external_id} (slot {slot.index}) → {where}.")
    return redirect("members", slug=project.slug)
