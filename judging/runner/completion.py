"""Reading a chat completion answer: the visible text, the thinking, the finish and the usage.

A thinking model's reasoning comes back beside the answer: ``reasoning_content`` (vLLM before
0.10, SGLang, DeepSeek), ``reasoning`` (newer vLLM, OpenRouter) or, from a server without a
reasoning parser, inside ``content`` as ``<think>…</think>`` before the answer. The verdict is read
from the visible text only (the thinking is kept, counted and shown, never parsed), so a verdict
that appears only in the thinking decides nothing. An answer cut at the token budget before any
visible text (``finish_reason: length``) is *truncated*, not an unreadable verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

REASONING_FIELDS = ("reasoning_content", "reasoning")
_THINK = re.compile(r"<think>(.*?)</think>", re.S | re.I)
_OPEN_THINK = re.compile(r"<think>(.*)\Z", re.S | re.I)


@dataclass(frozen=True)
class Completion:
    """What one answer holds."""

    content: str
    #: The content without any ``<think>`` block: the text a verdict is read from.
    visible: str
    #: Every piece of thinking: the reasoning field, then ``<think>`` blocks of the content.
    thinking: str
    finish_reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def cut(self) -> bool:
        """True when the answer stopped at the token budget."""
        return self.finish_reason == "length"


def split_thinking(content: str) -> tuple[str, str]:
    """(visible text, thinking) of a content that may hold ``<think>`` blocks (an unclosed one
    at the end, cut by the budget, is thinking too)."""
    thinking = [m.group(1).strip() for m in _THINK.finditer(content)]
    visible = _THINK.sub("", content)
    if (match := _OPEN_THINK.search(visible)) is not None:
        thinking.append(match.group(1).strip())
        visible = visible[: match.start()]
    return visible.strip() if thinking else content, "\n\n".join(t for t in thinking if t)


def _text(value: Any) -> str | None:
    if value is None:
        return ""
    if isinstance(value, list):  # content parts
        return "".join(p.get("text", "") for p in value if isinstance(p, dict))
    return value if isinstance(value, str) else None


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _usage(payload: dict[str, Any]) -> tuple[int, int, int]:
    usage = payload.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("completion_tokens_details")
    details = details if isinstance(details, dict) else {}
    return (
        _count(usage.get("prompt_tokens")),
        _count(usage.get("completion_tokens")),
        _count(details.get("reasoning_tokens")),
    )


def read_completion(payload: Any) -> Completion | None:
    """The completion in a ``/chat/completions`` answer, or None when it is not one."""
    if not isinstance(payload, dict):
        return None
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    message = message if isinstance(message, dict) else {}
    content = _text(message.get("content"))
    if content is None:
        return None
    reasoning = next((text for f in REASONING_FIELDS if (text := _text(message.get(f)))), "")
    visible, inline = split_thinking(content)
    prompt, completion, reasoning_tokens = _usage(payload)
    return Completion(
        content=content,
        visible=visible,
        thinking="\n\n".join(part for part in (reasoning, inline) if part),
        finish_reason=str(choices[0].get("finish_reason") or ""),
        prompt_tokens=prompt,
        completion_tokens=completion,
        reasoning_tokens=reasoning_tokens,
    )
