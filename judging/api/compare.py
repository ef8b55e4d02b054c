"""REST endpoint: two judges compared on the same rows (the paired tests of the compare page)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.models import Split

from ..paired import A_BETTER, B_BETTER, NOT_DISTINGUISHABLE, UNDEFINED
from ..selectors.compare import judge_scored, judges_paired
from ..selectors.leaderboard import version_get_for_user

VERDICTS = [A_BETTER, B_BETTER, NOT_DISTINGUISHABLE, UNDEFINED]


class CompareQuerySerializer(serializers.Serializer):
    """The two judges and the split; each must name a judge scored on that split."""

    a = serializers.CharField(max_length=200, help_text="Judge A (a judge scored on the split).")
    b = serializers.CharField(max_length=200, help_text="Judge B (a judge scored on the split).")
    split = serializers.ChoiceField(
        choices=Split.choices,
        error_messages={
            "invalid_choice": f'"{{input}}" is not a split: use {" or ".join(Split.values)}.'
        },
    )


class PairedFigureSerializer(serializers.Serializer):
    """One tested figure: each judge's value, the difference and the test after Holm."""

    key = serializers.CharField(help_text="A criterion key, or pacc / cmr / tos / avg / overall.")
    test = serializers.ChoiceField(choices=["mcnemar", "bootstrap"])
    a = serializers.FloatField(allow_null=True, help_text="Judge A's figure, percent.")
    b = serializers.FloatField(allow_null=True, help_text="Judge B's figure, percent.")
    diff = serializers.FloatField(allow_null=True, help_text="A minus B, percentage points.")
    n = serializers.IntegerField(
        help_text="Rows (criteria, Overall, Avg), prompts (PAcc, TOS) or conflicting pairs (CMR)."
    )
    p = serializers.FloatField(
        allow_null=True, help_text="Exact McNemar or bootstrap p, two-sided."
    )
    ci = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        min_length=2,
        max_length=2,
        help_text="Paired bootstrap 95% interval of the difference (headline figures).",
    )
    only_a = serializers.IntegerField(
        allow_null=True, help_text="McNemar b: rows only A gets right."
    )
    only_b = serializers.IntegerField(
        allow_null=True, help_text="McNemar c: rows only B gets right."
    )
    p_holm = serializers.FloatField(allow_null=True, help_text="Holm-adjusted over the comparison.")
    significant = serializers.BooleanField()
    verdict = serializers.ChoiceField(choices=VERDICTS)


class PairedComparisonSerializer(serializers.Serializer):
    judge_a = serializers.CharField()
    judge_b = serializers.CharField()
    split = serializers.CharField()
    alpha = serializers.FloatField()
    n_boot = serializers.IntegerField()
    seed = serializers.IntegerField()
    family = serializers.IntegerField(help_text="Figures in Holm's family (those with a p).")
    criteria = PairedFigureSerializer(many=True, help_text="Exact McNemar per criterion.")
    headline = PairedFigureSerializer(many=True, help_text="Paired bootstrap differences.")


def _unknown_judges(version: Any, split: str, query: dict[str, str]) -> dict[str, list[str]]:
    return {
        name: [f"No judge {query[name]!r} is scored on the {split} split of this version."]
        for name in ("a", "b")
        if not judge_scored(version=version, split=split, judge=query[name])
    }


@extend_schema(
    operation_id="judges_compare",
    summary="Two judges compared on the same rows: paired tests, Holm-corrected",
    description=(
        "Per criterion the exact McNemar test; for PAcc, CMR, TOS, Avg and Overall the "
        "difference A minus B with a paired prompt bootstrap interval (2000 draws, seed 0, the "
        "same prompts for both judges); Holm's correction over every figure. The figures of the "
        "compare page."
    ),
    parameters=[CompareQuerySerializer],
    responses={
        200: PairedComparisonSerializer,
        400: OpenApiResponse(
            OpenApiTypes.OBJECT,
            description="A missing or unknown judge or split: each parameter with its messages "
            '(`{"a": ["No judge \'x\' is scored on the reasoning split of this version."]}`).',
        ),
    },
    tags=["judging"],
)
@api_view(["GET"])
def judges_compare(request: Request, slug: str, number: int) -> Response:
    version = version_get_for_user(user=request.user, slug=slug, number=number)
    query = CompareQuerySerializer(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    values = query.validated_data
    unknown = _unknown_judges(version, values["split"], values)
    if unknown:
        return Response(unknown, status=status.HTTP_400_BAD_REQUEST)
    paired = judges_paired(
        version=version, split=values["split"], judge_a=values["a"], judge_b=values["b"]
    )
    if paired is None:  # scored, yet no run covers the split any more
        detail = {"split": [f"The two judges have no verdicts on the {values['split']} split."]}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    body = {"judge_a": values["a"], "judge_b": values["b"], **paired.as_dict()}
    return Response(PairedComparisonSerializer(body).data)
