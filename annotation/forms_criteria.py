"""Forms of the criteria controls on the settings page."""

from __future__ import annotations

from typing import Any

from django import forms

from . import scales
from .models import Criterion, Split


class CriterionAddForm(forms.ModelForm):
    """A new criterion: its split, key (as published in exports), name and description."""

    class Meta:
        model = Criterion
        fields = ["split", "key", "name", "description"]
        labels = {"key": "Key (as in the exported rows, e.g. visual-grounding)"}
        widgets = {"description": forms.Textarea(attrs={"rows": 4})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["split"].choices = [("", "Choose a split…"), *Split.choices]

    def validate_unique(self) -> None:
        # The service decides: a removed criterion with this key is restored, not refused.
        pass


class CriterionRemoveForm(forms.Form):
    """Removing a criterion; with votes on it the lead ticks ``confirm``."""

    confirm = forms.BooleanField(required=False)


class CriterionMoveForm(forms.Form):
    direction = forms.ChoiceField(
        choices=[("up", "up"), ("down", "down")],
        error_messages={"required": "Move up or down.", "invalid_choice": "Move up or down."},
    )


class CriterionRubricForm(forms.Form):
    """A pointwise project's rubric of one criterion: what each score 1-5 means."""

    def __init__(self, *args: Any, criterion: Criterion, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rubric = criterion.rubric if isinstance(criterion.rubric, dict) else {}
        for score in scales.SCORES:
            self.fields[f"rubric_{score}"] = forms.CharField(
                label=f"Score {score}",
                required=True,
                max_length=RUBRIC_LEVEL_MAX_CHARS,
                initial=rubric.get(str(score), ""),
                error_messages={"required": f"Say what a score of {score} means."},
                widget=forms.TextInput(),
            )

    def rubric(self) -> dict[str, str]:
        """The cleaned rubric, ``{"1": ..., "5": ...}``."""
        return {str(s): self.cleaned_data[f"rubric_{s}"].strip() for s in scales.SCORES}


RUBRIC_LEVEL_MAX_CHARS = 300
