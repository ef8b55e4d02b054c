"""The dataset API: projects, versions, manifests, rows and file downloads (read-only).

Authentication: an API token (``Authorization: Token <key>``) or a browser session. Who reads
which project is :func:`core.permissions.get_project_for_user`; which rows and files of
a version, :func:`~aggregation.selectors.export.version_rows_readable` and
:func:`~aggregation.selectors.export.version_file_readable` (whatever names annotators is the
lead's). Every endpoint only shows ready versions.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions, renderers
from rest_framework.decorators import api_view, permission_classes, renderer_classes
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.models import Project
from core.auth import READ_SCOPES, token_scopes
from core.models import ApiToken
from core.permissions import get_project_for_user

from ..http import CONTENT_TYPES, version_file_response
from ..models import DatasetVersion
from ..selectors import export as selectors
from . import schema  # noqa: F401  (registers the token scheme with the OpenAPI generator)
from .serializers import (
    ErrorOutSerializer,
    ProjectOutSerializer,
    RowOutSerializer,
    RowsPageOutSerializer,
    RowsQuerySerializer,
    VersionDetailOutSerializer,
    VersionOutSerializer,
)

TAGS = ["datasets"]
AUTH_ERRORS = {
    401: OpenApiResponse(ErrorOutSerializer, description="No, unknown or revoked token."),
    403: OpenApiResponse(ErrorOutSerializer, description="Not allowed to read this project."),
}
LEAD_ONLY_ERRORS = {
    **AUTH_ERRORS,
    403: OpenApiResponse(
        ErrorOutSerializer,
        description=(
            "Not allowed to read this project, or the content names annotators and you are not "
            "a lead: rows and data files of a version with votes, and the manifest file."
        ),
    ),
}


class CanReadDatasets(permissions.BasePermission):
    """Logged in (session) or a live token whose scope includes reading."""

    message = "This API token's scope does not allow reading datasets."

    def has_permission(self, request: Request, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if isinstance(request.auth, ApiToken):
            return bool(token_scopes(request.auth) & READ_SCOPES)
        return True


class RowsPagination(PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class AnyMediaRenderer(renderers.BaseRenderer):
    """Lets a download answer any ``Accept``; the body is already bytes."""

    media_type = "*/*"
    format = "file"
    charset = None

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context=None):
        return data if isinstance(data, bytes) else renderers.JSONRenderer().render(data)


def _project(request: Request, slug: str) -> Project:
    return get_project_for_user(request.user, slug)


def _version(request: Request, slug: str, number: int) -> DatasetVersion:
    project = _project(request, slug)
    return get_object_or_404(selectors.versions_ready(project=project), number=number)


@extend_schema(
    operation_id="projects_list",
    summary="The projects you may read",
    responses={200: ProjectOutSerializer(many=True), **AUTH_ERRORS},
    tags=TAGS,
)
@api_view(["GET"])
@permission_classes([CanReadDatasets])
def projects_list(request: Request) -> Response:
    projects = selectors.projects_readable(user=request.user)
    return Response(ProjectOutSerializer(projects, many=True, context={"request": request}).data)


@extend_schema(
    operation_id="versions_list",
    summary="A project's ready dataset versions, newest first",
    responses={200: VersionOutSerializer(many=True), **AUTH_ERRORS},
    tags=TAGS,
)
@api_view(["GET"])
@permission_classes([CanReadDatasets])
def versions_list(request: Request, slug: str) -> Response:
    versions = selectors.versions_ready(project=_project(request, slug))
    return Response(VersionOutSerializer(versions, many=True, context={"request": request}).data)


@extend_schema(
    operation_id="version_detail",
    summary="One dataset version with its manifest and files",
    description=(
        "For anyone but a lead, `manifest` leaves out the agreement figures per annotator and "
        "the pairwise table, and `files` lists only the files they may download."
    ),
    responses={200: VersionDetailOutSerializer, 404: ErrorOutSerializer, **AUTH_ERRORS},
    tags=TAGS,
)
@api_view(["GET"])
@permission_classes([CanReadDatasets])
def version_detail(request: Request, slug: str, number: int) -> Response:
    version = _version(request, slug, number)
    return Response(VersionDetailOutSerializer(version, context={"request": request}).data)


@extend_schema(
    operation_id="version_rows",
    summary="A version's rows, paginated, optionally filtered by split and criterion",
    description=(
        "The rows of a version built with votes hold every annotator's vote and rationale: "
        "only a lead may read them (403 for anyone else, by session or token). The rows of a "
        "label-only version are open to the project's members."
    ),
    parameters=[RowsQuerySerializer],
    responses={
        200: RowsPageOutSerializer,
        400: OpenApiResponse(
            OpenApiTypes.OBJECT,
            description="A bad filter or page: each parameter with its messages, or `detail`.",
        ),
        **LEAD_ONLY_ERRORS,
    },
    tags=TAGS,
)
@api_view(["GET"])
@permission_classes([CanReadDatasets])
def version_rows(request: Request, slug: str, number: int) -> Response:
    version = _version(request, slug, number)
    if not selectors.version_rows_readable(user=request.user, version=version):
        raise PermissionDenied(selectors.LEAD_ONLY_MESSAGE)
    # A plain dict: an empty value is refused, not taken for an absent one (as a form's would).
    query = RowsQuerySerializer(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    rows = selectors.version_rows(
        version=version,
        split=query.validated_data.get("split"),
        criterion=query.validated_data.get("criterion"),
    )
    paginator = RowsPagination()
    page = paginator.paginate_queryset(rows, request)
    return paginator.get_paginated_response(RowOutSerializer(page, many=True).data)


def _file_bodies(status: int, description: str) -> dict[tuple[int, str], OpenApiResponse]:
    """A download's answer ``status`` in every media type a kind of file is served as."""
    body = OpenApiResponse(OpenApiTypes.BINARY, description=description)
    return {(status, media_type): body for media_type in dict.fromkeys(CONTENT_TYPES.values())}


