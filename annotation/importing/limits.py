"""Limits on untrusted input, in one place, and the checks that apply them.

Samples, votes and judge predictions come from files and forms that anyone with an account can
write, and their text is model output. Every reader checks its fields here: a length limit per
field, text that PostgreSQL can store (no NUL, no lone surrogate), JSON that is neither too deep
nor too large, and zip archives whose members stay within bounds while they are read. Django-free:
the request-size limits of the web server are in the settings (``REQUEST_LIMITS``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO, Any

KB = 1024
MB = 1024 * KB
GB = 1024 * MB

# --- Fields of a sample (characters) ------------------------------------------------------------
FIELD_MAX_CHARS = {
    "external_id": 200,
    "question": 20_000,
    "response_a": 100_000,
    "response_b": 100_000,
    "reference_answer": 20_000,
    "model_a": 200,
    "model_b": 200,
    "source": 120,
    "criterion": 60,
    "question_id": 300,
}
# Metadata: nesting depth (the object itself is depth 1) and size as serialized JSON.
METADATA_MAX_DEPTH = 8
METADATA_MAX_BYTES = 64 * KB

# --- Votes --------------------------------------------------------------------------------------
RATIONALE_MAX_CHARS = 5_000
# A note typed on a form: a problem report, a review decision.
NOTE_MAX_CHARS = 2_000

# --- Judge predictions --------------------------------------------------------------------------
PREDICTION_NAME_MAX_CHARS = 300  # question_id, prompt_id, criterion, judge, split, run
JUDGE_OUTPUT_MAX_CHARS = 100_000  # prediction / output: the judge's raw text
# Python's csv module refuses fields over 131,072 characters with a bare error; the reader lifts
# that to this size so that a long field is reported with its line and column by the checks above.
CSV_FIELD_MAX_CHARS = 4 * JUDGE_OUTPUT_MAX_CHARS

# --- Files --------------------------------------------------------------------------------------
# One JSONL line (a sample, a Multi-Crit row or a prediction). An image embedded as base64 must
# fit in it; larger images go beside the data file in a zip.
LINE_MAX_BYTES = 16 * MB
# JSON nesting anywhere in a line (metadata has its own, smaller limit).
JSON_MAX_DEPTH = 32
ZIP_MAX_MEMBERS = 100_000
ZIP_MAX_TOTAL_BYTES = 8 * GB  # uncompressed, all members together
ZIP_MAX_DATA_BYTES = 4 * GB  # uncompressed, the .jsonl / .parquet member
IMAGE_MAX_BYTES = 50 * MB  # one image file, read into memory to be checked

_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
_PATH_KEY_CHARS = 40
_SHOWN_CHARS = 60


def shown_value(value: Any) -> str:
    """A short, printable repr of an input value for an error message."""
    if isinstance(value, str | int | float | bool) or value is None:
        text = repr(value)
        return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"
    return f"a {type(value).__name__}"


def size_text(size: int) -> str:
    """``size`` bytes in the unit people read limits in (``16 MB``)."""
    for unit, factor in (("GB", GB), ("MB", MB), ("KB", KB)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size:,} bytes"


def text_problem(value: str, *, max_chars: int | None = None) -> str | None:
    """Why ``value`` cannot be stored as text (None when it can)."""
    if max_chars is not None and len(value) > max_chars:
        return f"longer than {max_chars:,} characters ({len(value):,})"
    bad = _BAD_TEXT.search(value)
    if bad is None:
        return None
    where = f"at character {bad.start() + 1}"
    if bad.group() == "\x00":
        return f"contains a NUL character {where}"
    return f"contains an unpaired surrogate (an invalid \\u escape) {where}"


def value_problem(
    value: Any, *, max_depth: int = JSON_MAX_DEPTH, check_text: bool = True
) -> tuple[str, str] | None:
    """The first nested string (or key) that cannot be stored, or a nesting too deep.

    Returns ``(path, message)`` with a dotted path below ``value`` ("" for ``value`` itself),
    walking without recursion so that any depth is safe. ``check_text=False`` checks only the
    depth (and keys), for a reader that checks the texts itself with better positions.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str) and check_text:
            problem = text_problem(item)
            if problem:
                return path, problem
        elif isinstance(item, dict | list | tuple):
            if depth > max_depth:
                return path, f"nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                for key, child in item.items():
                    key_text = str(key)
                    problem = text_problem(key_text)
                    if problem:
                        return path, f"a key {problem}"
                    if len(key_text) > _PATH_KEY_CHARS:
                        key_text = key_text[:_PATH_KEY_CHARS] + "…"
                    child_path = f"{path}.{key_text}" if path else key_text
                    stack.append((child, child_path, depth + 1))
            else:
                for index, child in enumerate(item):
                    stack.append((child, f"{path}[{index}]", depth + 1))
    return None


