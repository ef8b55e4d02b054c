"""Forms for the aggregation views: review decisions and marks, the queue's page."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.forms import LimitedTextField
from annotation.importing.limits import NOTE_MAX_CHARS
from annotation.models import Criterion, Project, Split

from .models import ReviewDecision


class QueueStateForm(forms.Form):
    """The review queue's filters, carried by every decision form as a query string."""

    filters = forms.CharField(required=False, strip=True)


class ReviewDecisionForm(QueueStateForm):
    """Keep or discard a sample, or one criterion of it; the discard rules are the service's."""

    criterion = forms.ModelChoiceField(
        queryset=Criterion.objects.none(),
        required=False,
        error_messages={
            "invalid_choice": "The criterion is not one of this project's.",
            "invalid": "The criterion is not one of this project's.",
        },
    )
    action = forms.ChoiceField(
        choices=ReviewDecision.Action.choices,
        error_messages={
            "required": "Choose an action: keep or discard.",
            "invalid_choice": "Unknown action %(value)r: use keep or discard.",
        },
    )
    reason = forms.ChoiceField(
        choices=[("", "—"), *ReviewDecision.Reason.choices],
        required=False,
        error_messages={
            "invalid_choice": "Unknown reason %(value)r: use inconsistent, redundant or other."
        },
    )
    note = LimitedTextField("note", max_length=NOTE_MAX_CHARS)

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["criterion"].queryset = Criterion.objects.filter(project=project)


class ReviewMarkForm(QueueStateForm):
    """Mark a sample reviewed ("1", the default) or not ("0"), optionally going to the next."""

    reviewed = forms.ChoiceField(
        choices=[("1", "reviewed"), ("0", "not reviewed")],
        required=False,
        error_messages={"invalid_choice": "Use 1 or 0, not %(value)r."},
    )
    go = forms.ChoiceField(
        choices=[("next", "next")],
        required=False,
        error_messages={"invalid_choice": "Use next or leave it out, not %(value)r."},
    )

    def clean_reviewed(self) -> bool:
        return self.cleaned_data["reviewed"] != "0"


class QueuePageForm(forms.Form):
    """The page of the review queue; a page that does not parse is the first."""

    page = forms.IntegerField(min_value=1, required=False)
    after = forms.IntegerField(min_value=0, required=False)
    before = forms.IntegerField(min_value=1, required=False)

    def number(self) -> int:
        """The page asked for, 1 when none or an invalid one was."""
        return (self.cleaned_data.get("page") if self.is_valid() else None) or 1

    def keyset(self) -> dict[str, int | None]:
        """The sample id the page starts after or ends before (both None: by page number)."""
        if not self.is_valid():
            return {"after": None, "before": None}
        return {"after": self.cleaned_data.get("after"), "before": self.cleaned_data.get("before")}


class AggregationStartForm(forms.Form):
    """The split to aggregate; empty for all of them."""

    split = forms.ChoiceField(
        choices=Split.choices,
        required=False,
        error_messages={
            "invalid_choice": f"Unknown split %(value)r: expected one of {', '.join(Split.values)}."
        },
    )


class CheckboxField(forms.ChoiceField):
    """A checkbox: posted as on, 1 or true when ticked and absent when not; other values refused."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            choices=[(v, v) for v in ("on", "1", "true")],
            required=False,
            error_messages={"invalid_choice": "Tick the box or leave it out, not %(value)r."},
            **kwargs,
        )

    def clean(self, value: Any) -> bool:
        return super().clean(value) != ""


class VersionBuildForm(forms.Form):
    """What a new dataset version includes besides the labels."""

    include_votes = CheckboxField()
    include_seeds = CheckboxField()
    include_contested = CheckboxField()


#: The longest notes a lead may keep on a dataset version.
VERSION_NOTES_MAX_CHARS = 20_000


class VersionNotesForm(forms.Form):
    """The lead's notes on a dataset version (Markdown; empty clears them)."""

    notes = LimitedTextField(
        "note text",
        max_length=VERSION_NOTES_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Markdown. Shown on this page and at the end of the dataset card; the "
        "version's rows and files do not change.",
    )
