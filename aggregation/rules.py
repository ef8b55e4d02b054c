"""The aggregation rule of protocol section 5: the votes of one (sample, criterion) -> a label.

Pure Python/NumPy, no Django. For k = 3 votes (the protocol):

=======================  ==========================
votes                    result
=======================  ==========================
A A A  /  B B B          kept, unanimous
A A tie  /  B B tie      kept, majority + tie
A and B both present     dropped: A/B split
two or more ties         dropped: too many ties
fewer than 3 votes       dropped: missing votes
=======================  ==========================

Generalisation to any k (``annotators_per_sample``): a (sample, criterion) needs at least k votes
(all votes count when there are more); it is dropped as a split when both A and B were chosen;
otherwise, with no tie it is kept unanimous, and with ties it is kept "majority + tie" when the
single side named holds a strict majority of the votes (more than half), else it is dropped for
too many ties. For k = 3 this is exactly the table above (2 of 3 is a majority, 1 of 3 is not).
Reasons are checked in the order missing, split, ties, so "A, B" with k = 3 is "missing".

A sample stays in the dataset when at least one of its criteria is kept.

Early stopping and judge-assisted routing (:func:`classify_assisted`): an item whose votes can
no longer be kept (:func:`can_still_be_kept`, shared with the work queue) is not asked its
remaining votes; with fewer than k votes it is then dropped as a split (A and B both present) or
for too many ties, never "missing". Whether it is kept and its preference equal the full
protocol's by construction (for k = 3 the outcome too; for k >= 5 an item stopped on ties could
have become a split had the remaining votes come: both are dropped). A routed item (a routable
panel label, outside the audit share) whose human votes, fewer than k, all equal the panel's
choice is kept unanimous with the panel's side ("panel + human"); once a human vote differs
("panel overruled") it is labelled by the rule above on its human votes. Every label records
its provenance (``PROVENANCES``, equal to aggregation.models.Provenance's values).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

# The stop rule lives with the queue (a lower layer) and is re-exported here beside classify().
from annotation.routing import (
    PANEL_A,
    PANEL_B,  # noqa: F401  (re-exported: rules.PANEL_B)
    PANEL_NONE,
    can_still_be_kept,
    panel_verified,
)
from core.text import plural_form

# Codes of the vectorised functions; the strings equal aggregation.models.Outcome's values.
KEPT_UNANIMOUS, KEPT_MAJORITY_TIE, DROPPED_SPLIT, DROPPED_TIES, DROPPED_MISSING = range(5)
OUTCOMES = (
    "kept_unanimous",
    "kept_majority_tie",
    "dropped_split",
    "dropped_ties",
    "dropped_missing",
)
KEPT = (KEPT_UNANIMOUS, KEPT_MAJORITY_TIE)

# Preference codes: the kept side, or none for a dropped label.
PREF_NONE, PREF_A, PREF_B = -1, 0, 1
PREFERENCES = {PREF_NONE: "", PREF_A: "A", PREF_B: "B"}

CHOICE_A, CHOICE_B, CHOICE_TIE = "A", "B", "tie"

# Provenance codes; the strings equal aggregation.models.Provenance's values.
PROV_HUMAN, PROV_EARLY_STOPPED, PROV_PANEL_HUMAN, PROV_PANEL_OVERRULED = range(4)
PROVENANCES = ("human", "early_stopped", "panel_human", "panel_overruled")


def classify(
    votes_a: np.ndarray,
    votes_b: np.ndarray,
    votes_tie: np.ndarray,
    *,
    k: int = 3,
    early_stop: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Outcome and preference codes for arrays of vote counts (one entry per item).

    ``early_stop`` (per item, optional): early stopping applies, so an item with fewer than k
    votes that can no longer be kept gets its final dropped outcome (split or ties), not
    "missing".
    """
    if k < 1:
        raise ValueError("k (annotators per sample) must be at least 1")
    a = np.asarray(votes_a, dtype=np.int64)
    b = np.asarray(votes_b, dtype=np.int64)
    t = np.asarray(votes_tie, dtype=np.int64)
    n = a + b + t
    side = np.maximum(a, b)
    outcome = np.select(
        [n < k, (a > 0) & (b > 0), t == 0, 2 * side > n],
        [DROPPED_MISSING, DROPPED_SPLIT, KEPT_UNANIMOUS, KEPT_MAJORITY_TIE],
        default=DROPPED_TIES,
    ).astype(np.int8)
    if early_stop is not None:
        stopped = np.asarray(early_stop, bool) & (n < k) & ~can_still_be_kept(a, b, t, k)
        final = np.where((a > 0) & (b > 0), DROPPED_SPLIT, DROPPED_TIES).astype(np.int8)
        outcome = np.where(stopped, final, outcome)
    kept = (outcome == KEPT_UNANIMOUS) | (outcome == KEPT_MAJORITY_TIE)
    preference = np.where(kept, np.where(a > 0, PREF_A, PREF_B), PREF_NONE).astype(np.int8)
    return outcome, preference


