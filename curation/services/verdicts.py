"""Where the ensemble filter gets its judges' holistic preferences.

:func:`pair_verdicts` is the one entry point: given the pairs that reach the ensemble filter and
the judge configurations to ask, it returns one list of preferences (``"A"``, ``"B"``,
``"tie"``) per pair, in the pairs' order and oriented to their A/B order.

- No judges named: the verdicts supplied in the generations file (``verdicts`` of each prompt,
  stored on ``RawPrompt.verdicts``), turned around when the file names the pair's responses the
  other way round.
- Judges named (``curate --judges``, by judge config name): the judge runner's holistic mode
  (``judging.runner.holistic``), asked for every pair in both orders; its answers are cached,
  so a re-run asks nothing again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

FLIP = {"A": "B", "B": "A", "tie": "tie"}


class CurationError(ValueError):
    """A curation run cannot go on; the message says why and what to do."""


class JudgeConfigMissing(CurationError):
    """Judges were named that have no judge config."""


#: The runner's verdicts as the ensemble filter reads them. A judge whose two orders disagree
#: (``invalid``) or that gave no answer has no preference: its entry names that and the judge,
#: so it never makes the judges unanimous and the pair is kept for the annotators.
RUNNER_PREFERENCE = {"model_a": "A", "model_b": "B"}


def _runner_preference(verdict: str | None, judge: str) -> str:
    if verdict in RUNNER_PREFERENCE:
        return RUNNER_PREFERENCE[verdict]
    return f"{judge}: orders disagree" if verdict == "invalid" else f"{judge}: no answer"


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


def runner_verdicts(
    *,
    pairs: Sequence[VerdictRequest],
    judges: Sequence[str],
    progress: Callable[..., None] | None = None,
    transport: Any = None,
) -> list[list[str]]:
    """The judge runner's holistic preferences: one per judge and pair, both orders combined.

    Each judge is a judge config name; every pair is asked in both orders (whatever the
    config's own setting), the B/A answer mapped back; a judge whose orders disagree, or that
    gave no answer, has no preference on that pair (see :data:`RUNNER_PREFERENCE`).
    """
    from judging.models import JudgeConfig
    from judging.runner.holistic import HolisticItem, holistic_judge

    configs = {c.name: c for c in JudgeConfig.objects.filter(name__in=list(judges))}
    unknown = [name for name in judges if name not in configs]
    if unknown:
        raise JudgeConfigMissing(
            f"No judge config named {', '.join(repr(n) for n in unknown)}; "
            "create it on the Judge configs page or leave it out of --judges."
        )
    items = [
        HolisticItem(
            id=i,
            question=pair.question,
            response_a=pair.response_a,
            response_b=pair.response_b,
            image_name=pair.image,
        )
        for i, pair in enumerate(pairs)
    ]
    columns = []
    for name in judges:
        config = configs[name]
        config.orders = JudgeConfig.Orders.BOTH  # in memory only: the filter needs both orders
        verdicts = holistic_judge(items, config, progress=progress, transport=transport)
        columns.append([_runner_preference(verdicts[i].verdict, name) for i in range(len(items))])
    return [list(row) for row in zip(*columns, strict=True)] if columns else [[] for _ in pairs]


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
