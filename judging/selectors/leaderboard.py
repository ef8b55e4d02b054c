"""Reads of the leaderboard and scorecard pages and the scorecard API."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from django.db.models import Count, Max
from django.http import Http404
from django.shortcuts import get_object_or_404

from aggregation.models import DatasetRow, DatasetVersion
from aggregation.selectors.export import versions_ready
from annotation.models import Criterion, Project
from annotation.splits import split_label
from core.permissions import get_project_for_user
from core.text import counted

from ..metrics import SPLIT_ORDER, criteria_in_order
from ..models import JudgeRun, Scorecard
from .compare import Distinction, board_distinctions

HEADLINE = (
    ("pacc", "PAcc", "Pluralistic adherence accuracy: prompts with every criterion right"),
    ("cmr", "CMR", "Conflict matching rate: conflicting pairs with both criteria right"),
    ("tos", "TOS", "Trade-off sensitivity: conflict prompts with opposite valid verdicts"),
    ("avg", "Avg", "Mean of the per-criterion accuracies"),
)
DEFAULT_SORT = "-pacc"


def version_get(*, project: Project, number: int) -> DatasetVersion:
    """The project's ready version by number (404 if missing or not ready)."""
    return get_object_or_404(versions_ready(project=project), number=number)


def version_get_for_user(*, user: Any, slug: str, number: int) -> DatasetVersion:
    """The ready version ``number`` of project ``slug``, if ``user`` may read the project.

    The one lookup of a version from a judging URL (404 / 403 as get_project_for_user says).
    """
    return version_get(project=get_project_for_user(user, slug), number=number)


def version_splits(*, version: DatasetVersion) -> list[str]:
    """The splits the version has rows in, in the protocol's order."""
    present = set(
        DatasetRow.objects.filter(version=version).values_list("split", flat=True).distinct()
    )
    return [s for s in SPLIT_ORDER if s in present] + sorted(present - set(SPLIT_ORDER))


def _short_name(name: str) -> str:
    # Column headers use the first part of a criterion's name, as the paper's tables do.
    return re.split(r"\s+(?:&|/|\(|-)\s*", name, maxsplit=1)[0].strip() or name


@dataclass(frozen=True)
class Column:
    key: str  # sort key: pacc | cmr | tos | avg | c:<criterion key>
    label: str
    title: str
    criterion: str = ""


def criterion_columns(*, version: DatasetVersion, split: str, keys: Iterable[str]) -> list[Column]:
    """One column per criterion key, in the paper's order, named as the project names it."""
    names = dict(
        Criterion.objects.filter(project_id=version.project_id, split=split).values_list(
            "key", "name"
        )
    )
    return [
        Column(
            key=f"c:{key}",
            label=_short_name(names.get(key, key)),
            title=names.get(key, key),
            criterion=key,
        )
        for key in criteria_in_order(split, list(set(keys)))
    ]


def headline_columns() -> list[Column]:
    return [Column(key=k, label=label, title=title) for k, label, title in HEADLINE]


@dataclass(frozen=True)
class Cell:
    value: float | None
    ci: list[float] | None = None
    detail: str = ""  # the counts behind the figure, e.g. "98 / 299 prompts"


class BoardDistinctions:
    """The paired tests of each judge against the one ranked just above, computed on first use.

    Shared by the rows of one board: a page or export that never shows them costs nothing.
    """

    def __init__(self, version: DatasetVersion, split: str, sort_key: str) -> None:
        self.version, self.split, self.sort_key = version, split, sort_key
        self.ranked: list[Scorecard] = []

    @cached_property
    def by_judge(self) -> dict[str, Distinction]:
        return board_distinctions(
            version=self.version, split=self.split, sort_key=self.sort_key, ranked=self.ranked
        )


@dataclass
class LeaderboardRow:
    scorecard: Scorecard
    cells: list[Cell]
    runs: int
    last_run_at: datetime | None
    invalid: int
    board: BoardDistinctions | None = field(default=None, repr=False, compare=False)

    @property
    def judge(self) -> str:
        return self.scorecard.judge

    @property
    def distinction(self) -> Distinction | None:
        """Whether this judge is distinguishable from the one just above (sort column)."""
        return self.board.by_judge.get(self.judge) if self.board is not None else None


def headline_cells(figures: dict[str, Any]) -> list[Cell]:
    """PAcc, CMR, TOS, Avg of a scorecard's figures, with the counts behind each."""
    pacc, cmr, tos, avg = (figures.get(k) or {} for k in ("pacc", "cmr", "tos", "avg"))
    return [
        Cell(
            pacc.get("value"),
            pacc.get("ci"),
            f"{pacc.get('correct_prompts', 0)} / {counted(pacc.get('prompts', 0), 'prompt')}",
        ),
        Cell(
            cmr.get("value"),
            cmr.get("ci"),
            f"{cmr.get('matched_pairs', 0)} / "
            f"{counted(cmr.get('conflict_pairs', 0), 'conflicting pair')}",
        ),
        Cell(
            tos.get("value"),
            tos.get("ci"),
            f"{tos.get('sensitive_prompts', 0)} / "
            f"{counted(tos.get('conflict_prompts', 0), 'conflict prompt')}",
        ),
        Cell(
            avg.get("value"),
            avg.get("ci"),
            f"mean of {counted(avg.get('criteria', 0), 'criterion', 'criteria')}",
        ),
    ]


