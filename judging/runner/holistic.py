"""Holistic mode: one overall preference per sample (no criterion), for the curation filter.

The curation work calls :func:`holistic_judge` with samples and a judge config; each sample is
asked once per run and order with its own template (``judging/prompts/holistic.txt``), through
the same client, cache and verifier as the criterion runs, and the runs and orders combine as
they do there (orders: the agreeing verdict or invalid; runs: majority vote).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from annotation.models import Sample
from judging.metrics import majority_vote
from judging.models import JudgeCall, JudgeConfig
from judging.prompt import PromptTemplate, load_template

from .engine import Task
from .figures import combine_orders
from .requests import RowCall, image_sha256
from .run import call_label, calls_by_key, keys_for, make_calls, orders_of, stored_calls

HOLISTIC_TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "prompts" / "holistic.txt"
KIND = JudgeCall.Kind.HOLISTIC


@dataclass(frozen=True)
class HolisticVerdict:
    """A sample's overall verdict (``model_a``/``model_b``/``invalid``; None: no answer)."""

    sample_id: int
    verdict: str | None
    per_run: list[str | None]


def _calls(samples: list[Sample], config: JudgeConfig) -> list[RowCall]:
    calls = []
    for sample in samples:
        sha = sample.image_sha256
        if sample.image and not sha:
            with sample.image.open("rb") as handle:
                sha = image_sha256(handle.read())
        for run in range(1, config.runs + 1):
            for order in orders_of(config):
                calls.append(
                    RowCall(
                        question_id=str(sample.pk),
                        split=sample.split,
                        criterion="",
                        criterion_name="",
                        criterion_description="",
                        question=sample.question,
                        response_a=sample.response_a,
                        response_b=sample.response_b,
                        image_name=sample.image.name if sample.image else "",
                        image_sha256=sha if sample.image else "",
                        run_index=run,
                        order=order,
                    )
                )
    return calls


def holistic_judge(
    samples: Iterable[Sample],
    config: JudgeConfig,
    *,
    template: PromptTemplate | None = None,
    progress: Callable[..., None] | None = None,
    transport: Any = None,
) -> dict[int, HolisticVerdict]:
    """Each sample's overall verdict by ``config`` (answers cached like criterion calls)."""
    samples = list(samples)
    template = template or load_template(HOLISTIC_TEMPLATE_PATH)
    calls = _calls(samples, config)
    keys = keys_for(calls, config, template, kind=KIND)
    before = stored_calls(keys)
    tasks = list(
        {k: Task(k, c) for k, c in zip(keys, calls, strict=True) if k not in before}.values()
    )
    make_calls(
        tasks,
        config=config,
        template=template,
        total=len(calls),
        cached=len(calls) - len(tasks),
        progress=progress or (lambda *a, **k: None),
        kind=KIND,
        transport=transport,
    )
    stored = calls_by_key(keys)
    both = len(orders_of(config)) == 2
    by_sample: dict[int, dict[tuple[int, str], JudgeCall | None]] = {}
    for call, key in zip(calls, keys, strict=True):
        by_sample.setdefault(int(call.question_id), {})[call.run_index, call.order] = stored.get(
            key
        )
    out = {}
    for sample in samples:
        cells = by_sample[sample.pk]
        per_run = [
            combine_orders(
                call_label(cells.get((run, "ab"))), call_label(cells.get((run, "ba"))), both=both
            )
            for run in range(1, config.runs + 1)
        ]
        voted = majority_vote([np.array([v], dtype=object) for v in per_run])[0]
        out[sample.pk] = HolisticVerdict(sample_id=sample.pk, verdict=voted, per_run=per_run)
    return out