@extend_schema(
    operation_id="version_file",
    summary="Download one file of a version (streamed; Range and ETag supported)",
    description=(
        "`kind` is one of "
        + ", ".join(f"{kind} (`{media}`)" for kind, media in CONTENT_TYPES.items())
        + ". The ETag is the file's SHA-256: send it in `If-None-Match` to get 304 when "
        "unchanged. One byte range per GET (`Range: bytes=0-1023`, `bytes=1024-`, "
        "`bytes=-512`) answers 206 with Content-Range; a range starting past the end answers "
        "416 with `Content-Range: bytes */<size>`. A Range in another unit, several ranges, "
        "or a suffix range of an empty file get the whole file (200).\n\n"
        "Lead-only (403 for anyone else): the manifest file (its agreement tables name "
        "annotators by pseudonym) and, in a version built with votes, every data file (each "
        "holds the votes and rationales). A member downloads the data files of a label-only "
        "version."
    ),
    parameters=[
        OpenApiParameter("kind", OpenApiTypes.STR, OpenApiParameter.PATH, enum=list(CONTENT_TYPES)),
        OpenApiParameter("Range", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False),
        OpenApiParameter(
            "If-None-Match", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False
        ),
        # The renderers' ?format= picks nothing a client needs: the file is what it is.
        OpenApiParameter("format", exclude=True),
    ],
    responses={
        **_file_bodies(200, "The file, in its kind's media type."),
        **_file_bodies(206, "The requested range, in the file's media type."),
        304: OpenApiResponse(description="Not modified (ETag matched)."),
        404: ErrorOutSerializer,
        (416, "text/plain"): OpenApiResponse(
            OpenApiTypes.STR,
            description="Range not satisfiable: the reason; `Content-Range: bytes */<size>`.",
        ),
        **LEAD_ONLY_ERRORS,
    },
    tags=TAGS,
)
@api_view(["GET", "HEAD"])
@permission_classes([CanReadDatasets])
@renderer_classes([renderers.JSONRenderer, AnyMediaRenderer])
def version_file(request: Request, slug: str, number: int, kind: str) -> HttpResponse:
    version = _version(request, slug, number)
    record = selectors.version_file_for(user=request.user, version=version, kind=kind)
    return version_file_response(request, record)
