"""Split keys, their display names, and labels as files spell them (no Django).

The published release normalises a split label by lowercasing it and turning ``_`` into ``-``;
``open-ended`` and ``openended`` then both mean the open-ended split. Every reader (sample import,
dataset files for scoring, predictions files) goes through :func:`split_key`, so ``openEnded``,
``open_ended``, ``Open-Ended`` and ``openended`` all become our key ``open_ended``.
"""

from __future__ import annotations

from typing import Any

OPEN_ENDED = "open_ended"
REASONING = "reasoning"
CANONICAL = (OPEN_ENDED, REASONING)

LABELS = {OPEN_ENDED: "Open-ended", REASONING: "Reasoning"}

_SPELLINGS = {"open-ended": OPEN_ENDED, "openended": OPEN_ENDED, "reasoning": REASONING}


def split_label(key: str | None) -> str:
    """Display name of a split key ("open_ended" -> "Open-ended"); unknown keys pass through."""
    return LABELS.get(key or "", key or "")


def normalise_label(label: str) -> str:
    """The published normalisation: stripped, lowercase, ``_`` replaced by ``-``."""
    return label.strip().lower().replace("_", "-")


def split_key(label: Any) -> str | None:
    """Our split key for a label in any accepted spelling, or ``None`` if it is no known split."""
    if not isinstance(label, str):
        return None
    return _SPELLINGS.get(normalise_label(label))
