"""A curation run: pair the stored generations, filter the pairs, record every decision.

The computation is pure (``curation.pairing``, ``curation.filters``, ``curation.answers``); this
service loads the project's raw prompts, runs it, and replaces the project's candidate pairs and
their decisions in one transaction. The same generations, options and seed give the same pairs
and decisions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction

from annotation.models import Project

from ..answers import answer_check
from ..embeddings import embedder_get
from ..filters import (
    FILTERS,
    LENGTH_UNITS,
    Decisions,
    correctness_filter,
    ensemble_filter,
    funnel,
    length_filter,
)
from ..models import CandidatePair, CurationRun, PairDecision, RawPrompt, RawResponse
from ..pairing import Pair, Prompt, Response, pairs_make
from .verdicts import CurationError, VerdictRequest, pair_verdicts

Progress = Callable[..., None]


@dataclass(frozen=True)
class RunOptions:
    pairs_per_prompt: int = 2
    same_model: bool = False
    filters: tuple[str, ...] = FILTERS
    judges: tuple[str, ...] = ()
    seed: int = 0
    length_unit: str = "words"
    embedding: str = "tfidf"

    def as_dict(self) -> dict[str, Any]:
        return {
            "pairs_per_prompt": self.pairs_per_prompt,
            "same_model": self.same_model,
            "filters": list(self.filters),
            "judges": list(self.judges),
            "seed": self.seed,
            "length_unit": self.length_unit,
            "embedding": self.embedding,
        }


def pair_external_id(prompt_id: str, pair: Pair) -> str:
    """The promoted sample's id: the prompt id and a digest of the two responses."""
    key = f"{pair.a.model}#{pair.a.sample}|{pair.b.model}#{pair.b.sample}"
    return f"{prompt_id[:150]}~{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _label(pair: Pair) -> str:
    return f"{pair.prompt}: {pair.a.model}#{pair.a.sample} vs {pair.b.model}#{pair.b.sample}"


