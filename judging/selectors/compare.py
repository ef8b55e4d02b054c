"""Reads behind the judge comparison: each judge's verdict per row, and the two side by side."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from django.core.cache import cache

from aggregation.models import DatasetRow, DatasetVersion

from ..compare import CriterionComparison, compare, split_verdicts, total
from ..datasets import rows_from_version
from ..metrics import INVALID, MISSING, ScoreInput, criteria_in_order, decode_predictions
from ..metrics import encode_predictions as encode
from ..models import JudgeRun, Prediction, Scorecard
from ..paired import (
    HEADLINE_KEYS,
    N_BOOT,
    NOT_DISTINGUISHABLE,
    PairedComparison,
    p_text,
    paired_compare,
)


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
    paired: PairedComparison | None = None


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
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> Comparison | None:
    """The two judges' combined verdicts on ``split``; None when either has no run there.

    ``criterion`` limits the differing rows (not the per-criterion table) to one criterion.
    ``paired`` holds the paired tests (:mod:`judging.paired`) of the two judges.
    """
    rows = rows_from_version(version)
    mask = rows.split == split
    a, b = (_verdicts(version, j, rows, mask) for j in (judge_a, judge_b))
    if a is None or b is None or not mask.any():
        return None
    paired = paired_compare(rows, a, b, split=split, n_boot=n_boot, seed=seed)
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
    return Comparison(judge_a, judge_b, split, per, total(per), differing, paired)


def judge_verdicts(
    *, version: DatasetVersion, judges: list[str], rows: ScoreInput, mask: np.ndarray
) -> dict[str, np.ndarray]:
    """Each judge's combined verdicts on all rows (judges without a run on ``mask`` left out).

    Two queries whatever the number of judges: their runs, then every prediction of those runs.
    """
    runs = list(
        JudgeRun.objects.filter(version=version, judge__in=judges).order_by("judge", "run_index")
    )
    index = rows.index()
    codes = {run.id: np.full(len(rows), MISSING, dtype=np.int8) for run in runs}
    found = list(
        Prediction.objects.filter(run__in=runs).values_list("run_id", "question_id", "prediction")
    )
    if found:
        run_ids, qids, labels = zip(*found, strict=True)
        at = np.array([index.get(q, -1) for q in qids], dtype=np.int64)
        # A stored "invalid" (or anything but model_a/model_b) stays invalid, never missing.
        labelled = np.maximum(encode(np.array(labels, dtype=str)), INVALID)
        run_of = np.array(run_ids)
        for run_id, run_codes_ in codes.items():
            take = (run_of == run_id) & (at >= 0)
            run_codes_[at[take]] = labelled[take]
    out = {}
    for judge in judges:
        verdicts = split_verdicts([codes[r.id] for r in runs if r.judge == judge], mask)
        if verdicts is not None:
            out[judge] = verdicts
    return out


def judge_scored(*, version: DatasetVersion, split: str, judge: str) -> bool:
    """Whether ``judge`` has a scorecard on ``split`` of the version."""
    return Scorecard.objects.filter(version=version, split=split, judge=judge).exists()


def judges_paired(
    *,
    version: DatasetVersion,
    split: str,
    judge_a: str,
    judge_b: str,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> PairedComparison | None:
    """The paired tests of judge A against judge B on ``split``; None when either has no run."""
    rows = rows_from_version(version)
    mask = rows.split == split
    if not mask.any():
        return None
    verdicts = judge_verdicts(version=version, judges=[judge_a, judge_b], rows=rows, mask=mask)
    if judge_a not in verdicts or judge_b not in verdicts:
        return None
    return paired_compare(
        rows, verdicts[judge_a], verdicts[judge_b], split=split, n_boot=n_boot, seed=seed
    )


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


@dataclass(frozen=True)
class Distinction:
    """Whether a judge is distinguishable from the judge ranked just above it on one figure."""

    above: str  # the judge ranked just above
    figure: str  # the sort column's figure: a headline key or a criterion key
    significant: bool
    p_holm: float | None
    diff: float | None  # above minus this judge, points

    @property
    def p_text(self) -> str:
        return p_text(self.p_holm)

    @property
    def text(self) -> str:
        if self.significant:
            return f"distinguishable from {self.above}"
        return f"{NOT_DISTINGUISHABLE} from {self.above}"


def sort_figure(sort_key: str) -> str | None:
    """The paired figure behind a leaderboard sort key (None: judge, runs, date)."""
    if sort_key in HEADLINE_KEYS:
        return sort_key
    return sort_key[2:] if sort_key.startswith("c:") else None


def _pair_key(version: DatasetVersion, split: str, above: Scorecard, below: Scorecard) -> str:
    names = f"{above.judge}\0{below.judge}\0{above.created_at.isoformat()}\0"
    names += f"{below.created_at.isoformat()}\0{N_BOOT}"
    digest = hashlib.sha256(names.encode()).hexdigest()[:32]
    return f"paired1:v{version.pk}:{split}:{digest}"


def board_distinctions(
    *, version: DatasetVersion, split: str, sort_key: str, ranked: list[Scorecard]
) -> dict[str, Distinction]:
    """For each judge but the first, its paired test against the judge ranked just above.

    ``ranked`` are the split's scorecards in the board's order. Each pair's comparison is cached
    under the two scorecards' timestamps (a rescored judge gets new ones); what is missing is
    computed in one pass: the version's rows, then both queries of :func:`judge_verdicts`.
    """
    figure = sort_figure(sort_key)
    if figure is None or len(ranked) < 2:
        return {}
    pairs = list(pairwise(ranked))
    keys = [_pair_key(version, split, above, below) for above, below in pairs]
    found = cache.get_many(keys)
    missing = [(pair, key) for pair, key in zip(pairs, keys, strict=True) if key not in found]
    if missing:
        rows = rows_from_version(version)
        mask = rows.split == split
        judges = sorted({card.judge for pair, _ in missing for card in pair})
        verdicts = judge_verdicts(version=version, judges=judges, rows=rows, mask=mask)
        fresh = {}
        for (above, below), key in missing:
            if above.judge in verdicts and below.judge in verdicts:
                fresh[key] = paired_compare(
                    rows, verdicts[above.judge], verdicts[below.judge], split=split
                )
        cache.set_many(fresh, timeout=None)
        found.update(fresh)
    out = {}
    for (above, below), key in zip(pairs, keys, strict=True):
        fig = found[key].figure(figure) if key in found else None
        if fig is not None and fig.p_holm is not None:
            out[below.judge] = Distinction(
                above.judge, figure, fig.significant, fig.p_holm, fig.diff
            )
    return out
