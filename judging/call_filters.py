"""The call inspector's filters, read from the query string; a bad value falls back to none."""

from __future__ import annotations

from collections.abc import Iterable

from django import forms

from .models import JudgeCall
from .selectors.calls import CallFilters


class CallQueryForm(forms.Form):
    """Parse method, criterion, a question id search and the page of the call inspector."""

    method = forms.ChoiceField(choices=JudgeCall.ParseMethod.choices, required=False)
    criterion = forms.CharField(required=False, max_length=60)
    q = forms.CharField(required=False, max_length=300)
    page = forms.IntegerField(required=False, min_value=1)

    def filters(self, *, criteria: Iterable[str]) -> CallFilters:
        """The valid values given; a criterion the run has no row of reads as not given."""
        self.is_valid()
        data = self.cleaned_data
        criterion = data.get("criterion") or ""
        return CallFilters(
            method=data.get("method") or "",
            criterion=criterion if criterion in set(criteria) else "",
            search=data.get("q") or "",
            page=data.get("page"),
        )
