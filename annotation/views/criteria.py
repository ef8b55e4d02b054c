"""The lead adds, removes and reorders criteria from the settings page; each change is kept."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.permissions import lead_required

from ..forms import form_error_text
from ..forms_criteria import CriterionAddForm, CriterionMoveForm, CriterionRemoveForm
from ..models import Criterion
from ..selectors.projects import project_get
from ..services.criteria import criterion_add, criterion_move, criterion_remove

BACK = "project-settings"


def _refused(request: HttpRequest, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        text = " ".join(f"{field}: {' '.join(m)}" for field, m in exc.message_dict.items())
    else:
        text = " ".join(exc.messages)
    messages.error(request, text)


@lead_required
@require_POST
def criterion_add_view(request: HttpRequest, slug: str) -> HttpResponse:
    project = project_get(slug=slug)
    form = CriterionAddForm(request.POST, instance=Criterion(project=project))
    if not form.is_valid():
        messages.error(request, form_error_text(form))
        return redirect(BACK, slug=project.slug)
    try:
        criterion = criterion_add(project=project, by=request.user, **form.cleaned_data)
    except ValidationError as exc:
        _refused(request, exc)
    else:
        messages.success(
            request, f"“{criterion.name}” is a criterion of {criterion.get_split_display()}."
        )
    return redirect(BACK, slug=project.slug)


@lead_required
@require_POST
def criterion_remove_view(request: HttpRequest, slug: str, criterion_id: int) -> HttpResponse:
    project = project_get(slug=slug)
    criterion = get_object_or_404(Criterion, pk=criterion_id, project=project)
    form = CriterionRemoveForm(request.POST)
    form.is_valid()
    try:
        votes = criterion_remove(
            criterion=criterion, by=request.user, confirmed=form.cleaned_data.get("confirm", False)
        )
    except ValidationError as exc:
        _refused(request, exc)
    else:
        kept = f"; its {votes} vote{' is' if votes == 1 else 's are'} kept" if votes else ""
        messages.success(request, f"“{criterion.name}” was removed{kept}.")
    return redirect(BACK, slug=project.slug)


@lead_required
@require_POST
def criterion_move_view(request: HttpRequest, slug: str, criterion_id: int) -> HttpResponse:
    project = project_get(slug=slug)
    criterion = get_object_or_404(Criterion, pk=criterion_id, project=project)
    form = CriterionMoveForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_error_text(form))
        return redirect(BACK, slug=project.slug)
    criterion_move(criterion=criterion, direction=form.cleaned_data["direction"], by=request.user)
    return redirect(reverse(BACK, args=[project.slug]) + f"#crit-{criterion.pk}")
