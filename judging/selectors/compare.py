"""Reads behind the judge comparison: each judge's verdict per row, and the two side by side."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aggregation.models import DatasetRow, DatasetVersion

from ..compare import CriterionComparison, compare, split_verdicts, total
from ..datasets import rows_from_version
from ..metrics import INVALID, MISSING, ScoreInput, criteria_in_order, decode_predictions
from ..metrics import encode_predictions as encode
from ..models import JudgeRun, Prediction


def run_codes(runs: list[JudgeRun], rows: ScoreInput) -> list[np.ndarray]:
    """Each run's stored predictions as metric codes aligned to the rows (missing where none)."""
    order = np.argsort(rows.question_id, kind="stable")
    sorted_qids = rows.question_id[order]
    out = []
    for run in runs:
        codes = np.full(len(rows), MISSING, dtype=np.int8)
        pairs = list(Prediction.objects.filter(run=run).values_list("question_id", "prediction"))
        if pairs and len(sorted_qids):
            qids, labels = (np.array(column, dtype=str) for column in zip(*pairs, strict=True))
            at = np.minimum(np.searchsorted(sorted_qids, qids), len(sorted_qids) - 1)
            known = sorted_qids[at] == qids
            # A stored "invalid" (or anything but model_a/model_b) stays invalid, never missing.
            codes[order[at[known]]] = np.maximum(encode(labels[known]), INVALID)
        out.append(codes)
    return out


@dataclass(frozen=True)
class DifferingRow:
    """A row where the two judges' verdicts differ."""

    question_id: str
    prompt_id: str
    criterion: str
    human: str  # model_a / model_b
    a: str | None  # model_a / model_b / invalid / None (missing)
    b: str | None
    question: str = ""


@dataclass
class Comparison:
    """Two judges on one split: per criterion, the total, and every row where they differ."""

    judge_a: str
    judge_b: str
    split: str
    criteria: list[CriterionComparison]
    total: CriterionComparison
    differing: list[DifferingRow]


def _verdicts(version: DatasetVersion, judge: str, rows: ScoreInput, mask: np.ndarray):
    runs = list(JudgeRun.objects.filter(version=version, judge=judge).order_by("run_index"))
    return split_verdicts(run_codes(runs, rows), mask)


def judges_compare(
    *,
    version: DatasetVersion,
    split: str,
    judge_a: str,
    judge_b: str,
    criterion: str | None = None,
) -> Comparison | None:
    """The two judges' combined verdicts on ``split``; None when either has no run there.

    ``criterion`` limits the differing rows (not the per-criterion table) to one criterion.
    """
    rows = rows_from_version(version)
    mask = rows.split == split
    a, b = (_verdicts(version, j, rows, mask) for j in (judge_a, judge_b))
    if a is None or b is None or not mask.any():
        return None
    sub = rows.take(mask)
    a, b = a[mask], b[mask]
    human = encode(sub.preference)
    order = criteria_in_order(split, np.unique(sub.criterion).tolist())
    per, differ = compare(criterion=sub.criterion, human=human, a=a, b=b, order=order)
    if criterion:
        differ = differ & (sub.criterion == criterion)
    positions = np.flatnonzero(differ)
    # The version's row order, grouped by criterion in the table's order.
    rank = {key: i for i, key in enumerate(order)}
    positions = sorted(positions.tolist(), key=lambda i: (rank[sub.criterion[i]], i))
    la, lb = decode_predictions(a), decode_predictions(b)
    differing = [
        DifferingRow(
            question_id=str(sub.question_id[i]),
            prompt_id=str(sub.prompt_id[i]),
            criterion=str(sub.criterion[i]),
            human=str(sub.preference[i]),
            a=la[i],
            b=lb[i],
        )
        for i in positions
    ]
    return Comparison(judge_a, judge_b, split, per, total(per), differing)


def rows_with_questions(*, version: DatasetVersion, rows: list[DifferingRow]) -> list[DifferingRow]:
    """The given rows with their question text (one query, for a page of rows)."""
    # The row JSON is stored whole (text): read it and take the question.
    texts = {
        qid: data.get("question")
        for qid, data in DatasetRow.objects.filter(
            version=version, question_id__in=[r.question_id for r in rows]
        ).values_list("question_id", "data")
    }
    return [
        DifferingRow(**{**r.__dict__, "question": str(texts.get(r.question_id) or "")})
        for r in rows
    ]
