"""Curation filters that remove easy candidate pairs before annotation (protocol section 3).

Pure NumPy, no Django, and the one home of these rules: ``import_samples --filter`` collects one
row of features per candidate and asks :func:`curate` which to keep; the curation app
(``curation/filters.py``) applies the same rules to the pairs it builds from raw generations and
records each decision with its figures. The filters run in the protocol's order and each reports
how many pairs it removed from what the previous ones left.

- ``length``: drop when ``len(a) / len(b)`` is outside ``[0.7, 1.4]`` ("pick the longer one"
  must not be a shortcut);
- ``correctness`` (reasoning split only): keep only when both final answers are correct or both
  are wrong;
- ``ensemble``: drop when the three judges' overall preferences all agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.text import plural_form

FILTERS = ("length", "correctness", "ensemble")
LENGTH_RATIO_MIN = 0.7
LENGTH_RATIO_MAX = 1.4
ENSEMBLE_SIZE = 3
#: How a response's length is counted: whitespace-separated words, characters, or tokens (runs
#: of letters and digits, and each punctuation mark on its own; no model tokenizer is needed).
LENGTH_UNITS = ("words", "characters", "tokens")
_TOKEN = re.compile(r"\w+|[^\w\s]")


def text_length(text: str, unit: str = "characters") -> int:
    """The length of ``text`` in ``unit`` (one of :data:`LENGTH_UNITS`)."""
    if unit == "characters":
        return len(text)
    if unit == "words":
        return len(text.split())
    if unit == "tokens":
        return len(_TOKEN.findall(text))
    raise ValueError(f"unknown length unit {unit!r}; choose from {', '.join(LENGTH_UNITS)}")


def text_lengths(texts: Sequence[str], unit: str = "characters") -> np.ndarray:
    """:func:`text_length` of every text, as an int array."""
    return np.fromiter((text_length(t, unit) for t in texts), dtype=np.int64, count=len(texts))


def length_ratio(len_a: np.ndarray, len_b: np.ndarray) -> np.ndarray:
    """``len_a / len_b`` as floats; an empty B gives infinity (or NaN when both are empty)."""
    a = np.asarray(len_a, dtype=float)
    b = np.asarray(len_b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), np.where(a > 0, np.inf, np.nan))


@dataclass
class CurationFeatures:
    """One entry per candidate pair; arrays of equal length."""

    len_a: np.ndarray  # int, length of response A (see text_length)
    len_b: np.ndarray
    is_reasoning: np.ndarray  # bool
    correct_a: np.ndarray  # bool, meaningful on reasoning rows
    correct_b: np.ndarray
    ensemble: np.ndarray  # shape (n, 3), str preferences of the three judges
    exempt: np.ndarray = field(default=None)  # bool: never filtered (seed samples)

    def __post_init__(self) -> None:
        if self.exempt is None:
            self.exempt = np.zeros(len(self.len_a), dtype=bool)


@dataclass
class CurationResult:
    keep: np.ndarray  # bool mask
    removed: dict[str, int]  # filter name -> pairs it removed, in application order


def parse_filters(text: str | None) -> list[str]:
    """``"length,ensemble"`` -> ``["length", "ensemble"]`` in protocol order; raises ValueError."""
    if not text:
        return []
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in FILTERS]
    if unknown:
        raise ValueError(
            f"unknown {plural_form(len(unknown), 'filter')} {', '.join(unknown)}; "
            f"choose from {', '.join(FILTERS)}"
        )
    return [name for name in FILTERS if name in names]


def length_keep(len_a: np.ndarray, len_b: np.ndarray) -> np.ndarray:
    """True where the length ratio a/b lies in [0.7, 1.4], bounds included; an empty B is dropped.

    The ratio is compared as ``0.7 * b <= a <= 1.4 * b`` in exact decimal steps (tenths), so
    that 7/10 and 14/10 sit on the bounds rather than a rounding error away from them.
    """
    a = np.asarray(len_a, dtype=float)
    b = np.asarray(len_b, dtype=float)
    lo, hi = round(LENGTH_RATIO_MIN * 10), round(LENGTH_RATIO_MAX * 10)
    return (b > 0) & (10 * a >= lo * b) & (10 * a <= hi * b)


def correctness_keep(
    is_reasoning: np.ndarray, correct_a: np.ndarray, correct_b: np.ndarray
) -> np.ndarray:
    """Open-ended pairs pass; reasoning pairs pass when both are right or both are wrong."""
    same = np.asarray(correct_a, dtype=bool) == np.asarray(correct_b, dtype=bool)
    return ~np.asarray(is_reasoning, dtype=bool) | same


def ensemble_keep(preferences: np.ndarray) -> np.ndarray:
    """False where all judges give the same overall preference."""
    prefs = np.asarray(preferences)
    if prefs.ndim != 2 or prefs.shape[0] == 0:
        return np.ones(prefs.shape[0] if prefs.ndim else 0, dtype=bool)
    return ~np.all(prefs == prefs[:, :1], axis=1)


def curate(features: CurationFeatures, filters: list[str]) -> CurationResult:
    """Apply ``filters`` in protocol order; exempt rows are always kept."""
    n = len(features.len_a)
    keep = np.ones(n, dtype=bool)
    removed: dict[str, int] = {}
    exempt = np.asarray(features.exempt, dtype=bool)
    for name in [f for f in FILTERS if f in filters]:
        if name == "length":
            passed = length_keep(features.len_a, features.len_b)
        elif name == "correctness":
            passed = correctness_keep(features.is_reasoning, features.correct_a, features.correct_b)
        else:
            passed = ensemble_keep(features.ensemble)
        passed = passed | exempt
        removed[name] = int(np.count_nonzero(keep & ~passed))
        keep &= passed
    return CurationResult(keep=keep, removed=removed)
