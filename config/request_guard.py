"""Requests refused before any view runs: a NUL in the address, or a body over the size limits.

A NUL character (``%00``) in a path, a query string or a form field reaches no valid page or
field, and PostgreSQL and the file system refuse it deep inside a view (a 500); it is answered
400 here. A
body larger than the limits of ``config.settings`` (``UPLOAD_MAX_BYTES`` for multipart uploads,
``DATA_UPLOAD_MAX_MEMORY_SIZE`` for anything else) is answered 413 before it is read, and the
size error Django raises while reading a body becomes a 413 too. The API gets ``{"detail": ...}``,
a browser a page in the site's layout; an address under /api/ that no route matches gets a JSON
404 as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from annotation.importing.limits import size_text
from core.http import MESSAGE_HEADER

API_PREFIX = "/api/"
FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


def wants_json(request: HttpRequest) -> bool:
    """API paths and clients asking for JSON get a JSON error body."""
    return request.path.startswith(API_PREFIX) or "application/json" in request.headers.get(
        "Accept", ""
    )


def refusal(
    request: HttpRequest, status: int, title: str, message: str, *, field: str | None = None
) -> HttpResponse:
    """The error as ``{"detail": message}`` for the API, as a page otherwise.

    With ``field`` the API body also lists it as ``errors`` (line, field, message), the shape
    of the API's other 400 answers about a field.
    """
    if wants_json(request):
        body: dict[str, Any] = {"detail": message}
        if field is not None:
            body["errors"] = [{"line": None, "field": field, "message": message}]
        response = JsonResponse(body, status=status)
    else:
        html = render_to_string(
            "request_refused.html", {"title": title, "message": message}, request=request
        )
        response = HttpResponse(html, status=status)
    # For htmx requests, whose error answers are not swapped in: app.js shows it as a toast.
    response[MESSAGE_HEADER] = message
    return response


def body_limit(request: HttpRequest) -> int:
    """The largest body accepted for this request's content type, in bytes."""
    if request.content_type == "multipart/form-data":
        return settings.UPLOAD_MAX_BYTES
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def too_large(request: HttpRequest, limit: int, size: int | None = None) -> HttpResponse:
    what = "uploads" if limit == settings.UPLOAD_MAX_BYTES else "request bodies"
    told = f"This request is {size_text(size)}; " if size else "This request is too large; "
    return refusal(request, 413, "Too large", f"{told}{what} are limited to {size_text(limit)}.")


def has_nul(request: HttpRequest) -> bool:
    if "\x00" in request.path or "\x00" in request.path_info:
        return True
    query = request.META.get("QUERY_STRING", "")
    return "\x00" in query or b"\x00" in unquote_to_bytes(query)


class RequestGuardMiddleware:
    """Answer 400 for a NUL in the address and 413 for a body over the limits."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if has_nul(request):
            return refusal(
                request,
                400,
                "Bad address",
                "The address contains a NUL character (%00), which no page or field accepts.",
            )
        try:
            size = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return refusal(request, 400, "Bad request", "Content-Length is not a number.")
        limit = body_limit(request)
        if size > limit:
            return too_large(request, limit, size)
        response = self.get_response(request)
        if (
            response.status_code == 404
            and request.path.startswith(API_PREFIX)
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            # An address no API route matches: Django's page, but the API speaks JSON.
            return JsonResponse({"detail": "No such API address."}, status=404)
        return response

    def process_view(self, request: HttpRequest, *args: Any) -> HttpResponse | None:
        """Parse a form body here, before the CSRF check does: its size error becomes a 413.

        A multipart body within the upload limit can still hold more than
        ``DATA_UPLOAD_MAX_MEMORY_SIZE`` of plain fields; Django finds out while parsing, and an
        error raised in another middleware's ``process_view`` would be a bare 400.
        """
        if request.method in ("POST", "PUT", "PATCH") and request.content_type in FORM_TYPES:
            try:
                fields = request.POST  # parsed once; views and DRF reuse it
            except (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent) as exc:
                return self.process_exception(request, exc)
            for name, values in fields.lists():
                if "\x00" in name or any("\x00" in value for value in values):
                    shown = name.replace("\x00", "\\x00")[:60]
                    return refusal(
                        request,
                        400,
                        "Bad request",
                        f"The form field {shown!r} contains a NUL character, which no field "
                        "accepts.",
                        field=shown,
                    )
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """A body found too large while a view reads it (no or a wrong Content-Length)."""
        if isinstance(exception, RequestDataTooBig):
            return too_large(request, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        if isinstance(exception, TooManyFieldsSent | TooManyFilesSent):
            return refusal(request, 413, "Too large", str(exception))
        return None