def classify_assisted(
    votes_a: np.ndarray,
    votes_b: np.ndarray,
    votes_tie: np.ndarray,
    *,
    k: int,
    early_stop: np.ndarray,
    panel: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Outcome, preference and provenance codes under early stopping and routing.

    ``early_stop``: per item, early stopping applies (project setting on, sample not audited);
    ``panel``: per item, the routable panel choice (``PANEL_A`` / ``PANEL_B``) when routing
    applies, else ``PANEL_NONE``. With both off this is :func:`classify` and every provenance is
    human.
    """
    a = np.asarray(votes_a, dtype=np.int64)
    b = np.asarray(votes_b, dtype=np.int64)
    t = np.asarray(votes_tie, dtype=np.int64)
    stop = np.asarray(early_stop, bool)
    p = np.asarray(panel, dtype=np.int64)
    n = a + b + t
    outcome, preference = classify(a, b, t, k=k, early_stop=stop)
    routed = p != PANEL_NONE
    verified = panel_verified(a, b, t, p) & (n < k)
    outcome = np.where(verified, KEPT_UNANIMOUS, outcome).astype(np.int8)
    preference = np.where(verified, np.where(p == PANEL_A, PREF_A, PREF_B), preference).astype(
        np.int8
    )
    overruled = routed & (n >= 1) & ~panel_verified(a, b, t, p)
    stopped = stop & (n < k) & ~can_still_be_kept(a, b, t, k)
    provenance = np.select(
        [verified, overruled, stopped],
        [PROV_PANEL_HUMAN, PROV_PANEL_OVERRULED, PROV_EARLY_STOPPED],
        default=PROV_HUMAN,
    ).astype(np.int8)
    return outcome, preference, provenance


def samples_kept(sample_index: np.ndarray, outcome: np.ndarray, n_samples: int) -> np.ndarray:
    """Per sample (0..n_samples-1): True when at least one of its criteria is kept."""
    kept = np.isin(outcome, KEPT)
    return np.bincount(np.asarray(sample_index)[kept], minlength=n_samples) > 0


@dataclass(frozen=True)
class Result:
    """The aggregated label of one (sample, criterion)."""

    outcome: str
    preference: str  # "A", "B" or "" when dropped
    votes_a: int
    votes_b: int
    votes_tie: int

    @property
    def is_kept(self) -> bool:
        return self.outcome in (OUTCOMES[KEPT_UNANIMOUS], OUTCOMES[KEPT_MAJORITY_TIE])


def aggregate_votes(choices: Iterable[str], *, k: int = 3) -> Result:
    """The label of one (sample, criterion) from its choices ("A", "B", "tie")."""
    choices = list(choices)
    unknown = set(choices) - {CHOICE_A, CHOICE_B, CHOICE_TIE}
    if unknown:
        raise ValueError(
            f"unknown vote {plural_form(len(unknown), 'choice')}: {', '.join(sorted(unknown))}"
        )
    a, b, t = (choices.count(c) for c in (CHOICE_A, CHOICE_B, CHOICE_TIE))
    outcome, preference = classify(np.array([a]), np.array([b]), np.array([t]), k=k)
    return Result(
        outcome=OUTCOMES[int(outcome[0])],
        preference=PREFERENCES[int(preference[0])],
        votes_a=a,
        votes_b=b,
        votes_tie=t,
    )


def sample_is_kept(results: Iterable[Result]) -> bool:
    """A sample stays in the dataset when at least one of its criteria is kept."""
    return any(r.is_kept for r in results)
