"""Input and output serializers of the judging API."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from aggregation.api.serializers import split_filter
from annotation.models import Split

from ..metrics import criteria_in_order
from ..models import JudgeRun, Scorecard
from ..prompt import TemplateFileError, template_hash_resolve


class _PredictionsOptionsSerializer(serializers.Serializer):
    """The options shared by both bodies of a predictions submission."""

    judge = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        help_text="The judge's name; may be omitted when every line names it in `judge`.",
    )
    template_hash = serializers.CharField(max_length=64, required=False, allow_blank=True)
    tie_margin = serializers.FloatField(
        required=False,
        default=0.0,
        min_value=0.0,
        help_text="For scores instead of verdicts (`score_a` + `score_b`, or `response` + "
        "`score`): |score_a - score_b| <= tie_margin is a tie, which counts as wrong.",
    )
    lenient = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Skip unknown ids, duplicates and lines of another split (reported as "
        "warnings) instead of refusing the upload.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            attrs["template_hash"] = template_hash_resolve(
                upload=attrs.get("template"), given=attrs.get("template_hash") or ""
            )
        except TemplateFileError as exc:
            raise serializers.ValidationError({exc.field or "template": str(exc)}) from None
        return attrs


@extend_schema_field({"type": "string", "format": "binary"})
class UploadField(serializers.FileField):
    """An uploaded file: a multipart part, never null (omit the part instead)."""


RUN_INDEX_HELP = "Omit for the judge's next run (a file with a `run` column stores several)."
SPLIT_HELP = "Limit the upload to one split; lines of the other split are errors."
ONE_OF = "Send either a predictions list (JSON body) or a file (multipart upload)."


class PredictionsJsonSerializer(_PredictionsOptionsSerializer):
    """A JSON body: the ``predictions`` list; ``null`` stands for an omitted option."""

    run_index = serializers.IntegerField(
        min_value=1, max_value=32767, required=False, allow_null=True, help_text=RUN_INDEX_HELP
    )
    split = serializers.ChoiceField(
        choices=Split.choices, required=False, allow_null=True, help_text=SPLIT_HELP
    )
    predictions = serializers.ListField(
        child=serializers.DictField(),
        allow_empty=False,
        error_messages={"required": ONE_OF},
        help_text="One object per row, as a line of a JSONL predictions file: `question_id` "
        "(or `prompt_id` + `criterion`) and `prediction` (or the raw `output` or `critic`, "
        "or a scalar judge's `score_a` + `score_b`, or `response` + `score`), optional "
        "`run`. Errors call the n-th object line n.",
    )


class PredictionsFileSerializer(_PredictionsOptionsSerializer):
    """A multipart upload: the ``file``. A form field cannot be null: omit an option instead
    (an empty ``split`` is every split, as a browser form sends it)."""

    run_index = serializers.IntegerField(
        min_value=1, max_value=32767, required=False, help_text=RUN_INDEX_HELP
    )
    split = serializers.ChoiceField(
        choices=Split.choices,
        required=False,
        allow_blank=True,
        help_text=f"{SPLIT_HELP} Empty: every split.",
    )
    template = UploadField(
        required=False,
        help_text="The prompt template file the judge was run with; its SHA-256 becomes the "
        "run's template_hash. A file with an unknown placeholder is refused.",
    )
    file = UploadField(
        error_messages={"required": ONE_OF},
        help_text="A JSONL or CSV predictions file.",
    )


class JudgeRunSerializer(serializers.ModelSerializer):
    stats = serializers.SerializerMethodField()

    class Meta:
        model = JudgeRun
        fields = ["id", "judge", "run_index", "template_hash", "source", "created_at", "stats"]

    def get_stats(self, run: JudgeRun) -> dict[str, Any]:
        """The parse counts (the list of unparsable rows is left to the scorecard page)."""
        return {k: v for k, v in run.stats.items() if k != "unparsable_rows"}


class ScorecardSerializer(serializers.ModelSerializer):
    """A judge's scorecard on one split: the headline figures and accuracy per criterion."""

    version = serializers.IntegerField(source="version.number", read_only=True)
    overall = serializers.SerializerMethodField()
    per_criterion = serializers.SerializerMethodField()
    counts = serializers.SerializerMethodField()
    computed_at = serializers.DateTimeField(source="created_at", read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Scorecard
        fields = [
            "judge",
            "split",
            "version",
            "runs",
            "template_hash",
            "pacc",
            "cmr",
            "tos",
            "avg",
            "overall",
            "per_criterion",
            "counts",
            "computed_at",
            "url",
        ]

    def get_overall(self, card: Scorecard) -> float | None:
        return (card.figures.get("overall") or {}).get("value")

    def get_per_criterion(self, card: Scorecard) -> dict[str, float | None]:
        """Accuracy per criterion key, in the paper's column order."""
        per = card.figures.get("per_criterion") or {}
        return {k: per[k].get("acc") for k in criteria_in_order(card.split, list(per))}

    def get_counts(self, card: Scorecard) -> dict[str, int]:
        return card.figures.get("counts") or {}

    def get_url(self, card: Scorecard) -> str:
        path = reverse(
            "api-scorecard",
            args=[card.version.project.slug, card.version.number, card.split, card.judge],
        )
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class ScorecardDetailSerializer(ScorecardSerializer):
    """Every figure, count and CI of the scorecard (the ``figures`` JSON of the metrics)."""

    figures = serializers.JSONField(read_only=True)

    class Meta(ScorecardSerializer.Meta):
        fields = [*ScorecardSerializer.Meta.fields, "figures"]


class ScorecardsQuerySerializer(serializers.Serializer):
    """The filters of the scorecards list; an empty or unknown ``split`` is refused."""

    split = split_filter()
    judge = serializers.CharField(max_length=200, required=False)


class UploadResultSerializer(serializers.Serializer):
    runs = JudgeRunSerializer(many=True)
    scorecards = ScorecardSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())


class UploadErrorSerializer(serializers.Serializer):
    class ErrorSerializer(serializers.Serializer):
        line = serializers.IntegerField(allow_null=True)
        field = serializers.CharField(allow_null=True)
        message = serializers.CharField()

    detail = serializers.CharField()
    errors = ErrorSerializer(many=True)
