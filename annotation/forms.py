"""Forms for the annotation views: labeling, problem reports, calibration and members."""

from __future__ import annotations

import math
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator
from django.http import HttpResponse

from core.http import MESSAGE_HEADER

from .ab import SHOWN_CHOICES
from .importing.limits import NOTE_MAX_CHARS, RATIONALE_MAX_CHARS
from .models import Choice, Criterion, ProblemReport, Project, Sample, Split

# A vote's time is measured by the page; anything beyond this is an idle tab, not work.
MAX_SECONDS = 3600.0
# Ids are BigAutoField: a larger number names no row, so it is refused as malformed.
ID_MAX = 2**63 - 1
ID_ERRORS = {"required": "This field is required.", "invalid": "Enter a whole number."}


def form_errors(form: forms.Form) -> dict[str, str]:
    """One message per field, ``field: message`` for errors of the whole form."""
    return {field: " ".join(messages) for field, messages in form.errors.items()}


def form_error_text(form: forms.Form) -> str:
    """All the errors of a form in one line, each named by its field."""
    return " ".join(
        f"{field}: {message}" if field != "__all__" else message
        for field, message in form_errors(form).items()
    )


def refusal(form: forms.Form) -> HttpResponse:
    """A 400 naming each bad field; htmx shows its header as an error toast (static/js/app.js)."""
    message = form_error_text(form)
    response = HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    response[MESSAGE_HEADER] = message
    return response


class LimitedTextField(forms.CharField):
    """Optional free text with a length limit whose message says which text and by how much."""

    def __init__(self, what: str, *, max_length: int, **kwargs: Any) -> None:
        super().__init__(required=False, max_length=max_length, **kwargs)
        self.what = what
        self.validators = [v for v in self.validators if not isinstance(v, MaxLengthValidator)]

    def validate(self, value: str) -> None:
        super().validate(value)
        if self.max_length is not None and len(value) > self.max_length:
            raise ValidationError(
                f"The {self.what} is longer than {self.max_length:,} characters ({len(value):,}).",
                code="max_length",
            )


