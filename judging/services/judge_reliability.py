"""A judge's statistics no leaderboard has: the Alternative Annotator Test and its reliability.

``judge_statistics`` gives two entries of a scorecard's figures (one split)::

    "alt_test": {
        "epsilon": 0.2, "alpha": 0.05, "min_annotators": 3, "min_items": 30,
        "requirements": "at least 3 annotators with at least 30 items each (...)",
        "refused": None,              # or why the version cannot be tested (no votes kept)
        "criteria": ["completeness", "clarity"],   # the paper's order (JSON objects keep none)
        "per_criterion": {
            "completeness": {"winning_rate": 0.67, "passed": True, "annotators": 3,
                             "items": 120, "p_values": [...], "rejected": [...],
                             "advantage_probability": 0.91, "annotators_tested": 3,
                             "annotators_skipped": 0, "items_per_annotator": [...]},
            "clarity": {"refused": "needs votes of at least 3 annotators; 2 voted ...",
                        "annotators": 2, "items": 40},
        },
        "passed": ["completeness"], "failed": [], "refused_criteria": ["clarity"],
    },
    "reliability": {
        "criteria": ["completeness", ...],
        "per_criterion": {
            "completeness": {"position_consistency": 92.5,   # percent, the runner's figure
                             "position_rows": 120,
                             "self_agreement": 0.81,         # Fleiss' κ of the runs
                             "self_agreement_pairwise": 93.3, # percent of agreeing run pairs
                             "self_agreement_items": 120,
                             "self_agreement_reason": None,
                             "runs": 3,
                             "annotator_kappa": 0.64,         # the annotators' Fleiss' κ
                             "annotator_kappa_source": "version"},
        },
    }

The judge's label on a row is the scorecard's: the majority vote of its runs. The annotators' κ
is the one frozen in the version's manifest (the aggregation's figures when it was built), else
the project's current agreement figures (``annotator_kappa_source`` says which).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aggregation.models import AgreementSnapshot, DatasetRow, DatasetVersion

from ..alt_test import (
    DEFAULT_ALPHA,
    DEFAULT_EPSILON,
    MIN_ANNOTATORS,
    MIN_ITEMS,
    REQUIREMENTS,
    alt_test,
)
from ..metrics import (
    MODEL_A,
    MODEL_B,
    TIE_LABEL,
    A,
    B,
    ScoreInput,
    criteria_in_order,
    majority_vote_codes,
)
from ..models import JudgeRun
from ..reliability import self_agreement

#: A vote's choice -> the test's category code.
_VOTE_CODE = {MODEL_A: 0, MODEL_B: 1, TIE_LABEL: 2}
NO_VOTES = (
    "this version was built without the annotators' votes: build a version that keeps the "
    "individual votes to run the test"
)


def judge_statistics(
    *,
    version: DatasetVersion,
    rows: ScoreInput,
    split: str,
    covered: list[tuple[JudgeRun, np.ndarray]],
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
) -> dict[str, Any]:
    """The ``alt_test`` and ``reliability`` figures of a judge's runs on one split."""
    codes = np.stack([code for _, code in covered])
    voted = codes[0] if len(codes) == 1 else majority_vote_codes(codes)
    return {
        "alt_test": alt_test_figures(
            version=version, rows=rows, split=split, judge=voted, epsilon=epsilon, alpha=alpha
        ),
        "reliability": reliability_figures(
            version=version, rows=rows, split=split, runs=[r for r, _ in covered], codes=codes
        ),
    }


def _criteria(rows: ScoreInput, split: str) -> list[str]:
    return criteria_in_order(split, sorted(set(rows.criterion[rows.split == split].tolist())))


def _split_votes(version: DatasetVersion, rows: ScoreInput, split: str) -> dict[int, list]:
    """Each row of the split (by its position in ``rows``) -> its votes (annotator, choice)."""
    positions = np.flatnonzero(rows.split == split)
    where = dict(zip(rows.question_id[positions].tolist(), positions.tolist(), strict=True))
    out: dict[int, list] = {}
    for qid, data in DatasetRow.objects.filter(version=version, split=split).values_list(
        "question_id", "data"
    ):
        if qid in where:
            out[where[qid]] = [
                (v.get("annotator"), v.get("choice")) for v in (data or {}).get("votes") or []
            ]
    return out


