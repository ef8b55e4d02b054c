"""The predictions upload form."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django import forms

from annotation.models import Split

from .models import JudgeConfig
from .prompt import TemplateFileError, template_from_bytes, template_hash_resolve
from .runner.dialects import DEFAULT_DIALECT
from .runner.presets import PRESETS, VERIFIER_NEEDED
from .validators import validate_replica_urls

ALLOWED_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv")


class PredictionsUploadForm(forms.Form):
    judge = forms.CharField(
        max_length=200,
        help_text="The model's name as it should appear on the leaderboard, e.g. gpt-4o.",
    )
    run_index = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=999,
        label="Run index",
        help_text="Leave empty for the judge's next run; runs of one judge are majority-voted.",
    )
    template_hash = forms.CharField(
        required=False,
        max_length=64,
        label="Prompt template hash",
        help_text="Optional: identifies the judge prompt the predictions were made with.",
    )
    template = forms.FileField(
        required=False,
        label="Prompt template file",
        help_text="Optional: the template the judge was prompted with ($question, $response_1, "
        "... placeholders); its SHA-256 is stored with the run and shown on the leaderboard.",
    )
    file = forms.FileField(
        label="Predictions file",
        help_text=(
            "JSONL or CSV: question_id + prediction, or prompt_id + criterion + prediction, "
            "or the raw judge text in output or critic (the official judge outputs); "
            "or a scalar judge's score_a + score_b, or response (a / b) + score per line."
        ),
    )
    split = forms.ChoiceField(
        required=False,
        choices=[("", "All splits"), *Split.choices],
        help_text="Limit the upload to one split: lines of the other split refuse the file.",
    )
    tie_margin = forms.FloatField(
        required=False,
        min_value=0,
        initial=0,
        label="Tie margin δ",
        help_text="For a file of scores (score_a + score_b, or response + score): "
        "|score_a − score_b| ≤ δ is a tie, which counts as wrong. Ignored for verdicts.",
    )
    verifier = forms.ModelChoiceField(
        queryset=JudgeConfig.objects.all(),
        required=False,
        label="Verifier fallback",
        empty_label="None: unparsed outputs count as invalid",
        help_text="A judge config asked to read the last four lines of each output the parser "
        "cannot read, as the published evaluation does; the rows it decides are marked.",
    )
    lenient = forms.BooleanField(
        required=False,
        label="Lenient",
        help_text="Skip unknown ids, duplicates and rows of another split (counted as warnings) "
        "instead of refusing the file.",
    )

    def clean_judge(self) -> str:
        judge = self.cleaned_data["judge"].strip()
        if not judge:
            raise forms.ValidationError("Give the judge a name.")
        return judge

    def clean_tie_margin(self) -> float:
        value = self.cleaned_data.get("tie_margin")
        return 0.0 if value is None else float(value)

    def clean_template_hash(self) -> str:
        return self.cleaned_data["template_hash"].strip()

    def clean(self) -> dict:
        data = super().clean()
        try:
            data["template_hash"] = template_hash_resolve(
                upload=data.get("template"), given=data.get("template_hash") or ""
            )
        except TemplateFileError as exc:
            self.add_error(
                "template_hash" if exc.field == "template_hash" else "template", str(exc)
            )
        return data

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if Path(upload.name).suffix.lower() not in ALLOWED_SUFFIXES:
            raise forms.ValidationError(
                f"Expected a .jsonl or .csv file, got {Path(upload.name).name!r}."
            )
        return upload


class BoardQueryForm(forms.Form):
    """The split and sort of a leaderboard or scorecard; a bad value falls back to the default."""

    split = forms.ChoiceField(choices=Split.choices, required=False)
    # ``key`` or ``-key``; the selector knows the columns and ignores an unknown one.
    sort = forms.CharField(required=False, max_length=100)

    def value(self, name: str) -> str | None:
        """The field's value when it is valid and given, else None."""
        self.is_valid()
        return self.cleaned_data.get(name) or None

    def split_in(self, splits: list[str]) -> str | None:
        """The asked split when the version has it, else the version's first split."""
        wanted = self.value("split")
        if wanted in splits:
            return wanted
        return splits[0] if splits else None


class CompareQueryForm(forms.Form):
    """The two judges, split, criterion and page of the comparison; bad values are dropped."""

    a = forms.CharField(required=False, max_length=200)
    b = forms.CharField(required=False, max_length=200)
    split = forms.ChoiceField(choices=Split.choices, required=False)
    criterion = forms.CharField(required=False, max_length=60)
    page = forms.IntegerField(required=False, min_value=1)

    def values(self) -> dict:
        """The valid values given (an invalid one reads as not given)."""
        self.is_valid()
        return {k: v for k, v in self.cleaned_data.items() if v not in (None, "")}

    def pick(self, *, splits: list[str], judges_of: Callable[[str], list[str]]) -> dict:
        """The split and the two judges to compare, each the asked one when it exists.

        Defaults: the version's first split, then the split's two best judges (the board's
        order, ``judges_of(split)``). Returns split, a, b (None when missing), the split's
        judges, the criterion and the page asked for.
        """
        asked = self.values()
        split = asked.get("split") if asked.get("split") in splits else next(iter(splits), None)
        judges = judges_of(split) if split else []
        a = asked.get("a") if asked.get("a") in judges else next(iter(judges), None)
        b = (
            asked.get("b")
            if asked.get("b") in judges
            else next((j for j in judges if j != a), None)
        )
        return {
            "split": split,
            "a": a,
            "b": b,
            "judges": judges,
            "criterion": asked.get("criterion", ""),
            "page": asked.get("page"),
        }


