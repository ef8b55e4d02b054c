"""The three curation filters as per-pair decisions with reasons and figures, and the funnel.

Pure Python and NumPy, no Django. The rules themselves (the [0.7, 1.4] length bounds, both
right or both wrong, all judges agreeing) have one home, ``annotation/curation.py``, which the
sample import's ``--filter`` uses too; this module applies them to candidate pairs and says, for
every pair a filter looked at, whether it passed, why, and with which figures.

Each filter runs on the pairs the previous ones left (the caller passes those), in the
protocol's order: length, correctness, ensemble.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.curation import (
    ENSEMBLE_SIZE,
    FILTERS,
    LENGTH_RATIO_MAX,
    LENGTH_RATIO_MIN,
    LENGTH_UNITS,
    correctness_keep,
    ensemble_keep,
    length_keep,
    length_ratio,
    parse_filters,
    text_lengths,
)

__all__ = [
    "ENSEMBLE_SIZE",
    "FILTERS",
    "LENGTH_UNITS",
    "Decisions",
    "correctness_filter",
    "ensemble_filter",
    "funnel",
    "length_filter",
    "parse_filters",
]

PREFERENCE_NAMES = {"A": "A", "B": "B", "tie": "tie", "model_a": "A", "model_b": "B"}


@dataclass
class Decisions:
    """One filter's verdict on the pairs it looked at (arrays and lists of equal length)."""

    name: str
    passed: np.ndarray  # bool
    reasons: list[str]
    figures: list[dict[str, Any]] = field(default_factory=list)


def _bounds() -> str:
    return f"{LENGTH_RATIO_MIN:g}–{LENGTH_RATIO_MAX:g}"


def length_filter(
    texts_a: Sequence[str], texts_b: Sequence[str], *, unit: str = "words"
) -> Decisions:
    """Drop pairs whose length ratio A/B is outside [0.7, 1.4] (bounds kept), in ``unit``."""
    len_a = text_lengths(texts_a, unit)
    len_b = text_lengths(texts_b, unit)
    passed = length_keep(len_a, len_b)
    ratios = length_ratio(len_a, len_b)
    reasons, figures = [], []
    for ok, ratio, a, b in zip(
        passed.tolist(), ratios.tolist(), len_a.tolist(), len_b.tolist(), strict=True
    ):
        shown = "undefined" if not np.isfinite(ratio) else f"{ratio:.3f}"
        where = "within" if ok else "outside"
        reasons.append(f"length ratio {shown} ({a} / {b} {unit}) {where} {_bounds()}")
        figures.append(
            {
                "len_a": a,
                "len_b": b,
                "unit": unit,
                "ratio": round(ratio, 6) if np.isfinite(ratio) else None,
            }
        )
    return Decisions("length", passed, reasons, figures)


def correctness_filter(
    correct_a: Sequence[bool],
    correct_b: Sequence[bool],
    *,
    answers_a: Sequence[str | None],
    answers_b: Sequence[str | None],
    reference: Sequence[str],
    by: Sequence[str],
) -> Decisions:
    """Reasoning pairs only: keep when both answers are right or both wrong.

    ``by`` says per pair where the verdicts came from ("flags in the file", "answer extractor").
    """
    n = len(correct_a)
    passed = correctness_keep(np.ones(n, dtype=bool), np.asarray(correct_a), np.asarray(correct_b))
    reasons, figures = [], []
    for i in range(n):
        a, b = bool(correct_a[i]), bool(correct_b[i])
        if a and b:
            text = "both answers correct"
        elif not a and not b:
            text = "both answers wrong"
        else:
            text = f"A {'correct' if a else 'wrong'}, B {'correct' if b else 'wrong'}"
        detail = f" (by {by[i]}"
        if by[i] == "answer extractor":
            shown_a = answers_a[i] if answers_a[i] is not None else "none found"
            shown_b = answers_b[i] if answers_b[i] is not None else "none found"
            detail += f": A {shown_a!s:.40}, B {shown_b!s:.40}, reference {reference[i]!s:.40}"
        reasons.append(text + detail + ")")
        figures.append(
            {
                "correct_a": a,
                "correct_b": b,
                "answer_a": answers_a[i],
                "answer_b": answers_b[i],
                "reference": reference[i],
                "by": by[i],
            }
        )
    return Decisions("correctness", passed, reasons, figures)


def ensemble_filter(
    verdicts: Sequence[Sequence[str]], *, by: str = "verdicts in the file"
) -> Decisions:
    """Drop pairs on which every judge gives the same overall preference."""
    normal = [[PREFERENCE_NAMES.get(v, v) for v in row] for row in verdicts]
    width = max((len(row) for row in normal), default=0)
    if any(len(row) != width for row in normal):
        raise ValueError("every pair needs the same number of judge verdicts")
    passed = ensemble_keep(np.array(normal, dtype=str).reshape(len(normal), width))
    reasons, figures = [], []
    for ok, row in zip(passed.tolist(), normal, strict=True):
        if ok:
            reasons.append(f"judges disagree: {', '.join(row)}")
        else:
            reasons.append(f"all {len(row)} judges prefer {row[0] if row else '—'}")
        figures.append({"verdicts": row, "by": by})
    return Decisions("ensemble", passed, reasons, figures)


def funnel(
    groups: Sequence[tuple[str, str]], removed_by: Sequence[str], filters: Sequence[str]
) -> list[dict[str, Any]]:
    """Per (split, source): pairs in, removed by each filter, out; a last row sums them all.

    ``removed_by[i]`` is the filter that removed pair ``i`` ("" when it survived).
    """
    names = [f for f in FILTERS if f in filters]
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for group, removed in zip(groups, removed_by, strict=True):
        row = rows.setdefault(
            group,
            {
                "split": group[0],
                "source": group[1],
                "in": 0,
                "removed": dict.fromkeys(names, 0),
                "out": 0,
            },
        )
        row["in"] += 1
        if removed:
            row["removed"][removed] = row["removed"].get(removed, 0) + 1
        else:
            row["out"] += 1
    ordered = [rows[key] for key in sorted(rows)]
    total = {"split": "all", "source": "all", "in": 0, "removed": dict.fromkeys(names, 0), "out": 0}
    for row in ordered:
        total["in"] += row["in"]
        total["out"] += row["out"]
        for name, count in row["removed"].items():
            total["removed"][name] = total["removed"].get(name, 0) + count
    return [*ordered, total]
