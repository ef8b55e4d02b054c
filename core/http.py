"""File responses over HTTP: byte ranges (RFC 9110 section 14) and streaming one range of a file.

One range per request; several get the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import IO, Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse

from .jobs import JobQueueUnavailable

STREAM_CHUNK = 64 * 1024
#: The header carrying a refusal's message to htmx, whose error answers are not swapped in:
#: static/js/app.js shows it as a toast.
MESSAGE_HEADER = "X-Refusal-Message"

_RANGE = re.compile(r"^(\d*)-(\d*)$")


class RangeNotSatisfiable(Exception):
    """The Range header is malformed or lies outside the file."""


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``(first, last)`` inclusive for a ``Range`` header, or None to send the whole file.

    RFC 9110 section 14: a range in a unit other than bytes is ignored (14.2: MUST), and so are
    several ranges (14.2: MAY). A range starting at or past the end is not satisfiable (416);
    on an empty file that is every range but a suffix (``bytes=-N``), which is satisfiable
    (14.1.2) yet no 206 can describe zero bytes: the Range is ignored (MAY), and the answer is
    the whole, empty, file (200).
    """
    if not header:
        return None
    unit, _, spec = header.strip().replace(" ", "").partition("=")
    if unit.lower() != "bytes":
        return None
    if "," in spec:
        return None
    match = _RANGE.match(spec)
    if not match or (not match[1] and not match[2]):
        raise RangeNotSatisfiable(f"malformed range {header!r}")
    first, last = match[1], match[2]
    if not first:  # the last N bytes
        length = int(last)
        if length == 0:
            raise RangeNotSatisfiable("a suffix range of 0 bytes asks for nothing")
        if size == 0:
            return None
        return max(0, size - length), size - 1
    start = int(first)
    if last and int(last) < start:
        raise RangeNotSatisfiable(f"range {header!r} ends before it starts")
    if start >= size:
        raise RangeNotSatisfiable(
            f"range {header!r} starts at or past the end of the file ({size} bytes)"
        )
    return start, min(int(last) if last else size - 1, size - 1)


def stream_range(fh: IO[bytes], start: int, length: int) -> Iterator[bytes]:
    """Yield ``length`` bytes of ``fh`` from ``start`` in chunks, closing it at the end."""
    try:
        fh.seek(start)
        remaining = length
        while remaining > 0:
            chunk = fh.read(min(STREAM_CHUNK, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            yield chunk
    finally:
        fh.close()


def range_response(
    *, method: str, range_header: str | None, size: int, open_file: Callable[[], IO[bytes]]
) -> HttpResponse:
    """The body part of a download: 200, 206 with one range, or 416; a HEAD gets no body.

    Ranges are defined for GET only (RFC 9110 14.2): a HEAD describes the whole file.
    """
    try:
        wanted = byte_range(range_header if method == "GET" else None, size)
    except RangeNotSatisfiable as exc:
        response = HttpResponse(str(exc), status=416, content_type="text/plain")
        response["Content-Range"] = f"bytes */{size}"
        return response
    first, last = wanted if wanted is not None else (0, size - 1)
    length = max(0, last - first + 1)
    status = 206 if wanted is not None else 200
    if method == "HEAD":
        response = HttpResponse(status=status)
    else:
        response = StreamingHttpResponse(stream_range(open_file(), first, length), status=status)
    response["Content-Length"] = str(length)
    if status == 206:
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
    return response


def _etag_matches(header: str, etag: str) -> bool:
    tags = {t.strip().removeprefix("W/") for t in header.split(",")}
    return "*" in tags or etag in tags


def stored_file_response(
    request: HttpRequest, *, file: Any, size: int, sha256: str, content_type: str
) -> HttpResponse:
    """A streamed download of a stored file (a FieldFile), honouring Range, If-Range and
    If-None-Match; its SHA-256 is the ETag."""
    etag = f'"{sha256}"'
    name = file.name.rsplit("/", 1)[-1]
    headers = {
        "ETag": etag,
        "Accept-Ranges": "bytes",
        "Cache-Control": "private, max-age=0, must-revalidate",
    }
    if _etag_matches(request.headers.get("If-None-Match", ""), etag):
        response = HttpResponse(status=304)
        for key, value in headers.items():
            response[key] = value
        return response
    range_header = request.headers.get("Range")
    if_range = request.headers.get("If-Range")
    if if_range and if_range.strip() != etag:
        range_header = None  # the client's copy is stale: send the whole file
    response = range_response(
        method=request.method or "GET",
        range_header=range_header,
        size=size,
        open_file=lambda: file.storage.open(file.name, "rb"),
    )
    if response.status_code == 416:
        response["Accept-Ranges"] = "bytes"
        return response
    response["Content-Type"] = content_type
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    for key, value in headers.items():
        response[key] = value
    return response


def queue_unavailable(request: HttpRequest, response: HttpResponse | None = None) -> HttpResponse:
    """A 503 saying the job queue is down: ``response`` (a page with the message) or plain text."""
    message = str(JobQueueUnavailable())
    if response is None:
        response = HttpResponse(message, content_type="text/plain; charset=utf-8")
    response.status_code = 503
    response[MESSAGE_HEADER] = message
    return response
