"""The verifier fallback for uploaded outputs, as the published evaluation applies it.

An uploaded judge output the parser cannot read (no ``Response X is better`` in its last lines)
has its last four lines sent to a verifier judge config, and the verifier's one-word answer
decides the row (``judging.verifier``). Every row decided that way is listed, so a scorecard
says how many of its verdicts a second model read.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from judging.metrics import INVALID_LABEL
from judging.models import JudgeConfig
from judging.parsing import parse_judge_output
from judging.predictions import ParsedPredictions
from judging.services.scoring import Verify
from judging.verifier import verifier_choice

from .client import CallOutcome, JudgeClient
from .engine import verifier_body
from .run import RunnerError, client_settings, generation


@dataclass(frozen=True)
class Verified:
    """A row the verifier decided (or tried to)."""

    run: int
    position: int
    question_id: str
    verdict: str | None
    answer: str
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "question_id": self.question_id,
            "verdict": self.verdict,
            "answer": self.answer[:200],
            "error": self.error,
        }


def unparsed_outputs(parsed: ParsedPredictions) -> list[tuple[int, int, str]]:
    """(run, row position, raw output) of every invalid row whose raw text the parser cannot
    read (a row predicted as another word, without raw text, is not the verifier's)."""
    found = []
    for run, labels in parsed.runs.items():
        raw = parsed.raw_outputs.get(run, {})
        invalid = np.flatnonzero(np.equal(labels, INVALID_LABEL)).tolist()
        for position in invalid:
            text = raw.get(position, "")
            if text.strip() and parse_judge_output(text) is None:
                found.append((run, position, text))
    return found


def _ask(config: JudgeConfig, outputs: list[str], transport: Any) -> list[CallOutcome]:
    settings, gen = client_settings(config), generation(config)

    async def go() -> list[CallOutcome]:
        async with JudgeClient(settings, transport=transport) as client:
            calls = [client.complete(verifier_body(text, gen)) for text in outputs]
            return list(await asyncio.gather(*calls))

    # A loop of its own thread: the caller may already run one (a browser test, a notebook).
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, go()).result()


def verifier_fallback(
    parsed: ParsedPredictions,
    *,
    question_ids: list[str],
    config: JudgeConfig,
    transport: Any = None,
    progress: Callable[[str], None] | None = None,
) -> list[Verified]:
    """Ask ``config`` about every unparsed output of ``parsed`` and apply its verdicts.

    A decided row takes the verdict (and leaves the unparsable list); an undecided one stays
    invalid. Returns every row asked, decided or not.
    """
    todo = unparsed_outputs(parsed)
    if not todo:
        return []
    if progress is not None:
        progress(f"Asking the verifier {config.name} about {len(todo):,} unparsed outputs")
    outcomes = _ask(config, [text for _, _, text in todo], transport)
    asked = []
    for (run, position, _), outcome in zip(todo, outcomes, strict=True):
        verdict = verifier_choice(outcome.visible) if outcome.ok else None
        qid = question_ids[position]
        asked.append(Verified(run, position, qid, verdict, outcome.visible, outcome.error))
        if verdict is not None:
            parsed.runs[run][position] = verdict
            parsed.invalid[run] = parsed.invalid.get(run, 0) - 1
            parsed.unparsable = [
                u for u in parsed.unparsable if not (u.run == run and u.question_id == qid)
            ]
    return asked


def upload_verifier(config_id: int | None, transport: Any = None) -> Verify | None:
    """The verifier fallback of an upload with the judge config ``config_id`` (None: none)."""
    if config_id is None:
        return None
    config = JudgeConfig.objects.filter(pk=config_id).first()
    if config is None:
        raise RunnerError("the verifier judge config was deleted", field="verifier")

    def verify(parsed: ParsedPredictions, question_ids: list[str]) -> list[dict[str, Any]]:
        asked = verifier_fallback(
            parsed, question_ids=question_ids, config=config, transport=transport
        )
        return [v.as_dict() for v in asked]

    return verify
