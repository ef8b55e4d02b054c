"""The calibration discussion and the lead's calibration actions.

The lead sees every seed item with the reference label and all annotators' votes, and acts on
each annotator (mark calibrated, another round) and on references. An annotator may read the same
discussion, without the actions, once they have labeled every seed item of their round; they see
their peers by pseudonym and their own entries as "you" (annotation.selectors_calibration).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ..models import Choice, Criterion, Project, ProjectMember, Sample, Split
from ..permissions import is_lead, lead_required
from ..selectors_calibration import calibration_discussion
from ..services import work

# Work modes in which an annotator has finished (at least) the current seed round.
SEED_ROUND_FINISHED = {"awaiting_review", "formal", "done"}


def _may_read(project: Project, user) -> bool:
    if is_lead(user):
        return True
    state = work.work_state(project=project, annotator=user)
    return state.mode in SEED_ROUND_FINISHED


def _back_to_discussion(request: HttpRequest, project: Project) -> HttpResponseRedirect:
    """Return to the discussion with the filters the lead had on."""
    base = reverse("calibration", args=[project.slug])
    target = request.POST.get("next", "")
    # Only our own page, never an arbitrary URL from the form.
    if target != base and not target.startswith((base + "?", base + "#")):
        target = base
    return HttpResponseRedirect(target)


def _int_or_none(raw: str | None) -> int | None:
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


@login_required
@require_GET
def calibration(request: HttpRequest, slug: str) -> HttpResponse:
    """Seed items with reference and votes; per-annotator agreement and lead actions."""
    project = get_object_or_404(Project, slug=slug)
    if not _may_read(project, request.user):
        raise PermissionDenied(
            "The calibration discussion opens once you have labeled every seed item."
        )
    criterion_id = _int_or_none(request.GET.get("criterion"))
    split = request.GET.get("split") or None
    if split not in Split.values:
        split = None
    only_disagreements = request.GET.get("disagreements") == "1"
    discussion = calibration_discussion(
        project=project,
        criterion_id=criterion_id,
        split=split,
        only_disagreements=only_disagreements,
        viewer=request.user,
    )
    return render(
        request,
        "annotation/calibration.html",
        {
            "project": project,
            "discussion": discussion,
            "can_act": is_lead(request.user),
            "filters": {
                "criterion": criterion_id,
                "split": split or "",
                "disagreements": only_disagreements,
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
    member = get_object_or_404(ProjectMember.objects.select_related("user"), pk=member_id)
    if member.project_id != project.pk:
        raise PermissionDenied("This annotator is not in this project.")
    work.calibration_mark(project=project, member=member, by=request.user)
    messages.success(request, f"{member.user.get_username()} is calibrated: formal work opens.")
    return _back_to_discussion(request, project)


@lead_required
@require_POST
def calibration_round(request: HttpRequest, slug: str, member_id: int) -> HttpResponse:
    """Send an annotator through the seed items again; their earlier votes stay in history."""
    project = get_object_or_404(Project, slug=slug)
    member = get_object_or_404(ProjectMember.objects.select_related("user"), pk=member_id)
    if member.project_id != project.pk:
        raise PermissionDenied("This annotator is not in this project.")
    member = work.calibration_new_round(project=project, member=member, by=request.user)
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
    sample = get_object_or_404(
        Sample, pk=_int_or_none(request.POST.get("sample_id")), project=project, is_seed=True
    )
    criterion = get_object_or_404(
        Criterion,
        pk=_int_or_none(request.POST.get("criterion_id")),
        project=project,
        split=sample.split,
    )
    preference = request.POST.get("preference", "")
    if preference not in Choice.values:
        messages.error(request, "Choose A, B or tie for the reference label.")
        return _back_to_discussion(request, project)
    work.reference_label_set(
        sample=sample, criterion=criterion, preference=preference, by=request.user
    )
    messages.success(request, f"Reference for {sample.external_id} · {criterion.name} saved.")
    return _back_to_discussion(request, project)
