"""The lead's settings page: protocol settings and criteria descriptions."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from core.permissions import lead_required

from ..forms_criteria import CriterionAddForm, CriterionRubricForm
from ..models import Criterion, LabelScale, Project
from ..selectors import projects as selectors
from ..selectors.criteria import criteria_changes, criteria_with_votes
from ..services.project_settings import (
    EDITABLE_SETTINGS,
    LOCKED_ONCE_VOTED,
    criterion_update,
    label_scale_fixed_reason,
    project_settings_update,
)


class ProjectSettingsForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = list(EDITABLE_SETTINGS)
        widgets = {
            "description": forms.Textarea(attrs={"rows": 3}),
            "guidelines": forms.Textarea(attrs={"rows": 10}),
        }
        labels = {
            "tie_cap": "Tie cap (share, e.g. 0.1 = 10%)",
            "lease_minutes": "Lease (minutes)",
            "shuffle_ab": "Randomise A/B order per annotator",
            "export_includes_seeds": "Include seed samples in exports",
            "vote_revision_window": "Revising a vote on a completed sample",
            "calibration_threshold": "Calibration threshold (% agreement with the reference)",
            "early_stopping": "Early stopping: skip votes that can no longer change a label",
            "routing_policy": "Judge-assisted routing",
            "audit_share": "Audit share (0-1): samples that always get every vote",
            "audit_seed": "Audit seed",
            "label_scale": "Label scale",
        }
        help_texts = {
            "early_stopping": "Audit samples always get every vote. It can be switched on at any "
            "time, not off once formal votes exist.",
            "routing_policy": "Panel + verifier: where the judge panel is unanimous and "
            "position-consistent, one annotator verifies; on disagreement the item gets every "
            "vote. Annotators never see the panel. Fixed once formal votes exist.",
            "audit_share": "Drawn reproducibly from the seed; fixed once formal votes exist.",
            "audit_seed": "Fixed once formal votes exist.",
        }

    # A post without these (a form from before they existed) keeps the project's values.
    KEEP_WHEN_ABSENT = ("routing_policy", "audit_share", "audit_seed")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in self.KEEP_WHEN_ABSENT:
            self.fields[name].required = False
        if self.instance.pk is not None and selectors.project_has_formal_votes(
            project=self.instance
        ):
            for name in LOCKED_ONCE_VOTED:  # shown as they are, with the reason
                self.fields[name].disabled = True
                self.fields[name].help_text = (
                    "Fixed: formal votes exist, and this setting decided which items got "
                    "fewer votes."
                )
        # Left out of a post, the scale stays as it is (it is fixed once formal work starts).
        self.fields["label_scale"].required = False
        fixed = label_scale_fixed_reason(project=self.instance)
        if fixed:
            self.fields["label_scale"].disabled = True
            self.fields["label_scale"].help_text = fixed

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        for name in self.KEEP_WHEN_ABSENT:
            if cleaned.get(name) in (None, ""):
                cleaned[name] = getattr(self.instance, name)
        return cleaned

    def clean_label_scale(self) -> str:
        return self.cleaned_data.get("label_scale") or self.instance.label_scale


class CriterionForm(forms.ModelForm):
    class Meta:
        model = Criterion
        fields = ["name", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 6})}


@lead_required
def project_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project = selectors.project_get(slug=slug)
    form = ProjectSettingsForm(request.POST or None, instance=Project.objects.get(pk=project.pk))
    if request.method == "POST" and form.is_valid():
        changes = {f: form.cleaned_data[f] for f in form.changed_data}
        try:
            project_settings_update(project=project, by=request.user, **changes)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            messages.success(request, "Settings saved.")
            return redirect("project-settings", slug=project.slug)
    criteria = list(criteria_with_votes(project=project))
    return render(
        request,
        "annotation/project_settings.html",
        {
            "project": project,
            "form": form,
            "criteria": criteria,
            "n_votes": sum(c.n_votes for c in criteria),
            "add_form": CriterionAddForm(auto_id="add_%s"),
            "changes": criteria_changes(project=project),
        },
    )


@lead_required
def criterion_edit(request: HttpRequest, slug: str, criterion_id: int) -> HttpResponse:
    project = selectors.project_get(slug=slug)
    criterion = get_object_or_404(Criterion, pk=criterion_id, project=project)
    form = CriterionForm(request.POST or None, instance=criterion)
    rubric_form = None
    if project.label_scale == LabelScale.POINTWISE:
        rubric_form = CriterionRubricForm(request.POST or None, criterion=criterion)
    valid = form.is_valid() and (rubric_form is None or rubric_form.is_valid())
    if request.method == "POST" and valid:
        try:
            criterion_update(
                criterion=criterion,
                by=request.user,
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                rubric=rubric_form.rubric() if rubric_form is not None else None,
            )
        except ValidationError as exc:
            target = rubric_form or form
            for field, errors in exc.message_dict.items():
                target.add_error(field if field in target.fields else None, errors)
        else:
            messages.success(request, f"Criterion “{criterion.name}” saved.")
            return redirect("project-settings", slug=project.slug)
    return render(
        request,
        "annotation/criterion_edit.html",
        {"project": project, "criterion": criterion, "form": form, "rubric_form": rubric_form},
    )
