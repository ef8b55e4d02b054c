"""The chat request of one (row, run, order): image part first, then the filled template.

In the swapped order (``ba``) Response 1 is the row's B response and Response 2 its A response;
``verdict_in_row_terms`` maps the parsed verdict back, so stored verdicts always name the row's
own A and B.
"""

from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageOps

from judging.metrics import MODEL_A, MODEL_B
from judging.prompt import PromptTemplate, render_prompt

ORDERS = ("ab", "ba")
DEFAULT_IMAGE_MAX_SIDE = 1536
_SENT_AS_IS = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif"}


@dataclass(frozen=True)
class GenerationSettings:
    """Every setting of the model call that can change its answer (the neutral vocabulary of
    ``judging.runner.dialects``; a dialect renames or drops fields on the wire)."""

    model: str
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int = 1024
    seed: int | None = None
    reasoning_effort: str = ""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)
    #: Runs of the config: with more than one, every run after the first gets a seed of its own.
    runs: int = 1
    #: True when the provider fixes temperature and top_p (they are never sent).
    fixed_sampling: bool = False

    def seed_for(self, run_index: int) -> int | None:
        """The seed of one run: ``seed + run_index - 1``; without a seed, none for run 1 and
        ``run_index - 1`` for the later runs of a multi-run config, so the runs differ (and
        adding runs keeps the earlier runs' answers)."""
        if self.seed is not None:
            return self.seed + run_index - 1
        return None if run_index <= 1 else run_index - 1

    def body_fields(self, run_index: int) -> dict[str, Any]:
        """The request body's generation fields for one run (unset ones left out)."""
        fields: dict[str, Any] = {
            **self.extra_body,
            "model": self.model,
            "max_tokens": self.max_tokens,
        }
        if not self.fixed_sampling:
            fields["temperature"] = self.temperature
            if self.top_p is not None:
                fields["top_p"] = self.top_p
        seed = self.seed_for(run_index)
        if seed is not None:
            fields["seed"] = seed
        if self.reasoning_effort:
            fields["reasoning_effort"] = self.reasoning_effort
        if self.chat_template_kwargs:
            fields["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        return fields

    def key_fields(self, run_index: int) -> dict[str, Any]:
        """What of these settings goes into a call's cache key."""
        fields = self.body_fields(run_index)
        fields.setdefault("temperature", None)
        fields.setdefault("top_p", None)
        fields.setdefault("seed", None)
        return fields

    def identical_runs(self) -> bool:
        """True when several runs would (nearly) repeat one answer: greedy decoding."""
        return self.runs > 1 and not self.fixed_sampling and self.temperature == 0


@dataclass(frozen=True)
class RowCall:
    """One call to make: a dataset row (or a holistic sample) in one run and one order."""

    question_id: str
    split: str
    criterion: str
    criterion_name: str
    criterion_description: str
    question: str
    response_a: str
    response_b: str
    image_name: str
    image_sha256: str
    run_index: int
    order: str

    def responses(self) -> tuple[str, str]:
        """(Response 1, Response 2) as presented in this call's order."""
        if self.order == "ba":
            return self.response_b, self.response_a
        return self.response_a, self.response_b


def key_parts(
    call: RowCall,
    *,
    kind: str,
    template_hash: str,
    settings: GenerationSettings,
    image_max_side: int,
) -> dict[str, Any]:
    """Every part of the cache key of ``call`` (see ``judging.runner.cache``).

    The server is not part of it: the model's name and every setting that can change the answer
    are, so adding, removing or moving a replica re-asks nothing.
    """
    return {
        "kind": kind,
        "template_hash": template_hash,
        "image_sha256": call.image_sha256,
        "image_max_side": image_max_side if call.image_sha256 else None,
        "question": call.question,
        "response_a": call.response_a,
        "response_b": call.response_b,
        "criterion": call.criterion,
        "criterion_name": call.criterion_name,
        "criterion_description": call.criterion_description,
        "order": call.order,
        "run_index": call.run_index,
        **settings.key_fields(call.run_index),
    }


def image_sha256(data: bytes) -> str:
    """The SHA-256 of the image's original bytes (what the cache key records)."""
    return hashlib.sha256(data).hexdigest()


def downscaled_image(data: bytes, max_side: int) -> tuple[bytes, str]:
    """The image as sent: its longest side at most ``max_side`` px; (bytes, MIME type).

    An image already small enough, upright and in a format every server reads is sent as it
    is; otherwise it is turned upright, resized (Lanczos) and written as PNG (transparency,
    palettes) or JPEG (quality 90).
    """
    with Image.open(io.BytesIO(data)) as image:
        fmt = image.format or ""
        upright = image.getexif().get(0x0112, 1) == 1
        if max(image.size) <= max_side and upright and fmt in _SENT_AS_IS:
            return data, _SENT_AS_IS[fmt]
        image = ImageOps.exif_transpose(image)
        if max(image.size) > max_side:
            image.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
        out = io.BytesIO()
        if image.mode in ("RGBA", "LA", "P", "PA") or "transparency" in image.info:
            image.convert("RGBA").save(out, format="PNG")
            return out.getvalue(), "image/png"
        image.convert("RGB").save(out, format="JPEG", quality=90)
        return out.getvalue(), "image/jpeg"


def image_data_url(data: bytes, max_side: int = DEFAULT_IMAGE_MAX_SIDE) -> str:
    """A base64 ``data:`` URL of the image downscaled to ``max_side``."""
    sent, mime = downscaled_image(data, max_side)
    return f"data:{mime};base64,{base64.b64encode(sent).decode('ascii')}"


def prompt_text(call: RowCall, template: PromptTemplate) -> str:
    """The filled template of ``call`` (criterion name and description, question, responses)."""
    response_1, response_2 = call.responses()
    return render_prompt(
        question=call.question,
        response_1=response_1,
        response_2=response_2,
        criterion_name=call.criterion_name or call.criterion,
        criterion_key=call.criterion,
        description=call.criterion_description,
        template=template,
    )


def chat_body(
    call: RowCall,
    *,
    template: PromptTemplate,
    settings: GenerationSettings,
    image_url: str | None,
) -> dict[str, Any]:
    """The ``/chat/completions`` request body: one user message, the image part first."""
    content: list[dict[str, Any]] = []
    if image_url:
        content.append({"type": "image_url", "image_url": {"url": image_url}})
    content.append({"type": "text", "text": prompt_text(call, template)})
    return {
        **settings.body_fields(call.run_index),
        "messages": [{"role": "user", "content": content}],
    }


def verdict_in_row_terms(parsed: str | None, order: str) -> str | None:
    """A verdict parsed from a call in ``order``, in terms of the row's own A and B."""
    if parsed is None or order != "ba":
        return parsed
    return MODEL_B if parsed == MODEL_A else MODEL_A
