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
from django.core.files.storage import default_storage

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
class HolisticItem:
    """What a judge sees of one item in holistic mode: a sample, or a curation candidate pair."""

    id: int
    question: str
    response_a: str
    response_b: str
    image_name: str = ""  # storage name; "" for none
    image_sha256: str = ""  # computed from the stored image when empty
    split: str = ""

    @classmethod
    def of_sample(cls, sample: Sample) -> HolisticItem:
        return cls(
            id=sample.pk,
            question=sample.question,
            response_a=sample.response_a,
            response_b=sample.response_b,
            image_name=sample.image.name if sample.image else "",
            image_sha256=sample.image_sha256 or "",
            split=sample.split,
        )


@dataclass(frozen=True)
class HolisticVerdict:
    """A sample's overall verdict (``model_a``/``model_b``/``invalid``; None: no answer)."""

    sample_id: int
    verdict: str | None
    per_run: list[str | None]


def _image_sha(name: str) -> str:
    with default_storage.open(name, "rb") as handle:
        return image_sha256(handle.read())


def _calls(items: list[HolisticItem], config: JudgeConfig) -> list[RowCall]:
    calls = []
    for item in items:
        sha = item.image_sha256 or (_image_sha(item.image_name) if item.image_name else "")
        for run in range(1, config.runs + 1):
            for order in orders_of(config):
                calls.append(
                    RowCall(
                        question_id=str(item.id),
                        split=item.split,
                        criterion="",
                        criterion_name="",
                        criterion_description="",
                        question=item.question,
                        response_a=item.response_a,
                        response_b=item.response_b,
                        image_name=item.image_name,
                        image_sha256=sha,
                        run_index=run,
                        order=order,
                    )
                )
    return calls


def holistic_judge(
    samples: Iterable[Sample | HolisticItem],
    config: JudgeConfig,
    *,
    template: PromptTemplate | None = None,
    progress: Callable[..., None] | None = None,
    transport: Any = None,
) -> dict[int, HolisticVerdict]:
    """Each item's overall verdict by ``config``, keyed by sample id (or item id); answers are
    cached like criterion calls."""
    samples = [s if isinstance(s, HolisticItem) else HolisticItem.of_sample(s) for s in samples]
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
        cells = by_sample[sample.id]
        per_run = [
            combine_orders(
                call_label(cells.get((run, "ab"))), call_label(cells.get((run, "ba"))), both=both
            )
            for run in range(1, config.runs + 1)
        ]
        voted = majority_vote([np.array([v], dtype=object) for v in per_run])[0]
        out[sample.id] = HolisticVerdict(sample_id=sample.id, verdict=voted, per_run=per_run)
    return out
