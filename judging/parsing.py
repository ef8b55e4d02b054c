"""Read a judge's verdict from its raw output (protocol section 8).

The judge prompt asks for a justification and then a final line ``Response X is better.``; the
verdict is taken from the last non-empty lines, bottom-most match first, so that a justification
mentioning "Response 1 is better at ..." earlier on cannot win. Markdown emphasis, backticks,
headings, quotes and trailing punctuation are ignored, and a ``Final answer:`` style prefix is
allowed. An explicit prediction value (``model_a``/``model_b``/``A``/``B``) is accepted as is.
Anything else is invalid (``None``).
"""

from __future__ import annotations

import re

from judging.metrics import MODEL_A, MODEL_B

# How many non-empty lines from the end may hold the verdict: the final line, or a short sign-off
# after it ("Hope this helps.").
LAST_LINES = 3

_EXPLICIT = {"model_a": MODEL_A, "model_b": MODEL_B, "a": MODEL_A, "b": MODEL_B}
_NUMBER = {"1": MODEL_A, "2": MODEL_B}
_DECORATION = re.compile(r"[*_`~]")
_VERDICT = re.compile(
    r"""^
    (?:\#+\s*)?                                              # a Markdown heading
    (?:(?:final\s+)?(?:answer|verdict|judg(?:e)?ment|decision|conclusion)\s*[:\-]\s*)?
    (?:therefore|thus|so|overall|in\s+conclusion)?[,\s]*
    response\s*[\[(]?\s*([12])\s*[\])]?\s+is\s+(?:the\s+)?better
    [\s.!'"”’)\]]*$""",
    re.IGNORECASE | re.VERBOSE,
)


def _clean(line: str) -> str:
    line = _DECORATION.sub("", line).strip()
    return line.lstrip(">").strip().strip("'\"“”‘’").strip()


def parse_judge_output(text: object) -> str | None:
    """The verdict ``"model_a"`` / ``"model_b"`` in a judge's output, or ``None`` if invalid."""
    if not isinstance(text, str):
        return None
    # Underscores belong to model_a / model_b here, so only emphasis stars and quotes go.
    explicit = _EXPLICIT.get(text.strip().strip("*`'\" .").lower())
    if explicit is not None:
        return explicit
    lines = [line for line in (_clean(raw) for raw in text.splitlines()) if line]
    for line in reversed(lines[-LAST_LINES:]):
        match = _VERDICT.match(line)
        if match:
            return _NUMBER[match.group(1)]
    return None