class VoteForm(forms.Form):
    """A vote submitted from the labeling screen; the ids are looked up by the service."""

    sample_id = forms.IntegerField(min_value=1, max_value=ID_MAX, error_messages=ID_ERRORS)
    criterion_id = forms.IntegerField(min_value=1, max_value=ID_MAX, error_messages=ID_ERRORS)
    choice = forms.ChoiceField(
        choices=[(c, c) for c in SHOWN_CHOICES],
        error_messages={"required": "Choose A, B or tie.", "invalid_choice": "Choose A, B or tie."},
    )
    rationale = LimitedTextField("rationale", max_length=RATIONALE_MAX_CHARS)
    unsure = forms.BooleanField(required=False)
    # Measured by the page, not typed: a value that does not parse counts as 0 rather than
    # costing the annotator their vote.
    seconds = forms.CharField(required=False)

    # Graded and pointwise projects: the answer's values, checked by the voting service
    # (annotation.services.voting.shown_answer), which names the field at fault.
    grade = forms.CharField(required=False, max_length=4)
    score_left = forms.CharField(required=False, max_length=4)
    score_right = forms.CharField(required=False, max_length=4)

    ID_FIELDS = ("sample_id", "criterion_id")

    def __init__(self, *args: Any, scale: str = "pairwise", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if scale != "pairwise":
            # The pairwise choice is derived from the grade or the scores.
            self.fields["choice"].required = False

    def clean_seconds(self) -> float:
        try:
            value = float(self.cleaned_data["seconds"] or 0)
        except ValueError:
            return 0.0
        if not math.isfinite(value):
            return 0.0
        return max(0.0, min(MAX_SECONDS, value))

    def id_errors(self) -> dict[str, str]:
        """Errors of the item's ids: the request does not name an item at all."""
        return {f: m for f, m in form_errors(self).items() if f in self.ID_FIELDS}


class SkipForm(forms.Form):
    """A "skip for now" from the labeling screen; the service requires the reason."""

    sample_id = forms.IntegerField(min_value=1, max_value=ID_MAX, error_messages=ID_ERRORS)
    criterion_id = forms.IntegerField(min_value=1, max_value=ID_MAX, error_messages=ID_ERRORS)
    reason = LimitedTextField("reason", max_length=NOTE_MAX_CHARS)

    ID_FIELDS = ("sample_id", "criterion_id")

    def id_errors(self) -> dict[str, str]:
        """Errors of the item's ids: the request does not name an item at all."""
        return {f: m for f, m in form_errors(self).items() if f in self.ID_FIELDS}


class ItemForm(forms.Form):
    """The item a Back link starts from; both ids or neither."""

    sample = forms.IntegerField(min_value=1, max_value=ID_MAX, required=False)
    criterion = forms.IntegerField(min_value=1, max_value=ID_MAX, required=False)

    def before(self) -> tuple[int, int] | None:
        """``(sample, criterion)`` when both are valid, else None (the latest vote)."""
        if not self.is_valid():
            return None
        sample, criterion = self.cleaned_data["sample"], self.cleaned_data["criterion"]
        return (sample, criterion) if sample and criterion else None


class ProblemReportForm(forms.Form):
    """A problem reported on a sample from the labeling screen."""

    sample_id = forms.IntegerField(min_value=1, max_value=ID_MAX, error_messages=ID_ERRORS)
    # No default: a report filed without choosing would say nothing about what is wrong.
    kind = forms.ChoiceField(
        choices=ProblemReport.Kind.choices,
        error_messages={
            "required": "Choose what is wrong with the sample.",
            "invalid_choice": "Choose what is wrong with the sample from the list.",
        },
    )
    note = LimitedTextField("note", max_length=NOTE_MAX_CHARS)


class ReportCloseForm(forms.Form):
    """The lead's answer to a problem report; reassigning names an annotator of the project."""

    outcome = forms.ChoiceField(
        choices=ProblemReport.Outcome.choices,
        error_messages={
            "required": "Choose resolve, reassign or discard.",
            "invalid_choice": "Choose resolve, reassign or discard.",
        },
    )
    to = forms.ModelChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        error_messages={"invalid_choice": "That user is not an active annotator of this project."},
    )
    note = LimitedTextField("note", max_length=NOTE_MAX_CHARS)

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["to"].queryset = get_user_model().objects.filter(
            memberships__project=project, memberships__is_active=True
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("outcome") == ProblemReport.Outcome.REASSIGNED and not data.get("to"):
            self.add_error("to", "Choose the annotator who gets the sample.")
        return data


class CalibrationFilterForm(forms.Form):
    """The discussion's filters; a value that does not parse is dropped, not an error."""

    criterion = forms.IntegerField(min_value=1, max_value=ID_MAX, required=False)
    split = forms.ChoiceField(choices=Split.choices, required=False)
    disagreements = forms.CharField(required=False, max_length=1)

    def filters(self) -> dict[str, Any]:
        """``criterion``, ``split`` and ``only_disagreements``, invalid values left out."""
        self.is_valid()
        data = self.cleaned_data
        return {
            "criterion_id": data.get("criterion") or None,
            "split": data.get("split") or None,
            "only_disagreements": data.get("disagreements") == "1",
        }


class HistorySearchForm(forms.Form):
    """The annotator's search over their own votes; a value that does not parse is dropped."""

    q = forms.CharField(required=False, max_length=200, strip=True)
    project = forms.IntegerField(min_value=1, max_value=ID_MAX, required=False)

    def filters(self) -> dict[str, Any]:
        """``query`` and ``project_id``, invalid values left out."""
        self.is_valid()
        data = getattr(self, "cleaned_data", {})
        return {"query": data.get("q") or "", "project_id": data.get("project") or None}


class PageForm(forms.Form):
    """``?page=`` of a paginated list; anything that does not parse is the first page."""

    page = forms.IntegerField(min_value=1, max_value=ID_MAX, required=False)

    def number(self) -> int:
        """The page number asked for (1 when absent or malformed)."""
        return (self.cleaned_data.get("page") or 1) if self.is_valid() else 1


class ReferenceForm(forms.Form):
    """A reference label for a seed item of the project."""

    sample_id = forms.ModelChoiceField(
        queryset=Sample.objects.none(),
        error_messages={
            "required": "Choose the seed sample (sample_id).",
            "invalid": "Choose the seed sample (sample_id).",
            "invalid_choice": "Choose a seed sample of this project (sample_id).",
        },
    )
    criterion_id = forms.ModelChoiceField(
        queryset=Criterion.objects.none(),
        error_messages={
            "required": "Choose the criterion (criterion_id).",
            "invalid": "Choose the criterion (criterion_id).",
            "invalid_choice": "Choose a criterion of this project (criterion_id).",
        },
    )
    preference = forms.ChoiceField(
        choices=Choice.choices,
        error_messages={
            "required": "Choose A, B or tie for the reference label.",
            "invalid_choice": "Choose A, B or tie for the reference label.",
        },
    )

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["sample_id"].queryset = Sample.objects.filter(project=project, is_seed=True)
        self.fields["criterion_id"].queryset = Criterion.objects.filter(project=project)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        sample, criterion = data.get("sample_id"), data.get("criterion_id")
        if sample is not None and criterion is not None and criterion.split != sample.split:
            self.add_error(
                "criterion_id", "Choose a criterion of the sample's split (criterion_id)."
            )
        return data


class MemberAddForm(forms.Form):
    """An existing, active user to add as an annotator."""

    user_id = forms.ModelChoiceField(
        queryset=get_user_model().objects.none(),
        error_messages={
            "required": "Choose a user to add.",
            "invalid_choice": "Choose a user to add.",
        },
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["user_id"].queryset = get_user_model().objects.filter(is_active=True)


class SlotReassignForm(forms.Form):
    """Where an unfinished slot goes: an active annotator of the project, or empty for open."""

    to = forms.ModelChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        error_messages={"invalid_choice": "That user is not an active annotator of this project."},
    )

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["to"].queryset = get_user_model().objects.filter(
            memberships__project=project, memberships__is_active=True
        )


class JobParamForm(forms.Form):
    """The ``?job=`` an upload page is reopened with after a plain POST; a bad id shows none."""

    job = forms.IntegerField(min_value=1, max_value=ID_MAX, required=False)

    def job_id(self) -> int | None:
        """The job's id, None when absent or not a positive whole number."""
        return self.cleaned_data.get("job") if self.is_valid() else None
