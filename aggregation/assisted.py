"""Judge-assisted routing and early stopping, replayed on fully annotated items (pure NumPy).

No Django. An *item* is one (sample, criterion); ``votes`` holds its k formal votes in the order
they were cast (codes ``A``/``B``/``TIE`` below). The labels come from
:func:`aggregation.rules.classify` (the protocol rule's one home) and the early-stopping rule from
:func:`aggregation.rules.can_still_be_kept`; the panel's verdict from :func:`panel_verdict`
(the rule the panel job stores as ``PanelLabel``).

Policies (:data:`POLICIES`), applied to the items outside the audit share (audit items always
get all k votes):

- ``full``: every item gets k votes.
- ``early_stopping``: after each vote, an item whose votes can no longer make a kept label is
  asked no more (its label is dropped either way, so no label changes).
- ``routing``: a routable item (the panel unanimous and position-consistent) asks 1 human, the
  verifier, taken to be the item's first vote; when the verifier names the panel's side the
  label is kept on that side ("panel + human"), else the item gets the full protocol and its
  label is the protocol's ("panel overruled", the verifier's vote counting as the first of k).
- ``both``: routing, and early stopping on every item that gets the protocol (overruled ones
  included).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from annotation.audit import audit_mask

from .bootstrap import resample_counts
from .rules import PREF_A, PREF_B, PREF_NONE, can_still_be_kept, classify

#: Vote codes (an item's votes in time order).
A, B, TIE = 0, 1, 2
#: A judge's answer in one order, in the row's own A/B terms; NO_ANSWER: failed or unparsed.
NO_ANSWER = -1

#: Provenance codes; the strings equal aggregation.models.Provenance's values.
HUMAN, EARLY_STOPPED, PANEL_HUMAN, PANEL_OVERRULED = range(4)
PROVENANCES = ("human", "early_stopped", "panel_human", "panel_overruled")

FULL, EARLY_STOPPING, ROUTING, BOTH = "full", "early_stopping", "routing", "both"
POLICIES = (FULL, EARLY_STOPPING, ROUTING, BOTH)


# --- The panel ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PanelVerdict:
    """The panel's verdict per item: side (PREF_* codes), unanimous, consistent, routable."""

    choice: np.ndarray
    unanimous: np.ndarray
    consistent: np.ndarray
    routable: np.ndarray


def panel_verdict(answers: np.ndarray) -> PanelVerdict:
    """The panel's verdict from ``answers`` (items x judges x 2 orders: ab, ba; codes A, B or
    NO_ANSWER, in the row's own terms).

    ``consistent``: every judge gave the same answer in both orders; ``unanimous``: in each
    order every judge gave the same answer; a missing answer makes both false. ``routable``:
    both, so every judge named one side in both orders, and ``choice`` is that side (PREF_NONE
    otherwise).
    """
    x = np.asarray(answers, dtype=np.int64)
    if x.ndim != 3 or x.shape[2] != 2 or x.shape[1] < 1:
        raise ValueError("answers must be items x judges x 2 orders, with at least one judge")
    answered = (x == A) | (x == B)
    all_answered = answered.all(axis=(1, 2))
    consistent = all_answered & (x[:, :, 0] == x[:, :, 1]).all(axis=1)
    unanimous = all_answered & (x == x[:, :1, :]).all(axis=(1, 2))
    routable = consistent & unanimous
    side = np.where(x[:, 0, 0] == A, PREF_A, PREF_B)
    choice = np.where(routable, side, PREF_NONE).astype(np.int8)
    return PanelVerdict(
        choice=choice, unanimous=unanimous, consistent=consistent, routable=routable
    )


# --- Replaying the votes ------------------------------------------------------------------------


def _counts(votes: np.ndarray, upto: int | None = None) -> tuple[np.ndarray, ...]:
    v = votes if upto is None else votes[:, :upto]
    return (v == A).sum(axis=1), (v == B).sum(axis=1), (v == TIE).sum(axis=1)


def _check_votes(votes: np.ndarray, k: int) -> np.ndarray:
    v = np.asarray(votes, dtype=np.int8)
    if v.ndim != 2 or v.shape[1] != k:
        raise ValueError(f"votes must be items x k (k = {k}), got shape {v.shape}")
    if v.size and (v.min() < A or v.max() > TIE):
        raise ValueError("votes are coded 0 (A), 1 (B) or 2 (tie)")
    return v


