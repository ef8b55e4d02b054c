"""The judge prompt of protocol section 8: a template file, chosen per run.

One call per (sample, criterion): the image first, then the text of a template file with
``string.Template`` placeholders ``$criterion_key``, ``$criterion_name``,
``$criterion_description``, ``$question``, ``$response_1`` (= A) and ``$response_2`` (= B); ``$$``
is a literal dollar. Our template (``judging/prompts/default.txt``) asks for a justification and a
final line ``Response X is better.``, which ``judging.parsing.parse_judge_output`` reads back; a
user may bring another file (e.g. the official one) with the same placeholders. A file naming any
other placeholder is refused. The SHA-256 of the file's text identifies the template a run used
(stored on ``JudgeRun.template_hash`` and shown on the leaderboard), so scores from different
wordings are never mixed up.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from annotation.importing.limits import TEXT_ENCODING
from judging.errors import InputFileError

PLACEHOLDERS = (
    "criterion_key",
    "criterion_name",
    "criterion_description",
    "question",
    "response_1",
    "response_2",
)
DEFAULT_TEMPLATE_PATH = Path(__file__).resolve().parent / "prompts" / "default.txt"
#: A template file larger than this is refused (a prompt is a few kilobytes).
MAX_TEMPLATE_BYTES = 256 * 1024


class TemplateFileError(InputFileError):
    """A prompt template file that cannot be used; names the line and the placeholder."""


@dataclass(frozen=True)
class PromptTemplate:
    """A judge prompt template: its text, the SHA-256 of the text, and a name (the file's)."""

    text: str
    sha256: str
    name: str

    def render(
        self,
        *,
        criterion_key: str,
        criterion_name: str,
        criterion_description: str,
        question: str,
        response_1: str,
        response_2: str,
    ) -> str:
        """The prompt text with every placeholder filled (values stripped)."""
        return Template(self.text).substitute(
            criterion_key=criterion_key.strip(),
            criterion_name=criterion_name.strip(),
            criterion_description=criterion_description.strip(),
            question=question.strip(),
            response_1=response_1.strip(),
            response_2=response_2.strip(),
        )


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def template_from_text(text: str, *, name: str = "template") -> PromptTemplate:
    """Check a template's placeholders and wrap it; raises TemplateFileError naming the line."""
    if not text.strip():
        raise TemplateFileError(f"{name} is empty")
    for match in Template.pattern.finditer(text):
        key = match.group("named") or match.group("braced")
        line = _line_of(text, match.start())
        if match.group("invalid") is not None:
            raise TemplateFileError(
                "a '$' not followed by a placeholder name (write $$ for a dollar sign)",
                line=line,
                field="template",
            )
        if key is not None and key not in PLACEHOLDERS:
            allowed = ", ".join(f"${p}" for p in PLACEHOLDERS)
            raise TemplateFileError(
                f"unknown placeholder ${key} (allowed: {allowed})", line=line, field="template"
            )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return PromptTemplate(text=text, sha256=digest, name=name)


def template_from_bytes(data: bytes, *, name: str = "template") -> PromptTemplate:
    """A template from an uploaded file's bytes (UTF-8)."""
    if len(data) > MAX_TEMPLATE_BYTES:
        raise TemplateFileError(f"{name} is larger than {MAX_TEMPLATE_BYTES // 1024} KB")
    try:
        text = data.decode(TEXT_ENCODING)
    except UnicodeDecodeError as exc:
        raise TemplateFileError(f"{name} is not UTF-8 text ({exc.reason})") from None
    return template_from_text(text, name=name)


def load_template(path: str | Path | None = None) -> PromptTemplate:
    """The template in ``path`` (``None``: our default file); refuses unknown placeholders."""
    path = DEFAULT_TEMPLATE_PATH if path is None else Path(path)
    if not path.is_file():
        raise TemplateFileError(f"no such template file: {path}")
    return template_from_bytes(path.read_bytes(), name=path.name)


def template_hash_resolve(*, upload: Any = None, given: str = "") -> str:
    """The template hash of an upload: the uploaded template file's, else the hash typed in.

    Both given and different is refused, so a run never carries a hash its file contradicts.
    """
    given = (given or "").strip()
    if upload is None:
        return given
    if hasattr(upload, "seek"):
        upload.seek(0)
    name = Path(str(getattr(upload, "name", "") or "template")).name
    template = template_from_bytes(upload.read(), name=name)
    if given and given.lower() != template.sha256:
        raise TemplateFileError(
            f"the template file's hash is {template.sha256}, not {given}", field="template_hash"
        )
    return template.sha256


DEFAULT_TEMPLATE = load_template()
TEMPLATE_TEXT = DEFAULT_TEMPLATE.text


def template_hash() -> str:
    """SHA-256 (hex) of the default template's text."""
    return DEFAULT_TEMPLATE.sha256


def render_prompt(
    *,
    question: str,
    response_1: str,
    response_2: str,
    criterion_name: str,
    description: str,
    criterion_key: str = "",
    template: PromptTemplate | None = None,
) -> str:
    """The text part of the prompt, from ``template`` or the default one."""
    return (template or DEFAULT_TEMPLATE).render(
        criterion_key=criterion_key or criterion_name,
        criterion_name=criterion_name,
        criterion_description=description,
        question=question,
        response_1=response_1,
        response_2=response_2,
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
    template: PromptTemplate | None = None,
) -> list[dict]:
    """The chat messages for one (row, criterion): image part first, then the prompt text.

    ``row`` is a dataset row (``question``, ``pred_a``, ``pred_b``, ``criterion``, and ``image``
    bytes or ``image_path``); ``image_url`` overrides the row's image (e.g. a served URL);
    ``template`` is the run's prompt template (default: ours).
    """
    key = str(row.get("criterion") or "")
    text = render_prompt(
        question=str(row.get("question") or ""),
        response_1=str(row.get("pred_a") or ""),
        response_2=str(row.get("pred_b") or ""),
        criterion_name=criterion_name or key,
        criterion_key=key,
        description=criterion_description,
        template=template,
    )
    content: list[dict] = []
    url = image_url or _row_image(row)
    if url:
        content.append({"type": "image_url", "image_url": {"url": url}})
    content.append({"type": "text", "text": text})
    return [{"role": "user", "content": content}]
