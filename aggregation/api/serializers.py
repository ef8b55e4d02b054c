"""Input and output serializers of the dataset API."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import Split

from ..export.rows import ROW_FIELDS, SCALE_FIELDS, VOTES_FIELD
from ..models import DatasetFile
from ..selectors import export as selectors_export


def _user(context: dict[str, Any]) -> Any:
    request = context.get("request")
    return getattr(request, "user", None)


def _absolute(context: dict[str, Any], path: str) -> str:
    request = context.get("request")
    return request.build_absolute_uri(path) if request is not None else path


class ProjectOutSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    description = serializers.CharField()
    versions = serializers.IntegerField(source="n_versions", help_text="Ready versions.")
    latest_version = serializers.IntegerField(allow_null=True)
    url = serializers.SerializerMethodField()

    def get_url(self, project: Any) -> str:
        return _absolute(self.context, reverse("api-versions", args=[project.slug]))


class FileOutSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=DatasetFile.Kind.choices)
    name = serializers.SerializerMethodField()
    size = serializers.IntegerField(help_text="Bytes.")
    sha256 = serializers.CharField(help_text="Also the download's ETag.")
    url = serializers.SerializerMethodField()

    def get_name(self, record: DatasetFile) -> str:
        return record.file.name.rsplit("/", 1)[-1]

    def get_url(self, record: DatasetFile) -> str:
        version = record.version
        path = reverse("api-version-file", args=[version.project.slug, version.number, record.kind])
        return _absolute(self.context, path)


class VersionOutSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    row_count = serializers.IntegerField()
    include_votes = serializers.BooleanField()
    include_seeds = serializers.BooleanField()
    data_sha256 = serializers.SerializerMethodField(
        help_text="Digest of the data files' checksums: equal for equal content."
    )
    files = FileOutSerializer(many=True)
    url = serializers.SerializerMethodField()
    rows_url = serializers.SerializerMethodField()

    def to_representation(self, version: Any) -> dict[str, Any]:
        """The version, listing only the files the requesting user may download."""
        data = super().to_representation(version)
        user = _user(self.context)
        data["files"] = [
            f
            for f in data["files"]
            if selectors_export.version_file_readable(user=user, version=version, kind=f["kind"])
        ]
        return data

    def get_data_sha256(self, version: Any) -> str | None:
        return (version.manifest or {}).get("data_sha256")

    def get_url(self, version: Any) -> str:
        return _absolute(
            self.context, reverse("api-version", args=[version.project.slug, version.number])
        )

    def get_rows_url(self, version: Any) -> str:
        return _absolute(
            self.context, reverse("api-version-rows", args=[version.project.slug, version.number])
        )


class VersionDetailOutSerializer(VersionOutSerializer):
    manifest = serializers.SerializerMethodField(
        help_text="The version's manifest.json; for a non-lead without the per-annotator tables."
    )

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_manifest(self, version: Any) -> dict[str, Any]:
        return selectors_export.manifest_readable(user=_user(self.context), version=version)


class VoteOutSerializer(serializers.Serializer):
    annotator = serializers.CharField(help_text="Pseudonym, stable within the version.")
    choice = serializers.ChoiceField(choices=["model_a", "model_b", "tie"])
    rationale = serializers.CharField()
    unsure = serializers.BooleanField(help_text="The annotator marked this answer as not sure.")
    grade = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Graded projects: +2 A much better .. 0 tie .. -2 B much better.",
    )
    score_a = serializers.IntegerField(
        required=False, allow_null=True, help_text="Pointwise projects: 1-5."
    )
    score_b = serializers.IntegerField(
        required=False, allow_null=True, help_text="Pointwise projects: 1-5."
    )


class RowOutSerializer(serializers.Serializer):
    """One exported row, in the published field order (protocol section 6)."""

    question_id = serializers.CharField()
    prompt_id = serializers.CharField()
    split = serializers.ChoiceField(choices=Split.choices)
    criterion = serializers.CharField()
    question = serializers.CharField()
    image_path = serializers.CharField(allow_null=True, help_text="Relative to the zip's root.")
    pred_a = serializers.CharField()
    pred_b = serializers.CharField()
    model_a = serializers.CharField()
    model_b = serializers.CharField()
    preference = serializers.ChoiceField(choices=["model_a", "model_b"])
    provenance = serializers.CharField(
        allow_null=True,
        help_text="How the label was gathered: human, early_stopped, panel_human, "
        "panel_overruled (published for published labels; null in versions built before).",
    )
    grades = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Graded projects: the votes' grades (+2 A much better .. -2 B much better).",
    )
    median_grade = serializers.FloatField(required=False, allow_null=True)
    scores_a = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Pointwise projects: the votes' scores of response A (1-5), in vote order.",
    )
    scores_b = serializers.ListField(child=serializers.IntegerField(), required=False)
    mean_score_a = serializers.FloatField(required=False, allow_null=True)
    mean_score_b = serializers.FloatField(required=False, allow_null=True)
    soft_label = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="Graded: votes per grade; pointwise: votes per score of each response.",
    )
    votes = VoteOutSerializer(many=True, required=False, help_text="Only in versions with votes.")

    def to_representation(self, row: Any) -> dict[str, Any]:
        data = row.data
        out = {field: data.get(field) for field in ROW_FIELDS}
        for scale_fields in SCALE_FIELDS.values():
            out.update({field: data[field] for field in scale_fields if field in data})
        if VOTES_FIELD in data:
            # Stored as JSONB, which keeps its own key order: restore the published one.
            out[VOTES_FIELD] = [
                {
                    **{k: vote.get(k) for k in ("annotator", "choice", "rationale")},
                    "unsure": bool(vote.get("unsure", False)),  # absent in older versions
                    **{k: vote[k] for k in ("grade", "score_a", "score_b") if k in vote},
                }
                for vote in data[VOTES_FIELD]
            ]
        return out


class RowsPageOutSerializer(serializers.Serializer):
    """One page of rows, as the rows endpoint answers (page-number pagination)."""

    count = serializers.IntegerField(help_text="Rows matching the filters, on all pages.")
    next = serializers.URLField(allow_null=True, help_text="The next page, or null.")
    previous = serializers.URLField(allow_null=True, help_text="The previous page, or null.")
    results = RowOutSerializer(many=True)


def split_filter() -> serializers.ChoiceField:
    """The ``split`` filter of a list: one of the splits; an empty or unknown value is a 400."""
    allowed = " or ".join(Split.values)
    return serializers.ChoiceField(
        choices=Split.choices,
        required=False,
        error_messages={"invalid_choice": f'"{{input}}" is not a split: use {allowed}.'},
    )


class RowsQuerySerializer(serializers.Serializer):
    split = split_filter()
    criterion = serializers.SlugField(max_length=60, required=False)
    page = serializers.IntegerField(min_value=1, required=False)
    page_size = serializers.IntegerField(min_value=1, max_value=1000, required=False)


class ErrorOutSerializer(serializers.Serializer):
    detail = serializers.CharField()
