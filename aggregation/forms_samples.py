"""The sample browser's filters and page position."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from aggregation.selectors.samples import (
    AGREEMENT_CHOICES,
    FLAG_CHOICES,
    STATUS_CHOICES,
    SampleFilters,
)
from annotation.forms import ID_MAX
from annotation.models import Project, Split

ANY = [("", "Any")]


class SampleFilterForm(forms.Form):
    """Search text, filters and the keyset position; a bad value is reported and left out."""

    q = forms.CharField(required=False, max_length=200, strip=True, label="Id or text")
    split = forms.ChoiceField(choices=ANY + list(Split.choices), required=False)
    status = forms.ChoiceField(choices=ANY + STATUS_CHOICES, required=False)
    agreement = forms.ChoiceField(choices=ANY + AGREEMENT_CHOICES, required=False)
    flags = forms.ChoiceField(choices=ANY + FLAG_CHOICES, required=False, label="Reports")
    annotator = forms.ModelChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        empty_label="Anyone",
        label="Voted by",
        error_messages={"invalid_choice": "That user is not an annotator of this project."},
    )
    after = forms.IntegerField(min_value=0, max_value=ID_MAX, required=False)
    before = forms.IntegerField(min_value=1, max_value=ID_MAX, required=False)

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotator"].queryset = (
            get_user_model().objects.filter(memberships__project=project).order_by("username")
        )

    def filters(self) -> SampleFilters:
        """The valid filters; a field with an error counts as not set."""
        self.is_valid()
        data = {k: v for k, v in self.cleaned_data.items() if k not in self.errors}
        user = data.get("annotator")
        return SampleFilters(
            q=data.get("q") or "",
            split=data.get("split") or "",
            status=data.get("status") or "",
            agreement=data.get("agreement") or "",
            flags=data.get("flags") or "",
            annotator=user.pk if user else None,
        )

    def position(self) -> dict[str, int | None]:
        """``after`` / ``before`` ids for the keyset page (invalid ones are dropped)."""
        return {
            key: self.cleaned_data.get(key) if key not in self.errors else None
            for key in ("after", "before")
        }


class VotesPageForm(forms.Form):
    """The drill-down's day (from the throughput table) and page position."""

    day = forms.DateField(required=False, input_formats=["%Y-%m-%d"])
    before = forms.IntegerField(min_value=1, max_value=ID_MAX, required=False)

    def values(self) -> dict[str, Any]:
        """``day`` and ``before``, each None when absent or invalid."""
        self.is_valid()
        return {
            key: self.cleaned_data.get(key) if key not in self.errors else None
            for key in ("day", "before")
        }
