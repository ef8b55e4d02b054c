"""Read a judge's verdict from its raw output, by the published Multi-Crit evaluation rule.

The rule (protocol section 8, as the published evaluation applies it): strip the text, take its
last three lines (split on ``\\n``; blank lines count), lowercase them, and take the first match of
``[*]*response (\\d+)[*]* is better``; ``1`` is ``model_a``, ``2`` is ``model_b``, and anything
else (no match, another number) is unparsed (``None``), which scores as wrong. This is the only
parser of raw judge text in the project, so the same outputs score the same here as there.
"""

from __future__ import annotations

import re

from judging.metrics import MODEL_A, MODEL_B

#: How many lines from the end of the stripped text may hold the verdict.
LAST_LINES = 3

_VERDICT = re.compile(r"[*]*response (\d+)[*]* is better")
_NUMBER = {"1": MODEL_A, "2": MODEL_B}


def tail_lines(text: object, n: int = LAST_LINES) -> str:
    """The last ``n`` lines of the stripped text, joined by newlines (blank lines count)."""
    if not isinstance(text, str) or n <= 0:
        return ""
    return "\n".join(text.strip().split("\n")[-n:])


def parse_judge_output(text: object) -> str | None:
    """The verdict ``"model_a"`` / ``"model_b"`` in a judge's raw output, or ``None``."""
    match = _VERDICT.search(tail_lines(text, LAST_LINES).lower())
    if match is None:
        return None
    return _NUMBER.get(match.group(1))
