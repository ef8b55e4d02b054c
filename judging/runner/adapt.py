"""Adapting to a server that refuses a request parameter (a 400 naming it).

OpenAI answers 400 with ``error.code`` ``unsupported_parameter`` or ``unsupported_value`` and
``error.param`` naming the field (``max_tokens`` for its reasoning models, ``temperature`` other
than 1, ``top_p``); other servers say the same in words. :func:`adaptation_for` reads such an
answer and returns what to change: the documented replacement (``max_tokens`` becomes
``max_completion_tokens``) or, for any other named field, leaving it out. The client retries the
call once per adaptation and keeps the adaptation for every later call of the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Documented replacements of refused parameters.
REPLACEMENTS = {"max_tokens": "max_completion_tokens"}
#: Never adapted away: without them there is no request.
ESSENTIAL = frozenset({"model", "messages"})
_CODES = frozenset({"unsupported_parameter", "unsupported_value", "unknown_parameter"})
_WORDS = (
    re.compile(r"unsupported (?:parameter|value)s?:?\s*['\"`]?([A-Za-z_][A-Za-z0-9_.]*)", re.I),
    re.compile(
        r"unrecognized (?:request )?(?:argument|parameter)s?(?: supplied)?:?"
        r"\s*['\"`]?([A-Za-z_]\w*)",
        re.I,
    ),
    re.compile(r"['\"`]([A-Za-z_]\w*)['\"`] is not supported", re.I),
    re.compile(r"unknown (?:parameter|field|argument)s?:?\s*['\"`]?([A-Za-z_]\w*)", re.I),
)
_REASON_SHOWN = 200


@dataclass(frozen=True)
class Adaptation:
    """One change of every later request: ``param`` renamed to ``replacement`` or left out."""

    param: str
    replacement: str = ""
    reason: str = ""

    def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` with this change made (a body without the parameter is returned as it is)."""
        if self.param not in body:
            return body
        out = dict(body)
        value = out.pop(self.param)
        if self.replacement:
            out[self.replacement] = value
        return out

    def describe(self) -> str:
        """One line for a person."""
        change = f"sent as {self.replacement}" if self.replacement else "left out"
        return f"{self.param} {change} (the server said: {self.reason})"

    def as_dict(self) -> dict[str, str]:
        return {"param": self.param, "replacement": self.replacement, "reason": self.reason}


def _error_fields(payload: Any) -> tuple[str, str, str]:
    """(code, param, message) of an error answer, empty strings where absent."""
    if not isinstance(payload, dict):
        return "", "", ""
    error = payload.get("error", payload)
    if isinstance(error, str):
        return "", "", error
    if not isinstance(error, dict):
        return "", "", ""
    code, param, message = (error.get(k) for k in ("code", "param", "message"))
    return (
        code if isinstance(code, str) else "",
        param if isinstance(param, str) else "",
        message if isinstance(message, str) else "",
    )


def _named_param(code: str, param: str, message: str, body: dict[str, Any]) -> str:
    if code in _CODES and param:
        return param
    for pattern in _WORDS:
        match = pattern.search(message)
        if match and match.group(1) in body:
            return match.group(1)
    return ""


def adaptation_for(status: int, payload: Any, body: dict[str, Any]) -> Adaptation | None:
    """What to change after answer ``status`` / ``payload`` to the wire ``body``, or None."""
    if status != 400:
        return None
    code, param, message = _error_fields(payload)
    name = _named_param(code, param, message, body)
    if not name or name in ESSENTIAL or name not in body:
        return None
    reason = " ".join(message.split())[:_REASON_SHOWN] or code
    replacement = REPLACEMENTS.get(name, "")
    if replacement in body:  # the replacement was refused already: leave the field out
        replacement = ""
    return Adaptation(param=name, replacement=replacement, reason=reason)


def adapted(body: dict[str, Any], adaptations: list[Adaptation]) -> dict[str, Any]:
    """``body`` with every adaptation made, in the order they were learnt."""
    for adaptation in adaptations:
        body = adaptation.apply(body)
    return body
