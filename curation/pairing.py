"""Candidate pairs from raw generations, deterministic from a seed (protocol section 3).

Pure Python and NumPy, no Django.

- **Cross-model**: per prompt, ``pairs_per_prompt`` pairs of two different models. Model pairs
  are spread over the whole file: each prompt takes the model pairs used least so far (ties in
  an order drawn from the seed), then one sample of each model and the A/B order from the seed.
- **Same-model**: per prompt and model with two samples or more, the two samples furthest apart
  by cosine distance of their embeddings (TF-IDF unless another embedder is given).

Every random draw of a prompt comes from a generator seeded with ``(seed, crc32(prompt id))``,
and prompts are visited in id order, so the same file and seed give the same pairs however the
file is ordered. Each pair carries ``how``: the method and the figures that chose it.
"""

from __future__ import annotations

import itertools
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .embeddings import Embedder, farthest_pair, tfidf_embed

CROSS_MODEL = "cross_model"
SAME_MODEL = "same_model"


@dataclass(frozen=True)
class Response:
    key: int  # the caller's id of the response
    model: str
    sample: int
    text: str


@dataclass(frozen=True)
class Prompt:
    key: str  # the prompt id
    responses: Sequence[Response]


@dataclass(frozen=True)
class Pair:
    prompt: str
    a: Response
    b: Response
    kind: str  # CROSS_MODEL | SAME_MODEL
    how: dict[str, Any] = field(default_factory=dict)


def prompt_rng(seed: int, prompt_key: str) -> np.random.Generator:
    """The random generator of one prompt: independent of the other prompts and of file order."""
    return np.random.default_rng([int(seed), zlib.crc32(prompt_key.encode())])


def _oriented(rng: np.random.Generator, first: Response, second: Response) -> tuple[Response, ...]:
    return (second, first) if rng.random() < 0.5 else (first, second)


def cross_model_pairs(prompts: Sequence[Prompt], *, pairs_per_prompt: int, seed: int) -> list[Pair]:
    """``pairs_per_prompt`` cross-model pairs per prompt, model pairs spread over the file."""
    used: Counter[tuple[str, str]] = Counter()
    pairs: list[Pair] = []
    if pairs_per_prompt <= 0:
        return pairs
    for prompt in sorted(prompts, key=lambda p: p.key):
        rng = prompt_rng(seed, prompt.key)
        by_model: dict[str, list[Response]] = defaultdict(list)
        for response in sorted(prompt.responses, key=lambda r: (r.model, r.sample)):
            by_model[response.model].append(response)
        model_pairs = list(itertools.combinations(sorted(by_model), 2))
        if not model_pairs:
            continue
        order = rng.permutation(len(model_pairs))
        ranked = sorted(order.tolist(), key=lambda i: used[model_pairs[i]])  # stable: seed order
        for index in ranked[:pairs_per_prompt]:
            m1, m2 = model_pairs[index]
            used[(m1, m2)] += 1
            first = by_model[m1][int(rng.integers(len(by_model[m1])))]
            second = by_model[m2][int(rng.integers(len(by_model[m2])))]
            a, b = _oriented(rng, first, second)
            how = {"method": CROSS_MODEL, "seed": int(seed), "models": [a.model, b.model]}
            pairs.append(Pair(prompt.key, a, b, CROSS_MODEL, how))
    return pairs


def same_model_pairs(
    prompts: Sequence[Prompt],
    *,
    seed: int,
    embed: Embedder = tfidf_embed,
    embedding: str = "tfidf",
) -> list[Pair]:
    """Per prompt and model with 2+ samples, its two samples with the largest cosine distance."""
    pairs: list[Pair] = []
    for prompt in sorted(prompts, key=lambda p: p.key):
        # A generator of its own, so that turning same-model pairs on changes no cross pair.
        rng = prompt_rng(seed + 1_000_003, prompt.key)
        by_model: dict[str, list[Response]] = defaultdict(list)
        for response in sorted(prompt.responses, key=lambda r: (r.model, r.sample)):
            by_model[response.model].append(response)
        for model in sorted(by_model):
            samples = by_model[model]
            if len(samples) < 2:
                continue
            i, j, distance = farthest_pair(embed([r.text for r in samples]))
            a, b = _oriented(rng, samples[i], samples[j])
            how = {
                "method": SAME_MODEL,
                "seed": int(seed),
                "embedding": embedding,
                "cosine_distance": round(distance, 6),
                "samples": [a.sample, b.sample],
                "candidates": len(samples),
            }
            pairs.append(Pair(prompt.key, a, b, SAME_MODEL, how))
    return pairs


def pairs_make(
    prompts: Sequence[Prompt],
    *,
    pairs_per_prompt: int = 2,
    same_model: bool = False,
    seed: int = 0,
    embed: Embedder = tfidf_embed,
    embedding: str = "tfidf",
    progress: Callable[[int], None] | None = None,
) -> list[Pair]:
    """Cross-model pairs, then (with ``same_model``) same-model pairs, in prompt order."""
    pairs = cross_model_pairs(prompts, pairs_per_prompt=pairs_per_prompt, seed=seed)
    if progress:
        progress(len(pairs))
    if same_model:
        pairs += same_model_pairs(prompts, seed=seed, embed=embed, embedding=embedding)
    order = {key: i for i, key in enumerate(sorted({p.key for p in prompts}))}
    return sorted(pairs, key=lambda p: (order[p.prompt], p.kind != CROSS_MODEL))


def stratified_pick(strata: Sequence[Any], count: int, *, seed: int) -> list[int]:
    """Indices of ``count`` items drawn so that each stratum keeps its share (largest remainder).

    Returns every index when ``count`` is at least the number of items; the result is sorted.
    """
    n = len(strata)
    if count >= n:
        return list(range(n))
    if count <= 0:
        return []
    groups: dict[Any, list[int]] = defaultdict(list)
    for index, stratum in enumerate(strata):
        groups[stratum].append(index)
    keys = sorted(groups, key=str)
    quotas = {key: count * len(groups[key]) / n for key in keys}
    take = {key: int(quotas[key]) for key in keys}
    left = count - sum(take.values())
    by_remainder = sorted(keys, key=lambda k: (-(quotas[k] - take[k]), str(k)))
    for key in by_remainder[:left]:
        take[key] += 1
    rng = np.random.default_rng(int(seed))
    chosen: list[int] = []
    for key in keys:
        members = groups[key]
        picked = rng.choice(len(members), size=take[key], replace=False)
        chosen.extend(members[i] for i in picked.tolist())
    return sorted(chosen)