def curation_run(
    *,
    project: Project,
    options: RunOptions,
    by: Any = None,
    progress: Progress | None = None,
) -> CurationRun:
    """Pair and filter the project's generations; returns the run with its funnel.

    Raises :class:`CurationError` when the options cannot be met (no generations, verdicts
    missing for the ensemble filter, judges named without the runner).
    """
    progress = progress or (lambda *a, **k: None)
    if options.length_unit not in LENGTH_UNITS:
        raise CurationError(
            f"unknown length unit {options.length_unit!r}; choose from {', '.join(LENGTH_UNITS)}"
        )
    try:
        embed = embedder_get(options.embedding)
    except ValueError as exc:
        raise CurationError(str(exc)) from None
    prompts_by_id = {p.prompt_id: p for p in RawPrompt.objects.filter(project=project)}
    if not prompts_by_id:
        raise CurationError("This project has no generations yet: import a generations file.")
    responses: dict[int, RawResponse] = {}
    grouped: dict[str, list[Response]] = {key: [] for key in prompts_by_id}
    for row in RawResponse.objects.filter(prompt__project=project).select_related("prompt"):
        responses[row.pk] = row
        grouped[row.prompt.prompt_id].append(
            Response(row.pk, row.model, row.sample_index, row.text)
        )
    active = [f for f in FILTERS if f in options.filters]
    steps = len(active) + 2
    progress(0, steps, "Pairing")
    pairs = pairs_make(
        [Prompt(key, tuple(items)) for key, items in grouped.items()],
        pairs_per_prompt=options.pairs_per_prompt,
        same_model=options.same_model,
        seed=options.seed,
        embed=embed,
        embedding=options.embedding,
    )
    n = len(pairs)
    removed_by = np.array([""] * n, dtype=object)
    decisions: list[tuple[int, Decisions, np.ndarray]] = []  # (order, decisions, pair indices)
    for order, name in enumerate(active):
        progress(1 + order, steps, f"Filter: {name}")
        alive = np.flatnonzero(removed_by == "")
        if name == "correctness":
            alive = np.array(
                [i for i in alive if prompts_by_id[pairs[i].prompt].split == "reasoning"],
                dtype=int,
            )
        if len(alive) == 0:
            continue
        chosen = [pairs[i] for i in alive]
        if name == "length":
            result = length_filter(
                [p.a.text for p in chosen], [p.b.text for p in chosen], unit=options.length_unit
            )
        elif name == "correctness":
            result = _correctness(chosen, prompts_by_id, responses)
        else:
            requests = [
                VerdictRequest(
                    label=_label(p),
                    question=prompts_by_id[p.prompt].question,
                    image=prompts_by_id[p.prompt].image.name,
                    response_a=p.a.text,
                    response_b=p.b.text,
                    key_a=(p.a.model, p.a.sample),
                    key_b=(p.b.model, p.b.sample),
                    file_verdicts=prompts_by_id[p.prompt].verdicts,
                )
                for p in chosen
            ]
            verdicts = pair_verdicts(pairs=requests, judges=list(options.judges))
            by_what = "judge runner" if options.judges else "verdicts in the file"
            result = ensemble_filter(verdicts, by=by_what)
        removed_by[alive[~result.passed]] = name
        decisions.append((order, result, alive))
    groups = [(prompts_by_id[p.prompt].split, prompts_by_id[p.prompt].source) for p in pairs]
    rows = funnel(groups, removed_by.tolist(), active)
    progress(steps - 1, steps, "Saving")
    with transaction.atomic():
        CandidatePair.objects.filter(project=project).delete()
        stored = CandidatePair.objects.bulk_create(
            [
                CandidatePair(
                    project=project,
                    prompt=prompts_by_id[p.prompt],
                    response_a_id=p.a.key,
                    response_b_id=p.b.key,
                    kind=p.kind,
                    how=p.how,
                    position=i,
                    removed_by=removed_by[i],
                    external_id=pair_external_id(p.prompt, p),
                )
                for i, p in enumerate(pairs)
            ],
            batch_size=2000,
        )
        PairDecision.objects.bulk_create(
            [
                PairDecision(
                    pair_id=stored[index].pk,
                    filter=result.name,
                    order=order,
                    passed=bool(result.passed[j]),
                    reason=result.reasons[j][:400],
                    figures=result.figures[j],
                )
                for order, result, indices in decisions
                for j, index in enumerate(indices.tolist())
            ],
            batch_size=2000,
        )
        run = CurationRun.objects.create(
            project=project,
            params=options.as_dict(),
            funnel=rows,
            created_by=by if getattr(by, "is_authenticated", False) else None,
        )
    progress(steps, steps, "Done")
    return run


def _correctness(
    pairs: Sequence[Pair], prompts: dict[str, RawPrompt], responses: dict[int, RawResponse]
) -> Decisions:
    """Right or wrong per response: the file's flag when given, else the answer extractor."""
    checked: dict[int, tuple[bool, str | None, str]] = {}

    def verdict(key: int) -> tuple[bool, str | None, str]:
        if key not in checked:
            row = responses[key]
            if row.correct is not None:
                checked[key] = (row.correct, None, "flags in the file")
            else:
                result = answer_check(row.text, prompts[row.prompt.prompt_id].reference_answer)
                checked[key] = (result.correct, result.extracted, "answer extractor")
        return checked[key]

    a = [verdict(p.a.key) for p in pairs]
    b = [verdict(p.b.key) for p in pairs]
    return correctness_filter(
        [x[0] for x in a],
        [x[0] for x in b],
        answers_a=[x[1] for x in a],
        answers_b=[x[1] for x in b],
        reference=[prompts[p.prompt].reference_answer for p in pairs],
        by=[
            x[2] if x[2] == y[2] else "flags and answer extractor"
            for x, y in zip(a, b, strict=True)
        ],
    )
