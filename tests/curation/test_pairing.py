"""Pairing: same-model selection on hand-made vectors, cross-model spread, determinism."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from curation.embeddings import cosine_distances, farthest_pair, tfidf_embed
from curation.pairing import (
    CROSS_MODEL,
    SAME_MODEL,
    Prompt,
    Response,
    pairs_make,
    stratified_pick,
)


def test_farthest_pair_on_hand_made_vectors():
    vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.7, 0.7]])
    i, j, distance = farthest_pair(vectors)
    assert (i, j) == (0, 2)  # orthogonal: distance 1
    assert distance == pytest.approx(1.0)


def test_farthest_pair_opposite_vectors_and_ties():
    assert farthest_pair(np.array([[1.0, 0.0], [1.0, 1.0], [-1.0, 0.0]]))[:2] == (0, 2)
    # Three equally distant pairs: the first in row order wins.
    i, j, _ = farthest_pair(np.eye(3))
    assert (i, j) == (0, 1)
    with pytest.raises(ValueError, match="at least two"):
        farthest_pair(np.array([[1.0, 0.0]]))


def test_cosine_distance_ignores_length_and_zero_rows_are_far():
    d = cosine_distances(np.array([[1.0, 1.0], [3.0, 3.0], [0.0, 0.0]]))
    assert d[0, 1] == pytest.approx(0.0)
    assert d[0, 2] == pytest.approx(1.0)


def test_tfidf_rows_are_unit_length_and_similar_texts_are_close():
    rows = tfidf_embed(["the red square", "the red square again", "a blue circle", ""])
    assert np.linalg.norm(rows[:3], axis=1) == pytest.approx([1, 1, 1])
    assert not rows[3].any()
    d = cosine_distances(rows)
    assert d[0, 1] < d[0, 2]


def _prompts(n: int = 6, models=("m1", "m2", "m3", "m4"), samples: int = 3) -> list[Prompt]:
    return [
        Prompt(
            f"p{i}",
            tuple(
                Response(i * 100 + k * 10 + s, m, s, f"prompt {i} model {m} sample {s} " * (s + 1))
                for k, m in enumerate(models)
                for s in range(samples)
            ),
        )
        for i in range(n)
    ]


def _keys(pairs):
    return [(p.prompt, p.a.key, p.b.key, p.kind) for p in pairs]


def test_pairing_is_deterministic_and_independent_of_file_order():
    prompts = _prompts()
    first = pairs_make(prompts, pairs_per_prompt=2, same_model=True, seed=7)
    again = pairs_make(list(reversed(prompts)), pairs_per_prompt=2, same_model=True, seed=7)
    assert _keys(first) == _keys(again)
    assert [p.how for p in first] == [p.how for p in again]
    other = pairs_make(prompts, pairs_per_prompt=2, same_model=True, seed=8)
    assert _keys(other) != _keys(first)


def test_cross_model_pairs_are_spread_over_model_pairs():
    pairs = pairs_make(_prompts(n=6), pairs_per_prompt=2, seed=0)
    assert len(pairs) == 12 and all(p.kind == CROSS_MODEL for p in pairs)
    assert all(p.a.model != p.b.model for p in pairs)
    used = Counter(tuple(sorted((p.a.model, p.b.model))) for p in pairs)
    assert len(used) == 6 and set(used.values()) == {2}  # 6 model pairs, each used twice
    per_prompt = Counter(p.prompt for p in pairs)
    assert set(per_prompt.values()) == {2}
    assert pairs[0].how == {
        "method": CROSS_MODEL,
        "seed": 0,
        "models": [pairs[0].a.model, pairs[0].b.model],
    }


def test_same_model_pair_is_the_farthest_by_the_embedder():
    texts = ["alpha beta", "alpha beta gamma", "delta epsilon", "alpha"]
    prompt = Prompt("p", tuple(Response(s, "m1", s, t) for s, t in enumerate(texts)))

    def embed(items):
        # Hand-made vectors: samples 0 and 2 are orthogonal, the rest close to 0.
        table = {
            "alpha beta": [1, 0],
            "alpha beta gamma": [1, 0.2],
            "delta epsilon": [0, 1],
            "alpha": [1, 0.1],
        }
        return np.array([table[t] for t in items], dtype=float)

    pairs = pairs_make([prompt], pairs_per_prompt=1, same_model=True, embed=embed, embedding="hand")
    assert len(pairs) == 1
    pair = pairs[0]
    assert pair.kind == SAME_MODEL and {pair.a.sample, pair.b.sample} == {0, 2}
    assert pair.how["cosine_distance"] == pytest.approx(1.0)
    assert pair.how["embedding"] == "hand" and pair.how["candidates"] == 4


def test_stratified_pick_keeps_each_share():
    strata = ["a"] * 60 + ["b"] * 30 + ["c"] * 10
    picked = stratified_pick(strata, 10, seed=0)
    assert len(picked) == 10
    assert Counter(strata[i] for i in picked) == {"a": 6, "b": 3, "c": 1}
    assert picked == stratified_pick(strata, 10, seed=0)
    assert stratified_pick(strata, 500, seed=0) == list(range(100))
