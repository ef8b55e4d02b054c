"""Text embeddings for choosing same-model pairs: TF-IDF by default, fully offline, pluggable.

An embedder is any function from a list of texts to a 2-D float array (one row per text). The
same-model pairing only compares the rows it gets, so any embedding (a sentence encoder, say)
can be registered in :data:`EMBEDDERS` under a name and chosen by that name. Pure NumPy.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

Embedder = Callable[[Sequence[str]], np.ndarray]

_WORD = re.compile(r"\w+")


def tfidf_embed(texts: Sequence[str]) -> np.ndarray:
    """L2-normalised TF-IDF rows of ``texts`` over their own vocabulary (smoothed IDF).

    Terms are lowercase runs of letters and digits; the IDF is ``ln((1 + n) / (1 + df)) + 1``,
    so a term found in every text still counts a little. An empty text is a zero row.
    """
    vocabulary: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    counts: list[int] = []
    for row, text in enumerate(texts):
        for term, count in Counter(_WORD.findall(text.lower())).items():
            rows.append(row)
            cols.append(vocabulary.setdefault(term, len(vocabulary)))
            counts.append(count)
    matrix = np.zeros((len(texts), max(len(vocabulary), 1)), dtype=float)
    matrix[rows, cols] = counts
    n = len(texts)
    df = np.count_nonzero(matrix, axis=0)
    matrix *= np.log((1 + n) / (1 + df)) + 1.0
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


EMBEDDERS: dict[str, Embedder] = {"tfidf": tfidf_embed}


def embedder_get(name: str) -> Embedder:
    """The embedder registered as ``name``; raises ValueError naming the known ones."""
    try:
        return EMBEDDERS[name]
    except KeyError:
        known = ", ".join(sorted(EMBEDDERS))
        raise ValueError(f"unknown embedding {name!r}; choose from {known}") from None


def cosine_distances(vectors: np.ndarray) -> np.ndarray:
    """The matrix of ``1 - cos(u, v)`` between the rows; a zero row is at distance 1 from all."""
    v = np.asarray(vectors, dtype=float)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    unit = np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)
    distances = 1.0 - unit @ unit.T
    np.fill_diagonal(distances, 0.0)
    return np.clip(distances, 0.0, 2.0)


def farthest_pair(vectors: np.ndarray) -> tuple[int, int, float]:
    """``(i, j, distance)`` with ``i < j``: the two rows furthest apart by cosine distance.

    Ties go to the first pair in row order (``(0, 1)`` before ``(0, 2)`` before ``(1, 2)``), so the
    choice never depends on anything but the vectors.
    """
    n = len(vectors)
    if n < 2:
        raise ValueError("at least two vectors are needed to form a pair")
    distances = cosine_distances(vectors)
    rows, cols = np.triu_indices(n, k=1)
    values = distances[rows, cols]
    best = int(np.argmax(values))  # the first maximum in row-major order
    return int(rows[best]), int(cols[best]), float(values[best])
