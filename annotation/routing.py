"""What a (sample, criterion) still needs from a new annotator: early stopping and routing.

Pure NumPy, no Django. The queue (``annotation.services.routing``) and the aggregation rule
(``aggregation.rules``, which re-exports :func:`can_still_be_kept` next to ``classify``) share
these functions, so the queue never skips a vote the label could still depend on.

- **Early stopping** (``stop``: the project has it on and the sample is not in the audit share):
  an item whose formal votes can no longer make a kept label under the protocol's rule is not
  asked again. Votes are only ever added, so once an item cannot be kept, no further vote can
  make it kept: its label (dropped, no preference) is the full protocol's by construction.
- **Routing** (``panel``: the panel's routable choice, A or B, when the policy is
  ``panel_verifier`` and the sample is not in the audit share; ``PANEL_NONE`` otherwise): the item
  needs one human vote. When every human vote so far equals the panel's choice it needs no more;
  once a vote differs, the item needs the full ``k`` votes like any other.
"""

from __future__ import annotations

import numpy as np

PANEL_NONE, PANEL_A, PANEL_B = -1, 0, 1


def can_still_be_kept(
    votes_a: np.ndarray, votes_b: np.ndarray, votes_tie: np.ndarray, k: int
) -> np.ndarray:
    """True per item while some choice of the votes still to come (up to k) gives a kept label.

    False when A and B are both present (a split stays a split), or when the ties are so many
    that even every remaining vote on one side gives no strict majority of the final votes.
    With k or more votes it is exactly "kept" under the protocol's rule.
    """
    if k < 1:
        raise ValueError("k (annotators per sample) must be at least 1")
    a = np.asarray(votes_a, dtype=np.int64)
    b = np.asarray(votes_b, dtype=np.int64)
    t = np.asarray(votes_tie, dtype=np.int64)
    n = a + b + t
    remaining = np.maximum(k - n, 0)
    final = np.maximum(n, k)
    best_side = np.maximum(a, b) + remaining
    split = (a > 0) & (b > 0)
    return ~split & ((t == 0) | (2 * best_side > final))


def panel_verified(
    votes_a: np.ndarray, votes_b: np.ndarray, votes_tie: np.ndarray, panel: np.ndarray
) -> np.ndarray:
    """True per routed item whose human votes (at least one) all equal the panel's choice."""
    a = np.asarray(votes_a, dtype=np.int64)
    b = np.asarray(votes_b, dtype=np.int64)
    t = np.asarray(votes_tie, dtype=np.int64)
    p = np.asarray(panel, dtype=np.int64)
    n = a + b + t
    on_panel_side = np.where(p == PANEL_A, a, np.where(p == PANEL_B, b, -1))
    return (p != PANEL_NONE) & (n >= 1) & (on_panel_side == n)


def asks_vote(
    votes_a: np.ndarray,
    votes_b: np.ndarray,
    votes_tie: np.ndarray,
    k: int,
    *,
    stop: np.ndarray,
    panel: np.ndarray,
) -> np.ndarray:
    """True per item while an annotator who has not voted on it is still asked for a vote.

    ``stop``: early stopping applies to the item; ``panel``: the routable panel choice or
    ``PANEL_NONE``. How many annotators in all (k) stays the slots' business: this only says
    when the remaining ones are not asked.
    """
    stopped = np.asarray(stop, dtype=bool) & ~can_still_be_kept(votes_a, votes_b, votes_tie, k)
    return ~stopped & ~panel_verified(votes_a, votes_b, votes_tie, panel)
