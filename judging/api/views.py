"""REST endpoints: submit a judge's predictions for a dataset version, read its scorecards."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import ParseError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from aggregation.models import DatasetVersion
from annotation.models import Split
from core.auth import PREDICTIONS_SCOPE, token_scopes
from core.models import ApiToken
from core.permissions import get_project_for_user, is_lead

from ..models import JudgeRun, Scorecard
from ..selectors import leaderboard as selectors
from ..services import scoring as services
from .parsers import BoundedJSONParser
from .serializers import (
    PredictionsFileSerializer,
    PredictionsJsonSerializer,
    ScorecardDetailSerializer,
    ScorecardSerializer,
    ScorecardsQuerySerializer,
    UploadErrorSerializer,
    UploadResultSerializer,
)


def _version(request: Request, slug: str, number: int) -> DatasetVersion:
    project = get_project_for_user(request.user, slug)
    return selectors.version_get(project=project, number=number)


def _check_may_submit(request: Request) -> None:
    """Only the lead submits predictions (as on the web); a token also needs the scope."""
    if not is_lead(request.user):
        raise PermissionDenied("Only the project lead submits predictions.")
    if isinstance(request.auth, ApiToken) and PREDICTIONS_SCOPE not in token_scopes(request.auth):
        raise PermissionDenied(
            "This API token is read-only; submitting predictions needs a token with the "
            f"'{PREDICTIONS_SCOPE}' scope."
        )


def _as_file(items: list[dict[str, Any]]) -> io.BytesIO:
    # The list goes through the same reader as an uploaded file: item n is line n.
    data = io.BytesIO("\n".join(json.dumps(item) for item in items).encode())
    data.name = "predictions.jsonl"
    return data


def _error_response(
    detail: str, errors: list[dict[str, Any]], *, with_message: bool = True
) -> Response:
    """A 400 in the one shape the schema documents: ``detail`` and ``errors`` (line, field)."""
    if with_message:
        errors = [{**error, "message": detail} for error in errors]
    return Response({"detail": detail, "errors": errors}, status=status.HTTP_400_BAD_REQUEST)


def _flat_errors(errors: Any, prefix: str = "") -> Iterator[dict[str, Any]]:
    """Serializer errors as ``{"line", "field", "message"}``; ``predictions`` items are lines."""
    if isinstance(errors, dict):
        for key, value in errors.items():
            if prefix == "predictions" and str(key).isdigit():
                for error in _flat_errors(value, prefix):
                    yield {**error, "line": int(key) + 1}
                continue
            name = prefix if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else key)
            yield from _flat_errors(value, name)
    elif isinstance(errors, list):
        for value in errors:
            yield from _flat_errors(value, prefix)
    else:
        yield {"line": None, "field": prefix or None, "message": str(errors)}


@extend_schema(
    operation_id="predictions_submit",
    summary="Submit a judge's predictions for a dataset version",
    description=(
        "Stores the predictions as one run of the judge (or several, when the lines carry a "
        "`run`), then recomputes the judge's scorecards (all runs majority-voted). JSON body "
        "with a `predictions` list, or a multipart upload with a `file`. All or nothing: a bad "
        "line refuses the whole submission, naming the line and the field. Needs an API token "
        "with the `predictions` scope, or a lead's session. JSON bodies are limited to "
        f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 2**20} MB; send larger sets (or raw judge "
        "outputs) as a file."
    ),
    request={
        "application/json": PredictionsJsonSerializer,
        "multipart/form-data": PredictionsFileSerializer,
    },
    responses={
        201: UploadResultSerializer,
        400: OpenApiResponse(UploadErrorSerializer, description="A bad line or parameter."),
        401: OpenApiResponse(description="No or unknown credentials."),
        403: OpenApiResponse(description="Read-only token, or not the lead."),
    },
    tags=["judging"],
)
@api_view(["POST"])
@parser_classes([BoundedJSONParser, MultiPartParser])
def predictions_submit(request: Request, slug: str, number: int) -> Response:
    _check_may_submit(request)
    version = _version(request, slug, number)
    try:
        payload = request.data
    except ParseError as exc:
        return _error_response(str(exc.detail), [{"line": None, "field": None}])
    is_file = request.content_type.startswith("multipart/")
    serializer = (PredictionsFileSerializer if is_file else PredictionsJsonSerializer)(data=payload)
    if not serializer.is_valid():
        errors = list(_flat_errors(serializer.errors))
        return _error_response(
            f"{errors[0]['field']}: {errors[0]['message']}", errors, with_message=False
        )
    data = serializer.validated_data
    upload = data.get("file") or _as_file(data["predictions"])
    try:
        result = services.judge_run_upload(
            version=version,
            judge=data.get("judge") or "",
            file=upload,
            run_index=data.get("run_index"),
            by=request.user,
            lenient=data["lenient"],
            split=data.get("split") or None,
            template_hash=data.get("template_hash") or "",
            source=JudgeRun.Source.API,
            tie_margin=data.get("tie_margin") or 0.0,
        )
    except services.UploadRejected as exc:
        return _error_response(exc.message, exc.errors, with_message=False)
    body = UploadResultSerializer(
        {"runs": result.runs, "scorecards": result.scorecards, "warnings": result.warnings},
        context={"request": request},
    ).data
    return Response(body, status=status.HTTP_201_CREATED)


@extend_schema(
    operation_id="scorecards_list",
    summary="The scorecards of a dataset version",
    description="One entry per judge and split, best PAcc first; filter with `split` / `judge`.",
    parameters=[ScorecardsQuerySerializer],
    responses={
        200: ScorecardSerializer(many=True),
        400: OpenApiResponse(
            OpenApiTypes.OBJECT,
            description="A bad filter: each parameter with its messages "
            '(`{"split": ["\\"x\\" is not a valid choice."]}`).',
        ),
    },
    tags=["judging"],
)
@api_view(["GET"])
def scorecards_list(request: Request, slug: str, number: int) -> Response:
    version = _version(request, slug, number)
    query = ScorecardsQuerySerializer(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    cards = Scorecard.objects.filter(version=version).select_related("version__project")
    for name in ("split", "judge"):
        if name in query.validated_data:
            cards = cards.filter(**{name: query.validated_data[name]})
    cards = cards.order_by("split", "-pacc", "judge")
    return Response(ScorecardSerializer(cards, many=True, context={"request": request}).data)


@extend_schema(
    operation_id="scorecard_detail",
    summary="One judge's scorecard on one split, with every figure, count and CI",
    parameters=[
        OpenApiParameter("split", OpenApiTypes.STR, OpenApiParameter.PATH, enum=Split.values),
    ],
    responses={200: ScorecardDetailSerializer, 404: OpenApiResponse(description="No such card.")},
    tags=["judging"],
)
@api_view(["GET"])
def scorecard_detail(request: Request, slug: str, number: int, split: str, judge: str) -> Response:
    version = _version(request, slug, number)
    card = selectors.scorecard_get(version=version, judge=judge, split=split)
    return Response(ScorecardDetailSerializer(card, context={"request": request}).data)
