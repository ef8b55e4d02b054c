"""The judge prompt of protocol section 8, as one versioned template.

One call per (sample, criterion): the image first, then the instruction to judge strictly and only
by the given criterion (its full description), the question, Response 1 (= A) and Response 2
(= B), a request for a justification and a final line ``Response X is better.``, which
``judging.parsing.parse_judge_output`` reads back. ``template_hash()`` identifies the template
a run used (stored on JudgeRun.template_hash), so scores from different wordings are never mixed
up.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
from collections.abc import Mapping
from string import Template
from typing import Any

TEMPLATE_TEXT = """\
You are an impartial expert judge comparing two responses to the same question about the image \
above.

Judge the two responses strictly and only by the following criterion. Ignore every other quality \
of the responses (length, style, or correctness on other aspects) unless the criterion asks for it.

Criterion: $criterion_name
$criterion_description

[Question]
$question

[Response 1]
$response_1
[End of Response 1]

[Response 2]
$response_2
[End of Response 2]

First write a short justification that compares the two responses with respect to this \
criterion only. Then, on the last line, give your verdict exactly as "Response 1 is better." or \
"Response 2 is better." and nothing else; a tie is not allowed.
"""

TEMPLATE = Template(TEMPLATE_TEXT)


def template_hash() -> str:
    """SHA-256 (hex) of the template text."""
    return hashlib.sha256(TEMPLATE_TEXT.encode("utf-8")).hexdigest()


def render_prompt(
    *, question: str, response_1: str, response_2: str, criterion_name: str, description: str
) -> str:
    """The text part of the prompt (``substitute`` raises if a template field has no value)."""
    return TEMPLATE.substitute(
        criterion_name=criterion_name.strip(),
        criterion_description=description.strip(),
        question=question.strip(),
        response_1=response_1.strip(),
        response_2=response_2.strip(),
    )


def image_data_url(data: bytes, *, name: str = "") -> str:
    """A ``data:`` URL for embedded image bytes (the Parquet export's image column)."""
    mime = mimetypes.guess_type(name)[0] if name else None
    if mime is None:
        mime = "image/png" if data[:8] == b"\x89PNG\r\n\x1a\n" else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _row_image(row: Mapping[str, Any]) -> str | None:
    image = row.get("image")
    if isinstance(image, Mapping):  # Parquet/datasets image struct: {"bytes": ..., "path": ...}
        if image.get("bytes"):
            return image_data_url(image["bytes"], name=image.get("path") or "")
        image = image.get("path")
    if isinstance(image, bytes | bytearray):
        return image_data_url(bytes(image), name=str(row.get("image_path") or ""))
    return image or row.get("image_path") or None


def build_messages(
    row: Mapping[str, Any],
    criterion_description: str,
    *,
    criterion_name: str | None = None,
    image_url: str | None = None,
) -> list[dict]:
    """The chat messages for one (row, criterion): image part first, then the prompt text.

    ``row`` is a dataset row (``question``, ``pred_a``, ``pred_b``, ``criterion``, and ``image``
    bytes or ``image_path``); ``image_url`` overrides the row's image (e.g. a served URL).
    """
    text = render_prompt(
        question=str(row.get("question") or ""),
        response_1=str(row.get("pred_a") or ""),
        response_2=str(row.get("pred_b") or ""),
        criterion_name=criterion_name or str(row.get("criterion") or ""),
        description=criterion_description,
    )
    content: list[dict] = []
    url = image_url or _row_image(row)
    if url:
        content.append({"type": "image_url", "image_url": {"url": url}})
    content.append({"type": "text", "text": text})
    return [{"role": "user", "content": content}]
