"""Files under MEDIA_ROOT: strict path normalisation, serving (or handing off to the proxy), the
unguessable names under which user uploads are stored, and the one message for a media folder
that refuses a write.

Who may read a path is decided in one place, :func:`core.permissions.media_file`; it calls
:func:`media_path_normalise` first, so that the decision is taken on the path actually served.
"""

from __future__ import annotations

import mimetypes
import re
import unicodedata
import uuid
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.utils.http import http_date

from core.http import MESSAGE_HEADER, range_response

#: One path segment as we store it: ASCII letters, digits, ``_ - .``; no leading or trailing dot.
_SEGMENT = re.compile(r"^[A-Za-z0-9_-](?:[A-Za-z0-9._-]*[A-Za-z0-9_-])?$")
MAX_PATH_CHARS = 1024

#: Served inline: raster images a browser cannot execute. Everything else is a download.
INLINE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
}
SERVE_MODES = ("django", "x-accel", "x-sendfile")


def media_path_normalise(path: str) -> str | None:
    """The canonical relative path for ``path`` (already URL-decoded once), or None if refused.

    Refused: empty, too long, non-ASCII, control characters (NUL), backslashes, a ``%`` left after
    decoding (double encoding, or bytes that were not UTF-8), absolute paths, and any empty,
    ``.``, ``..``, hidden or dot-ending segment. What is accepted is already canonical, so the
    caller decides on exactly the path that will be opened.
    """
    if not path or len(path) > MAX_PATH_CHARS or not path.isascii():
        return None
    if any(ch in path for ch in "\\%") or any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        return None
    segments = path.split("/")
    if not all(_SEGMENT.match(segment) for segment in segments):
        return None  # also refuses "", ".", ".." and a leading "/" (an empty first segment)
    return "/".join(segments)


def media_root() -> Path:
    """MEDIA_ROOT with its symlinks resolved."""
    return Path(settings.MEDIA_ROOT).resolve()


def media_resolve(clean: str) -> Path | None:
    """The regular file for the normalised ``clean`` path, or None.

    The resolved real path must be exactly ``MEDIA_ROOT/clean``: a symlink anywhere below
    MEDIA_ROOT (pointing outside, or to another project's file) is refused.
    """
    root = media_root()
    expected = root.joinpath(*clean.split("/"))
    try:
        real = expected.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if real != expected or not real.is_relative_to(root) or not real.is_file():
        return None
    return real


def media_content_type(name: str) -> tuple[str, bool]:
    """``(Content-Type, inline)`` for a file name: raster images inline, the rest attachments."""
    suffix = Path(name).suffix.lower()
    if suffix in INLINE_TYPES:
        return INLINE_TYPES[suffix], True
    guessed, encoding = mimetypes.guess_type(name)
    if encoding or not guessed:
        return "application/octet-stream", False
    return guessed, False


def _body_response(request: HttpRequest, file: Path) -> HttpResponse:
    """The file itself, streamed, with one byte range honoured (206) or refused (416)."""
    return range_response(
        method=request.method or "GET",
        range_header=request.headers.get("Range"),
        size=file.stat().st_size,
        open_file=lambda: file.open("rb"),
    )


def media_response(request: HttpRequest, file: Path) -> HttpResponse:
    """Serve ``file`` (inside MEDIA_ROOT, already allowed) the way ``MEDIA_SERVE`` says.

    ``django`` streams it; ``x-accel`` answers empty with ``X-Accel-Redirect`` under
    ``MEDIA_ACCEL_PREFIX`` (an ``internal`` location of the proxy); ``x-sendfile`` answers empty
    with ``X-Sendfile: <absolute path>``. The type and disposition headers are the same in all;
    a proxy that keeps only some of them on an internal redirect must add ``nosniff`` itself.
    """
    mode = getattr(settings, "MEDIA_SERVE", "django")
    relative = file.relative_to(media_root()).as_posix()
    if mode == "django":
        response = _body_response(request, file)
    elif mode == "x-accel":
        response = HttpResponse()
        prefix = getattr(settings, "MEDIA_ACCEL_PREFIX", "/protected-media/").rstrip("/")
        response["X-Accel-Redirect"] = f"{prefix}/{quote(relative)}"
    elif mode == "x-sendfile":
        response = HttpResponse()
        response["X-Sendfile"] = str(file)
    else:
        raise ImproperlyConfigured(f"MEDIA_SERVE must be one of {SERVE_MODES}, not {mode!r}.")
    if response.status_code == 416:
        return response
    content_type, inline = media_content_type(file.name)
    response["Content-Type"] = content_type
    response["X-Content-Type-Options"] = "nosniff"
    disposition = "inline" if inline else "attachment"
    response["Content-Disposition"] = f'{disposition}; filename="{file.name}"'
    response["Accept-Ranges"] = "bytes"
    response["Cache-Control"] = "private, max-age=0, must-revalidate"
    response["Last-Modified"] = http_date(file.stat().st_mtime)
    return response


def upload_safe_name(name: str, default: str = "upload") -> str:
    """An ASCII file name (``[A-Za-z0-9._-]``, no leading dot) keeping the original's suffix."""
    base = Path(name.replace("\\", "/")).name
    ascii_name = unicodedata.normalize("NFKD", base).encode("ascii", "ignore").decode()
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_name).strip("._-")
    if not safe:
        return default
    if len(safe) > 100:
        stem, dot, suffix = safe.rpartition(".")
        safe = f"{stem[: 99 - len(suffix)]}.{suffix}" if dot and len(suffix) <= 16 else safe[:100]
    return safe


def upload_storage_name(directory: str, original: str, default: str = "upload") -> str:
    """``<directory>/<random 128-bit hex>/<safe original name>``: not guessable from the time."""
    return f"{directory}/{uuid.uuid4().hex}/{upload_safe_name(original, default)}"


class MediaUnwritable(Exception):
    """The media folder refused a write (missing, not a folder, read-only or full).

    Its message is for the page: what could not be stored and what to do, never the server
    path, which goes to the log with the original error.
    """

    def __init__(self, what: str = "the file") -> None:
        super().__init__(
            f"The server could not store {what}: its media folder cannot be written to "
            "(missing, read-only or full). Nothing was kept; ask the administrator to check "
            "the media folder, then try again."
        )


def media_unwritable_response(response: HttpResponse, problem: MediaUnwritable) -> HttpResponse:
    """``response`` (the page, the message among its form errors) as a 503 that says why.

    The message also goes in the refusal header, which static/js/app.js shows when an htmx
    request is answered with an error and nothing is swapped.
    """
    response.status_code = 503
    response[MESSAGE_HEADER] = str(problem)
    return response
