"""Input and output serializers of the judging API."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers

from annotation.models import Split

from ..metrics import criteria_in_order
from ..models import JudgeRun, Scorecard
from ..prompt import TemplateFileError, template_hash_resolve


class PredictionsSubmitSerializer(serializers.Serializer):
    """A judge's predictions: a ``predictions`` list (JSON) or a ``file`` (multipart)."""

    judge = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        help_text="The judge's name; may be omitted when every line names it in `judge`.",
    )
    run_index = serializers.IntegerField(
        min_value=1,
        max_value=32767,
        required=False,
        allow_null=True,
        help_text="Omit for the judge's next run (a file with a `run` column stores several).",
    )
    template_hash = serializers.CharField(max_length=64, required=False, allow_blank=True)
    template = serializers.FileField(
        required=False,
        help_text="The prompt template file the judge was run with (multipart); its SHA-256 "
        "becomes the run's template_hash. A file with an unknown placeholder is refused.",
    )
    split = serializers.ChoiceField(
        choices=Split.choices,
        required=False,
        allow_null=True,
        help_text="Limit the upload to one split; lines of the other split are errors.",
    )
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
    predictions = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        allow_empty=False,
        help_text="One object per row, as a line of a JSONL predictions file: `question_id` "
        "(or `prompt_id` + `criterion`) and `prediction` (or the raw `output` or `critic`, "
        "or a scalar judge's `score_a` + `score_b`, or `response` + `score`), optional "
        "`run`. Errors call the n-th object line n.",
    )
    file = serializers.FileField(
        required=False, help_text="A JSONL or CSV predictions file (multipart upload)."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("predictions" in attrs) == ("file" in attrs):
            raise serializers.ValidationError(
                {"predictions": "Send either a predictions list or a file, not both or neither."}
            )
        try:
            attrs["template_hash"] = template_hash_resolve(
                upload=attrs.get("template"), given=attrs.get("template_hash") or ""
            )
        except TemplateFileError as exc:
            raise serializers.ValidationError({exc.field or "template": str(exc)}) from None
        return attrs


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
