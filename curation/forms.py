"""Forms of the lead's curation page: a run (with or without a new file), promotion, the
pair browser's filters."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from annotation.importing.limits import size_text
from annotation.importing.sources import unsafe_path
from annotation.importing.uploads import UPLOAD_SUFFIXES, upload_size_problem
from annotation.models import Split
from judging.models import JudgeConfig

from .filters import FILTERS, LENGTH_UNITS
from .services.pipeline import RunOptions

FILTER_CHOICES = [
    ("length", "Length: drop pairs whose length ratio A/B is outside 0.7–1.4"),
    (
        "correctness",
        "Correctness (reasoning): keep pairs whose answers are both right or both wrong",
    ),
    (
        "ensemble",
        "Ensemble: drop pairs on which all judges give the same overall preference",
    ),
]
SEED_MAX = 2**31 - 1


class CurationForm(forms.Form):
    file = forms.FileField(
        required=False,
        label="Generations file",
        help_text="JSONL or Parquet, one prompt per line with its responses, or a zip holding "
        "one with its images. Leave empty to re-run on the generations already stored.",
        widget=forms.ClearableFileInput(attrs={"accept": ",".join(UPLOAD_SUFFIXES)}),
    )
    images = forms.CharField(required=False, max_length=300, label="Images folder in the zip")
    pairs_per_prompt = forms.IntegerField(
        min_value=0, max_value=50, initial=2, label="Cross-model pairs per prompt"
    )
    same_model = forms.BooleanField(
        required=False,
        label="Same-model pairs",
        help_text="Per prompt and model with several samples: the two furthest apart "
        "(cosine distance of TF-IDF vectors).",
    )
    filters = forms.MultipleChoiceField(
        required=False,
        choices=FILTER_CHOICES,
        initial=list(FILTERS),
        widget=forms.CheckboxSelectMultiple,
        label="Filters, applied in this order",
    )
    length_unit = forms.ChoiceField(
        choices=[(u, u) for u in LENGTH_UNITS], initial="words", label="Length unit"
    )
    judges = forms.ModelMultipleChoiceField(
        queryset=JudgeConfig.objects.none(),
        to_field_name="name",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Ensemble judges",
        help_text="Judge configs whose overall preference the judge runner asks, in both "
        "orders (answers are cached). None ticked: the verdicts in the file.",
    )
    seed = forms.IntegerField(min_value=0, max_value=SEED_MAX, initial=0, label="Random seed")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["file"].help_text += f" At most {size_text(settings.UPLOAD_MAX_BYTES)}."
        self.fields["judges"].queryset = JudgeConfig.objects.order_by("name")

    def clean_file(self):
        file = self.cleaned_data.get("file")
        if file is None:
            return None
        if not file.name.lower().endswith(UPLOAD_SUFFIXES):
            raise forms.ValidationError("Upload a .jsonl, .parquet or .zip file.")
        problem = upload_size_problem(file)
        if problem:
            raise forms.ValidationError(problem)
        return file

    def clean_images(self) -> str:
        images = (self.cleaned_data.get("images") or "").strip().strip("/")
        reason = unsafe_path(images) if images else None
        if reason:
            raise forms.ValidationError(f"{reason}: {images!r}")
        return images

    def options(self) -> RunOptions:
        data = self.cleaned_data
        return RunOptions(
            pairs_per_prompt=data["pairs_per_prompt"],
            same_model=data["same_model"],
            filters=tuple(f for f in FILTERS if f in data["filters"]),
            seed=data["seed"],
            length_unit=data["length_unit"],
            judges=tuple(c.name for c in data.get("judges") or ()),
        )


class PromoteForm(forms.Form):
    count = forms.IntegerField(
        required=False,
        min_value=1,
        label="Pairs to promote",
        help_text="Leave empty for every kept pair; a number picks that many, keeping each "
        "split and source at its share.",
    )
    calibration_seeds = forms.IntegerField(
        min_value=0,
        initial=0,
        label="Of them, calibration seed samples",
        help_text="Seed samples are labeled by everyone in the calibration round.",
    )
    seed = forms.IntegerField(min_value=0, max_value=SEED_MAX, initial=0, label="Random seed")


STATUS_CHOICES = [("", "All pairs"), ("kept", "Kept"), *[(f, f"Removed by {f}") for f in FILTERS]]


class PairFilterForm(forms.Form):
    split = forms.ChoiceField(required=False, choices=[("", "All splits"), *Split.choices])
    source = forms.CharField(required=False, max_length=120)
    status = forms.ChoiceField(required=False, choices=STATUS_CHOICES)
    page = forms.IntegerField(required=False, min_value=1, max_value=10**6)