def _config_formfield(field, **kwargs):
    """Form fields of the config: a URL without a scheme is taken as http (a local server)."""
    if field.name == "base_url":
        kwargs["assume_scheme"] = "http"
    return field.formfield(**kwargs)


class JudgeConfigForm(forms.ModelForm):
    """A judge config; the template may be uploaded as a file (its text is stored)."""

    template_file = forms.FileField(
        required=False,
        label="Prompt template file",
        help_text="Optional: a template with $criterion_name, $criterion_description, $question, "
        "$response_1 and $response_2; leave empty to keep the current one (or the default).",
    )
    clear_template = forms.BooleanField(
        required=False, label="Use the default template", help_text="Drop the stored template."
    )
    replicas = forms.CharField(
        required=False,
        label="Replicas",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Further servers of the same model, one URL per line; each call goes to the "
        "one with the fewest calls in flight, a failing one is set aside while the others go on.",
    )
    preset = forms.ChoiceField(
        required=False,
        choices=[("", "None: the settings below"), *((p.key, p.label) for p in PRESETS.values())],
        help_text="Sets temperature, top p and max tokens (and needs a verifier); bring the "
        "official prompt template as the template file.",
    )

    class Meta:
        model = JudgeConfig
        formfield_callback = _config_formfield
        fields = [
            "name",
            "model",
            "api_key_env",
            "base_url",
            "api_style",
            "api_version",
            "reasoning_effort",
            "temperature",
            "top_p",
            "max_tokens",
            "retry_max_tokens",
            "seed",
            "runs",
            "orders",
            "concurrency",
            "rpm",
            "timeout_seconds",
            "retries",
            "image_max_side",
            "budget_tokens",
            "price_input_per_million",
            "price_output_per_million",
            "currency",
            "verifier",
            "chat_template_kwargs",
            "extra_body",
        ]
        labels = {
            "api_style": "API style",
            "api_version": "API version (Azure)",
            "retry_max_tokens": "Max tokens on a retry of a cut answer",
            "chat_template_kwargs": "Chat template options (vLLM / SGLang)",
            "extra_body": "Extra request fields",
            "base_url": "Base URL",
            "api_key_env": "API key variable",
            "top_p": "Top p",
            "rpm": "Requests per minute",
            "timeout_seconds": "Timeout (seconds)",
            "image_max_side": "Image longest side (px)",
            "budget_tokens": "Token budget",
            "price_input_per_million": "Price per million input tokens",
            "price_output_per_million": "Price per million output tokens",
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        others = JudgeConfig.objects.all()
        if self.instance.pk:
            others = others.exclude(pk=self.instance.pk)
        self.fields["verifier"].queryset = others
        self.fields["replicas"].initial = "\n".join(self.instance.replica_urls or [])
        self.fields["api_style"].required = False  # left out: OpenAI chat
        for name in ("chat_template_kwargs", "extra_body"):
            self.fields[name].widget.attrs["rows"] = 2

    def clean_api_style(self) -> str:
        return self.cleaned_data.get("api_style") or DEFAULT_DIALECT

    def clean_replicas(self) -> list[str]:
        lines = [line.strip() for line in self.cleaned_data["replicas"].splitlines()]
        urls = [line for line in lines if line]
        validate_replica_urls(urls)
        self.instance.replica_urls = urls
        return urls

    def clean(self) -> dict:
        data = super().clean()
        preset = PRESETS.get(data.get("preset") or "")
        if preset is not None:
            for name, value in preset.settings:
                data[name] = value
            if preset.needs_verifier and not data.get("verifier"):
                message = VERIFIER_NEEDED.format(preset=preset.key)
                self.add_error("verifier", message[0].upper() + message[1:] + ".")
        upload = data.get("template_file")
        if data.get("clear_template"):
            self.instance.template_text, self.instance.template_name = "", ""
        elif upload is not None:
            try:
                template = template_from_bytes(upload.read(), name=Path(upload.name).name)
            except TemplateFileError as exc:
                self.add_error("template_file", str(exc))
            else:
                self.instance.template_text = template.text
                self.instance.template_name = template.name
        return data

    def _post_clean(self) -> None:
        super()._post_clean()
        # The model's clean() reports template errors under template_text, not a form field.
        if "template_text" in self.errors:
            self.add_error("template_file", self.errors.pop("template_text"))


class JudgeRunForm(forms.Form):
    """Start the judge runner on a dataset version from the leaderboard."""

    config = forms.ModelChoiceField(
        queryset=JudgeConfig.objects.all(), label="Judge config", empty_label="Choose a config…"
    )
    judge = forms.CharField(
        required=False,
        max_length=200,
        label="Leaderboard name",
        help_text="Leave empty to use the config's name.",
    )

    def clean_judge(self) -> str:
        return self.cleaned_data["judge"].strip()


class PanelForm(forms.Form):
    """The judge panel's members: one or more judge configs."""

    judges = forms.ModelMultipleChoiceField(
        queryset=JudgeConfig.objects.none(),
        to_field_name="name",
        widget=forms.CheckboxSelectMultiple,
        label="Panel judges",
        help_text="Each is asked about every (sample, criterion) in both orders, whatever its "
        "config says; answers are cached, so a re-run asks only what is missing.",
        error_messages={"required": "Tick at least one judge config for the panel."},
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.fields["judges"].queryset = JudgeConfig.objects.order_by("name")