def criterion_cells(figures: dict[str, Any], columns: list[Column]) -> list[Cell]:
    per = figures.get("per_criterion") or {}
    cells = []
    for column in columns:
        entry = per.get(column.criterion) or {}
        cells.append(
            Cell(
                entry.get("acc"),
                entry.get("ci"),
                f"{entry.get('correct', 0)} / {counted(entry.get('n', 0), 'row')}" if entry else "",
            )
        )
    return cells


def _sort_value(row: LeaderboardRow, key: str, columns: list[Column]) -> Any:
    if key == "judge":
        return row.judge.lower()
    if key == "runs":
        return row.runs
    if key == "date":
        return row.last_run_at.timestamp() if row.last_run_at else None
    if key == "overall":
        return (row.scorecard.figures.get("overall") or {}).get("value")
    for i, column in enumerate(columns):
        if column.key == key:
            return row.cells[i].value
    raise KeyError(key)


SORT_KEYS = {"judge", "runs", "date", "overall"}


def sort_parse(value: str | None, columns: list[Column]) -> tuple[str, bool]:
    """``?sort=`` as (key, descending); ``-pacc`` is PAcc best first. Unknown keys fall back."""
    raw = (value or DEFAULT_SORT).strip()
    descending = raw.startswith("-")
    key = raw.lstrip("-")
    if key not in SORT_KEYS and key not in {c.key for c in columns}:
        return DEFAULT_SORT.lstrip("-"), True
    return key, descending


def leaderboard_rows(
    *, version: DatasetVersion, split: str, sort: str | None = None
) -> tuple[list[LeaderboardRow], list[Column], tuple[str, bool]]:
    """Every judge's scorecard on one split, as table rows sorted by ``sort``.

    Returns (rows, columns, (sort key, descending)). Undefined figures (n/a) sort last in both
    directions; ties keep the judges' alphabetical order.
    """
    cards = list(Scorecard.objects.filter(version=version, split=split).order_by("judge"))
    # Every card of a split scores the same rows, so the criteria come from the cards.
    keys = {k for card in cards for k in (card.figures.get("per_criterion") or {})}
    columns = headline_columns() + criterion_columns(version=version, split=split, keys=keys)
    crit_columns = [c for c in columns if c.criterion]
    runs = {
        r["judge"]: r
        for r in JudgeRun.objects.filter(version=version)
        .values("judge")
        .annotate(n=Count("id"), last=Max("created_at"))
    }
    rows = []
    for card in cards:
        info = runs.get(card.judge, {})
        rows.append(
            LeaderboardRow(
                scorecard=card,
                cells=headline_cells(card.figures) + criterion_cells(card.figures, crit_columns),
                runs=card.runs,
                last_run_at=info.get("last"),
                invalid=int((card.figures.get("counts") or {}).get("invalid", 0))
                + int((card.figures.get("counts") or {}).get("missing", 0)),
            )
        )
    key, descending = sort_parse(sort, columns)
    defined = [r for r in rows if _sort_value(r, key, columns) is not None]
    undefined = [r for r in rows if _sort_value(r, key, columns) is None]
    defined.sort(key=lambda r: _sort_value(r, key, columns), reverse=descending)
    board = BoardDistinctions(version, split, key)
    # Only judges with a defined figure are ranked against each other.
    board.ranked = [r.scorecard for r in defined]
    for row in rows:
        row.board = board
    return defined + undefined, columns, (key, descending)


def scorecard_get(*, version: DatasetVersion, judge: str, split: str) -> Scorecard:
    card = Scorecard.objects.filter(version=version, judge=judge, split=split).first()
    if card is None:
        raise Http404(f"No scorecard for judge {judge!r} on this split.")
    return card


def judge_splits(*, version: DatasetVersion, judge: str) -> list[str]:
    present = set(
        Scorecard.objects.filter(version=version, judge=judge).values_list("split", flat=True)
    )
    return [s for s in SPLIT_ORDER if s in present] + sorted(present - set(SPLIT_ORDER))


def judge_runs(*, version: DatasetVersion, judge: str, split: str | None = None) -> list[JudgeRun]:
    """The judge's runs; with ``split``, each run's ``split_unparsable`` lists that split's
    unparsable outputs (a run's stats cover its whole file)."""
    runs = list(
        JudgeRun.objects.filter(version=version, judge=judge)
        .select_related("created_by")
        .order_by("run_index")
    )
    if split is None:
        return runs
    listed = {u["question_id"] for r in runs for u in r.stats.get("unparsable_rows", [])}
    in_split = set(
        DatasetRow.objects.filter(version=version, split=split, question_id__in=listed).values_list(
            "question_id", flat=True
        )
    )
    for run in runs:
        run.split_unparsable = [
            u for u in run.stats.get("unparsable_rows", []) if u["question_id"] in in_split
        ]
    return runs


@dataclass(frozen=True)
class JudgeSummary:
    judge: str
    runs: int
    last_run_at: datetime | None
    splits: list[str]  # labels of the splits with a scorecard


def judges_on_version(*, version: DatasetVersion) -> list[JudgeSummary]:
    """The judges with runs on the version: run count, latest upload, splits scored."""
    splits: dict[str, list[str]] = {}
    for judge, split in Scorecard.objects.filter(version=version).values_list("judge", "split"):
        splits.setdefault(judge, []).append(split)
    return [
        JudgeSummary(
            judge=r["judge"],
            runs=r["n"],
            last_run_at=r["last"],
            splits=[split_label(s) for s in SPLIT_ORDER if s in splits.get(r["judge"], [])],
        )
        for r in JudgeRun.objects.filter(version=version)
        .values("judge")
        .annotate(n=Count("id"), last=Max("created_at"))
        .order_by("judge")
    ]