def metadata_problem(value: Any) -> tuple[str, str] | None:
    """``(path, message)`` when a metadata object is too deep, too large or holds bad text."""
    problem = value_problem(value, max_depth=METADATA_MAX_DEPTH)
    if problem:
        return problem
    size = len(json.dumps(value, ensure_ascii=False, default=str).encode())
    if size > METADATA_MAX_BYTES:
        return "", f"larger than {size_text(METADATA_MAX_BYTES)} as JSON ({size:,} bytes)"
    return None


class JsonInputError(ValueError):
    """A JSON text that cannot be read; the message says why, without a position."""


def _no_constants(name: str) -> Any:
    raise JsonInputError(f"invalid JSON: {name} is not a JSON value")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different; a repeated key would hide the first value."""
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise JsonInputError(f"invalid JSON: the key {shown_value(key)} appears twice")
        value[key] = item
    return value


#: The UTF-8 byte order mark some editors write at the start of a file. Every reader of uploaded
#: files accepts it there: JSON texts through :func:`json_loads`, text files by TEXT_ENCODING.
BOM = "\ufeff"
#: How an uploaded text file (CSV, JSONL) is decoded: UTF-8, a leading byte order mark dropped.
TEXT_ENCODING = "utf-8-sig"


def json_loads(text: str | bytes, *, check_text: bool = True) -> Any:
    """Parse JSON as every reader of uploaded files does: a leading byte order mark dropped,
    NaN and Infinity refused, a key repeated in an object refused (naming it), depth and text
    checked.

    Raises :class:`JsonInputError` with a message naming the column, the key, or the path of a
    bad value; the reader adds the line. With ``check_text=False`` the strings are left to the
    caller (see :func:`value_problem`).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonInputError(f"not valid UTF-8 (byte {exc.start + 1})") from None
    try:
        value = json.loads(
            text.removeprefix(BOM), parse_constant=_no_constants, object_pairs_hook=_unique_keys
        )
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise JsonInputError(f"invalid JSON: nested deeper than {JSON_MAX_DEPTH} levels") from None
    except JsonInputError:
        raise
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise JsonInputError(f"invalid JSON: {exc}") from None
    problem = value_problem(value, check_text=check_text)
    if problem:
        path, message = problem
        raise JsonInputError(f"{path}: {message}" if path else message)
    _check_numbers(value)
    return value


def _check_numbers(value: Any) -> None:
    """Refuse numbers that overflow to infinity (``1e999``): no database stores them."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and item in (float("inf"), float("-inf")):
            raise JsonInputError("a number is too large")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def bounded_lines(
    handle: IO[bytes], *, max_bytes: int = LINE_MAX_BYTES, chunk: int = 1024 * 1024
) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` for each line; ``None`` for a line over ``max_bytes``.

    Reads in chunks and holds at most ``max_bytes`` of a line: the rest of an overlong line is
    dropped as it is read (a file-like ``readline`` would read it in tiny pieces).
    """
    line = 0
    parts: list[bytes] = []  # the current line so far, while it is within the limit
    held = 0
    skipping = False
    while True:
        data = handle.read(chunk)
        if not data:
            break
        start = 0
        while True:
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start : end + 1]
            if not skipping:
                held += len(piece)
                if held > max_bytes + (end >= 0):
                    skipping, parts, held = True, [], 0
                else:
                    parts.append(piece)
            if end < 0:
                break
            line += 1
            yield line, None if skipping else b"".join(parts)
            parts, held, skipping = [], 0, False
            start = end + 1
            if start == len(data):
                break
    if parts or skipping:
        yield line + 1, None if skipping else b"".join(parts)


def line_too_long(max_bytes: int = LINE_MAX_BYTES) -> str:
    return f"the line is longer than {size_text(max_bytes)}"