def _vote_matrix(votes: dict[int, list], positions: np.ndarray) -> np.ndarray:
    """The annotator x row code matrix of the rows at ``positions`` (-1: no vote)."""
    names = sorted({name for p in positions.tolist() for name, _ in votes.get(p, [])})
    index = {name: i for i, name in enumerate(names)}
    matrix = np.full((len(names), len(positions)), -1, dtype=np.int64)
    for column, p in enumerate(positions.tolist()):
        for name, choice in votes.get(p, []):
            if choice in _VOTE_CODE:
                matrix[index[name], column] = _VOTE_CODE[choice]
    return matrix


def alt_test_figures(
    *,
    version: DatasetVersion,
    rows: ScoreInput,
    split: str,
    judge: np.ndarray,
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
) -> dict[str, Any]:
    """The test per criterion of the split, or the whole version refused without votes."""
    out: dict[str, Any] = {
        "epsilon": epsilon,
        "alpha": alpha,
        "min_annotators": MIN_ANNOTATORS,
        "min_items": MIN_ITEMS,
        "requirements": REQUIREMENTS,
        "refused": None,
        "criteria": [],
        "per_criterion": {},
        "passed": [],
        "failed": [],
        "refused_criteria": [],
    }
    if not version.include_votes:
        return {**out, "refused": NO_VOTES}
    votes = _split_votes(version, rows, split)
    # The judge's label in the test's codes: A 0, B 1, anything else agrees with nobody.
    labels = np.select([judge == A, judge == B], [0, 1], -1)
    out["criteria"] = _criteria(rows, split)
    for criterion in out["criteria"]:
        positions = np.flatnonzero((rows.split == split) & (rows.criterion == criterion))
        out["per_criterion"][criterion] = alt_test(
            _vote_matrix(votes, positions), labels[positions], epsilon=epsilon, alpha=alpha
        )
    per = out["per_criterion"].items()
    out["passed"] = [c for c, v in per if v.get("passed") is True]
    out["failed"] = [c for c, v in per if v.get("passed") is False]
    out["refused_criteria"] = [c for c, v in per if "refused" in v]
    return out


def _position_consistency(runs: list[JudgeRun], split: str) -> dict[str, Any]:
    """The latest runner run's position consistency per criterion (as the runner stored it)."""
    for run in reversed(runs):
        if run.source == JudgeRun.Source.RUNNER and "runner" in run.stats:
            figures = (run.stats["runner"].get(split) or {}).get("position_consistency") or {}
            return figures.get("per_criterion") or {}
    return {}


def _annotator_kappa(version: DatasetVersion, split: str) -> tuple[dict[str, Any], str | None]:
    """The annotators' agreement figures per criterion: the version's, else the project's."""
    frozen = ((version.manifest or {}).get("agreement") or {}).get(split) or {}
    if frozen.get("per_criterion"):
        return frozen["per_criterion"], "version"
    snapshot = AgreementSnapshot.objects.filter(project_id=version.project_id, split=split).first()
    current = (snapshot.figures if snapshot else {}).get("per_criterion") or {}
    return current, ("project" if current else None)


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(float(value), digits)


def reliability_figures(
    *,
    version: DatasetVersion,
    rows: ScoreInput,
    split: str,
    runs: list[JudgeRun],
    codes: np.ndarray,
) -> dict[str, Any]:
    """Per criterion: position consistency, self-agreement across runs, the annotators' κ."""
    positional = _position_consistency(runs, split)
    human, source = _annotator_kappa(version, split)
    per: dict[str, Any] = {}
    criteria = _criteria(rows, split)
    for criterion in criteria:
        mask = (rows.split == split) & (rows.criterion == criterion)
        own = self_agreement(codes[:, mask])
        position = positional.get(criterion) or {}
        kappa = ((human.get(criterion) or {}).get("fleiss") or {}).get("value")
        per[criterion] = {
            "position_consistency": position.get("value"),
            "position_rows": position.get("n"),
            "self_agreement": _rounded(own["value"], 4),
            "self_agreement_pairwise": _rounded(own["pairwise"], 2),
            "self_agreement_items": own["items"],
            "self_agreement_reason": own["undefined_reason"],
            "runs": own["runs"],
            "annotator_kappa": _rounded(kappa, 4),
            "annotator_kappa_source": source if kappa is not None else None,
        }
    return {"criteria": criteria, "per_criterion": per}
