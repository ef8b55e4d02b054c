"""Where the ensemble filter gets its judges' holistic preferences.

:func:`pair_verdicts` is the one entry point: given the pairs that reach the ensemble filter and
the judge configurations to ask, it returns one list of preferences (``"A"``, ``"B"``,
``"tie"``) per pair, in the pairs' order and oriented to their A/B order.

- No judges named: the verdicts supplied in the generations file (``verdicts`` of each prompt,
  stored on ``RawPrompt.verdicts``), turned around when the file names the pair's responses the
  other way round.
- Judges named (``curate --judges``): the judge runner's holistic mode, asked once per pair and
  judge in both orders. The runner is not part of this installation yet; :func:`runner_verdicts`
  is where it plugs in and until then raises :class:`JudgeRunnerMissing`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

FLIP = {"A": "B", "B": "A", "tie": "tie"}


class CurationError(ValueError):
    """A curation run cannot go on; the message says why and what to do."""


class JudgeRunnerMissing(CurationError):
    """Judges were named but the judge runner (its holistic mode) is not installed."""


@dataclass(frozen=True)
class VerdictRequest:
    """One pair as a judge sees it, plus the verdicts the file supplied for it."""

    label: str  # how messages name the pair: "p17: m1#0 vs m2#1"
    question: str
    image: str  # storage name of the prompt's image
    response_a: str
    response_b: str
    key_a: tuple[str, int]  # (model, sample index)
    key_b: tuple[str, int]
    file_verdicts: Sequence[dict[str, Any]] = ()


def file_verdicts(request: VerdictRequest) -> list[str] | None:
    """The file's verdicts for this pair, oriented to its A/B order; None when it has none."""
    for item in request.file_verdicts:
        a, b = tuple(item["a"]), tuple(item["b"])
        if (a, b) == (request.key_a, request.key_b):
            return list(item["judges"])
        if (a, b) == (request.key_b, request.key_a):
            return [FLIP[v] for v in item["judges"]]
    return None


def runner_verdicts(*, pairs: Sequence[VerdictRequest], judges: Sequence[str]) -> list[list[str]]:
    """The judge runner's holistic preferences: one per judge and pair, both orders combined.

    The judge runner (issue 12) plugs in here: for each judge configuration name, ask its
    holistic mode for every pair in both orders (A/B and B/A), map the B/A answer back, and
    combine the two into one preference per judge ("A", "B", or "tie" when the orders
    disagree). Until then this raises :class:`JudgeRunnerMissing`.
    """
    raise JudgeRunnerMissing(
        f"--judges {','.join(judges)} needs the judge runner's holistic mode, which is not "
        "installed yet (curation/services/verdicts.py, runner_verdicts). Supply the judges' "
        "verdicts in the generations file (verdicts of each prompt) and leave out --judges."
    )


def pair_verdicts(
    *, pairs: Sequence[VerdictRequest], judges: Sequence[str] | None = None
) -> list[list[str]]:
    """Per pair, the judges' overall preferences: from the runner when ``judges`` are named,
    else from the file; raises :class:`CurationError` naming pairs without verdicts."""
    if judges:
        return runner_verdicts(pairs=pairs, judges=judges)
    found = [file_verdicts(request) for request in pairs]
    missing = [request.label for request, v in zip(pairs, found, strict=True) if v is None]
    if missing:
        shown = "; ".join(missing[:5]) + (
            f"; and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise CurationError(
            f"The ensemble filter needs judge verdicts for every pair it checks; "
            f"{len(missing)} pair{'s have' if len(missing) != 1 else ' has'} none in the file "
            f"({shown}). Add them under verdicts, or leave the ensemble filter out."
        )
    widths = {len(v) for v in found if v is not None}
    if len(widths) > 1:
        raise CurationError(
            "The ensemble filter needs the same number of judges for every pair; the file "
            f"gives {', '.join(str(w) for w in sorted(widths))} verdicts on different pairs."
        )
    return [v for v in found if v is not None]