def full_labels(votes: np.ndarray, k: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Each item's outcome and preference codes under the full protocol (all k votes)."""
    v = _check_votes(votes, k)
    return classify(*_counts(v), k=k)


def votes_until_stop(votes: np.ndarray, k: int = 3) -> np.ndarray:
    """How many of each item's k votes early stopping asks for (k when it never stops)."""
    v = _check_votes(votes, k)
    asked = np.full(len(v), k, dtype=np.int64)
    open_ = np.ones(len(v), dtype=bool)
    for m in range(1, k):
        stop = open_ & ~can_still_be_kept(*_counts(v, m), k)
        asked[stop] = m
        open_ &= ~stop
    return asked


@dataclass(frozen=True)
class Routed:
    """Per item: the preference kept (PREF_NONE: dropped), human votes asked, provenance."""

    preference: np.ndarray
    votes: np.ndarray
    provenance: np.ndarray

    @property
    def kept(self) -> np.ndarray:
        return self.preference != PREF_NONE


def replay(
    votes: np.ndarray,
    *,
    policy: str,
    audit: np.ndarray,
    panel_choice: np.ndarray | None = None,
    routable: np.ndarray | None = None,
    k: int = 3,
) -> Routed:
    """The labels and the human votes of every item under ``policy`` (see the module text)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; one of {', '.join(POLICIES)}")
    v = _check_votes(votes, k)
    n = len(v)
    audit = np.asarray(audit, dtype=bool)
    _, preference = full_labels(v, k)
    preference = preference.copy()
    asked = np.full(n, k, dtype=np.int64)
    provenance = np.full(n, HUMAN, dtype=np.int8)
    stopping = policy in (EARLY_STOPPING, BOTH)
    routing = policy in (ROUTING, BOTH)
    if routing:
        if panel_choice is None or routable is None:
            raise ValueError("routing needs the panel's choice and routable per item")
        panel_choice = np.asarray(panel_choice, dtype=np.int8)
        route = np.asarray(routable, dtype=bool) & ~audit
        verifier = np.where(v[:, 0] == A, PREF_A, np.where(v[:, 0] == B, PREF_B, PREF_NONE))
        agreed = route & (verifier == panel_choice)
        overruled = route & ~agreed
        preference[agreed] = panel_choice[agreed]
        asked[agreed] = 1
        provenance[agreed] = PANEL_HUMAN
        provenance[overruled] = PANEL_OVERRULED
        protocol = ~agreed
    else:
        protocol = np.ones(n, dtype=bool)
    if stopping:
        until = votes_until_stop(v, k)
        stopped = protocol & ~audit & (until < k)
        asked[stopped] = until[stopped]
        provenance[stopped & (provenance == HUMAN)] = EARLY_STOPPED
    return Routed(preference=preference, votes=asked, provenance=provenance)


@dataclass(frozen=True)
class PolicyFigures:
    """What a policy costs and keeps, against the full protocol (and the truth when known)."""

    policy: str
    items: int
    human_votes: int
    kept: int
    votes_per_kept: float | None
    expert_minutes: float
    agree_full: float | None  # share of kept labels equal to a kept full-protocol label
    agree_full_both_kept: float | None  # same, among labels the full protocol keeps too
    agree_truth: float | None
    provenance: dict[str, int] = field(default_factory=dict)


def _share(part: np.ndarray, mask: np.ndarray) -> float | None:
    total = int(mask.sum())
    return float((part & mask).sum()) / total if total else None


def policy_figures(
    votes: np.ndarray,
    *,
    policy: str,
    audit: np.ndarray,
    seconds_per_vote: float,
    panel_choice: np.ndarray | None = None,
    routable: np.ndarray | None = None,
    truth: np.ndarray | None = None,
    k: int = 3,
) -> PolicyFigures:
    """Replay ``policy`` and measure it (``seconds_per_vote``: the median time of one vote)."""
    routed = replay(
        votes, policy=policy, audit=audit, panel_choice=panel_choice, routable=routable, k=k
    )
    _, full = full_labels(votes, k)
    kept = routed.kept
    same = routed.preference == full
    votes_total = int(routed.votes.sum())
    n_kept = int(kept.sum())
    return PolicyFigures(
        policy=policy,
        items=len(kept),
        human_votes=votes_total,
        kept=n_kept,
        votes_per_kept=votes_total / n_kept if n_kept else None,
        expert_minutes=votes_total * seconds_per_vote / 60.0,
        agree_full=_share(same, kept),
        agree_full_both_kept=_share(same, kept & (full != PREF_NONE)),
        agree_truth=None if truth is None else _share(routed.preference == truth, kept),
        provenance={
            name: int((routed.provenance == code).sum()) for code, name in enumerate(PROVENANCES)
        },
    )


def item_audit(
    seed: int, external_ids: Sequence[str], share: float, sample_index: np.ndarray
) -> np.ndarray:
    """Per item: is its sample in the audit share (annotation/audit.py's draw)?"""
    return audit_mask(seed, external_ids, share)[np.asarray(sample_index)]


# --- On the audit share: the panel against the humans -------------------------------------------


@dataclass(frozen=True)
class AuditCounterfactual:
    """Routing applied to the audit share's items after the fact."""

    items: int  # audit items with all k votes
    routable: int
    verifier_agreed: int  # routable items whose first vote names the panel's side
    differ: int  # kept labels that would differ from the full-protocol labels
    differ_dropped: int  # of which the full protocol drops the item
    differ_side: int  # of which the full protocol keeps the other side


def audit_counterfactual(
    votes: np.ndarray, panel_choice: np.ndarray, routable: np.ndarray, k: int = 3
) -> AuditCounterfactual:
    """For audit items (all given with k votes in time order): the first vote as the verifier,
    the panel's side kept when it agrees, the full label otherwise; count the labels that differ."""
    v = _check_votes(votes, k)
    none = np.zeros(len(v), dtype=bool)
    routed = replay(
        v, policy=ROUTING, audit=none, panel_choice=panel_choice, routable=routable, k=k
    )
    _, full = full_labels(v, k)
    differ = routed.preference != full
    return AuditCounterfactual(
        items=len(v),
        routable=int(np.asarray(routable, dtype=bool).sum()),
        verifier_agreed=int((routed.provenance == PANEL_HUMAN).sum()),
        differ=int(differ.sum()),
        differ_dropped=int((differ & (full == PREF_NONE)).sum()),
        differ_side=int((differ & (full != PREF_NONE)).sum()),
    )


@dataclass(frozen=True)
class PanelAgreement:
    """Per criterion: the panel's agreement with the kept human labels, with bootstrap CIs."""

    labels: np.ndarray  # kept human labels on the audit share
    covered: np.ndarray  # of which the panel was routable (named a side)
    agreed: np.ndarray  # of which the panel's side is the humans'
    agreement: np.ndarray  # agreed / covered (NaN without any)
    low: np.ndarray
    high: np.ndarray
    coverage: np.ndarray  # covered / labels


def panel_agreement(
    sample_index: np.ndarray,
    criterion_index: np.ndarray,
    human: np.ndarray,
    panel_choice: np.ndarray,
    *,
    n_samples: int,
    n_criteria: int,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> PanelAgreement:
    """Agreement of the panel's side with the kept human preference (PREF_* codes) per
    criterion, with percentile CIs from the sample-cluster bootstrap (aggregation/bootstrap.py)."""
    s = np.asarray(sample_index, dtype=np.int64)
    c = np.asarray(criterion_index, dtype=np.int64)
    human = np.asarray(human)
    panel = np.asarray(panel_choice)
    kept = np.isin(human, (PREF_A, PREF_B))
    covered = kept & (panel != PREF_NONE)
    agreed = covered & (panel == human)
    cells = n_samples * n_criteria
    flat = s * n_criteria + c
    per_cov = np.bincount(flat[covered], minlength=cells).reshape(n_samples, n_criteria)
    per_agr = np.bincount(flat[agreed], minlength=cells).reshape(n_samples, n_criteria)
    n_cov = per_cov.sum(axis=0)
    n_agr = per_agr.sum(axis=0)
    n_lab = np.bincount(c[kept], minlength=n_criteria)
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.where(n_cov > 0, n_agr / np.maximum(n_cov, 1), np.nan)
        coverage = np.where(n_lab > 0, n_cov / np.maximum(n_lab, 1), np.nan)
    low = np.full(n_criteria, np.nan)
    high = np.full(n_criteria, np.nan)
    if n_samples and n_boot and n_cov.any():
        weights = resample_counts(np.random.default_rng(seed), n_samples, n_boot).astype(np.float64)
        cov_b = weights @ per_cov
        agr_b = weights @ per_agr
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = np.where(cov_b > 0, agr_b / np.where(cov_b > 0, cov_b, 1), np.nan)
        tail = (1 - level) / 2 * 100
        has = n_cov > 0
        low[has] = np.nanpercentile(reps[:, has], tail, axis=0)
        high[has] = np.nanpercentile(reps[:, has], 100 - tail, axis=0)
    return PanelAgreement(
        labels=n_lab,
        covered=n_cov,
        agreed=n_agr,
        agreement=agreement,
        low=low,
        high=high,
        coverage=coverage,
    )


# --- A synthetic project ------------------------------------------------------------------------


def simulated_panel(
    truth: np.ndarray,
    *,
    judges: int,
    judge_accuracy: float,
    position_bias: float,
    rng: np.random.Generator,
    accuracy_drop: np.ndarray | float = 0.0,
) -> PanelVerdict:
    """A simulated panel's verdict on items whose true side is ``truth`` (PREF_A / PREF_B).

    Each judge, per item, is position-biased with probability ``position_bias`` (it names the
    first-shown response in both orders, so it is inconsistent), else names the true side with
    probability ``judge_accuracy - accuracy_drop`` in both orders.
    """
    n = len(truth)
    true_code = np.where(np.asarray(truth) == PREF_A, A, B)[:, None]
    j_acc = judge_accuracy - np.broadcast_to(np.asarray(accuracy_drop, dtype=float), (n,))[:, None]
    biased = rng.random((n, judges)) < position_bias
    side = np.where(rng.random((n, judges)) < j_acc, true_code, 1 - true_code)
    answers = np.empty((n, judges, 2), dtype=np.int64)
    answers[:, :, 0] = np.where(biased, A, side)  # ab: Response 1 is A
    answers[:, :, 1] = np.where(biased, B, side)  # ba: Response 1 is B
    return panel_verdict(answers)


@dataclass(frozen=True)
class Synthetic:
    """A simulated fully annotated project with a simulated panel."""

    votes: np.ndarray  # items x k, in time order
    sample_index: np.ndarray
    external_ids: list[str]
    truth: np.ndarray  # PREF_A / PREF_B
    panel: PanelVerdict
    seconds: np.ndarray  # items x k: seconds per vote


def synthetic_project(
    *,
    n_samples: int = 5000,
    n_criteria: int = 5,
    annotator_accuracy: Sequence[float] = (0.92, 0.9, 0.9, 0.88, 0.87, 0.86, 0.85, 0.84, 0.82),
    tie_rate: float = 0.05,
    hard_share: float = 0.2,
    hard_accuracy_drop: float = 0.25,
    judges: int = 2,
    judge_accuracy: float = 0.9,
    position_bias: float = 0.1,
    k: int = 3,
    seed: int = 0,
) -> Synthetic:
    """Simulate votes and a panel.

    Each item has a true side (A or B, even odds) and is *hard* with probability ``hard_share``
    (every annotator's accuracy lower by ``hard_accuracy_drop`` there, judges' too). Each sample
    draws k distinct annotators; a vote is a tie with probability ``tie_rate``, else the true
    side with the annotator's accuracy. The panel is :func:`simulated_panel`.
    """
    rng = np.random.default_rng(seed)
    acc = np.asarray(annotator_accuracy, dtype=np.float64)
    if len(acc) < k:
        raise ValueError(f"need at least k = {k} annotators")
    n = n_samples * n_criteria
    sample_index = np.repeat(np.arange(n_samples), n_criteria)
    truth = np.where(rng.random(n) < 0.5, PREF_A, PREF_B).astype(np.int8)
    hard = rng.random(n) < hard_share
    raters = np.argsort(rng.random((n_samples, len(acc))), axis=1)[:, :k]
    p = acc[raters][sample_index] - np.where(hard, hard_accuracy_drop, 0.0)[:, None]
    u = rng.random((n, k))
    tie = u < tie_rate
    right = rng.random((n, k)) < p
    true_code = np.where(truth == PREF_A, A, B)[:, None]
    votes = np.where(tie, TIE, np.where(right, true_code, 1 - true_code)).astype(np.int8)
    panel = simulated_panel(
        truth,
        judges=judges,
        judge_accuracy=judge_accuracy,
        position_bias=position_bias,
        rng=rng,
        accuracy_drop=np.where(hard, hard_accuracy_drop, 0.0),
    )
    seconds = rng.lognormal(mean=np.log(45.0), sigma=0.5, size=(n, k))
    return Synthetic(
        votes=votes,
        sample_index=sample_index,
        external_ids=[f"s{i:06d}" for i in range(n_samples)],
        truth=truth,
        panel=panel,
        seconds=seconds,
    )
