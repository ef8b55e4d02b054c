"""Read a judge's verdict from its raw output, by the published Multi-Crit evaluation rule.

The rule (protocol section 8, as the published evaluation applies it): strip the text, take its
last three lines (split on ``\\n``; blank lines count), lowercase them, and take the first match of
``[*]*response (\\d+)[*]* is better``. The number is read with ``int()``, as the published code
reads it: ``\\d`` matches any Unicode decimal digit and ``int()`` converts them all, so ``01``,
``001`` and Arabic-Indic ``١`` are 1. A number equal to 1 is ``model_a``, equal to 2 is ``model_b``;
anything else (no match, another number, a number ``int()`` refuses, such as one of more digits
than Python converts) is unparsed (``None``), which scores as wrong. This is the only parser of
raw judge text in the project, so the same outputs score the same here as there.

A scalar judge (a reward model, or a pointwise judge scoring each response) gives a score per
response instead; :func:`verdicts_from_scores` derives its verdict with a tie margin ``δ``:
``|score_a - score_b| <= δ`` is a tie, else the higher score wins. A tie is neither
``model_a`` nor ``model_b``, so it scores as wrong on a pairwise row (like an invalid verdict).
"""

from __future__ import annotations

import math
import re

import numpy as np

from judging.metrics import MODEL_A, MODEL_B, TIE_LABEL

#: How many lines from the end of the stripped text may hold the verdict.
LAST_LINES = 3

_VERDICT = re.compile(r"[*]*response (\d+)[*]* is better")
_NUMBER = {1: MODEL_A, 2: MODEL_B}


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
    try:
        number = int(match.group(1))
    except ValueError:  # more digits than int() converts from text
        return None
    return _NUMBER.get(number)


def tie_margin_problem(value: object) -> str | None:
    """Why ``value`` cannot be a tie margin (a finite number, 0 or more), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number, got {value!r}"
    if not math.isfinite(value) or value < 0:
        return f"must be a finite number, 0 or more, got {value!r}"
    return None


def verdicts_from_scores(
    score_a: np.ndarray, score_b: np.ndarray, tie_margin: float = 0.0
) -> np.ndarray:
    """``model_a`` / ``model_b`` / ``tie`` per row from two scores; ``None`` where one is NaN."""
    problem = tie_margin_problem(tie_margin)
    if problem:
        raise ValueError(f"tie margin {problem}")
    a = np.asarray(score_a, dtype=np.float64)
    b = np.asarray(score_b, dtype=np.float64)
    diff = a - b
    out = np.full(diff.shape, None, dtype=object)
    scored = ~np.isnan(diff)
    out[scored & (diff > tie_margin)] = MODEL_A
    out[scored & (-diff > tie_margin)] = MODEL_B
    out[scored & (np.abs(diff) <= tie_margin)] = TIE_LABEL
    return out
