"""The cluster bootstrap's resampling, in pure NumPy (no Django).

A replicate draws ``n`` clusters (samples, prompts) with replacement from ``n``; what the
statistics need is how often each cluster was drawn. The draws of one call come from one
``rng.integers(0, n, size=(replicates, n))``, so callers that draw one replicate per call and
callers that draw blocks keep the random streams they have always used for a given seed.
"""

from __future__ import annotations

import numpy as np

# Above this many clusters each replicate is counted on its own: its counts stay in the cache.
_ROW_BY_ROW = 2048


def resample_counts(rng: np.random.Generator, n_clusters: int, n_replicates: int) -> np.ndarray:
    """How often each cluster is drawn in each replicate (int array, replicates x clusters)."""
    draws = rng.integers(0, n_clusters, size=(n_replicates, n_clusters))
    if n_clusters > _ROW_BY_ROW:
        counts = np.empty((n_replicates, n_clusters), np.int64)
        for row, drawn in zip(counts, draws, strict=True):
            row[:] = np.bincount(drawn, minlength=n_clusters)
        return counts
    draws += (np.arange(n_replicates) * n_clusters)[:, None]
    counts = np.bincount(draws.ravel(), minlength=n_replicates * n_clusters)
    return counts.reshape(n_replicates, n_clusters)
