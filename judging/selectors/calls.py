"""Reads of the call inspector: a runner run's rows with the judge calls behind each one.

The rows' call keys and each call's parse method are read for the whole run (two light queries)
to count the rows per parse method and to filter on it; the page's predictions and their calls
are then read whole, one query each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import OuterRef, Subquery
from django.shortcuts import get_object_or_404

from aggregation.models import DatasetRow, DatasetVersion
from annotation.models import Criterion

from ..models import JudgeCall, JudgeRun, Prediction
from ..runner.run import shown_output

#: Rows per page.
PAGE_SIZE = 50
#: Keys per query when the whole run's calls are read.
_CHUNK = 1000
#: The parse methods, in the filter's order.
METHODS: tuple[str, ...] = tuple(JudgeCall.ParseMethod.values)
ORDER_LABELS = {"ab": "A/B", "ba": "B/A"}
#: The badge colour of each parse method.
BADGES = {"direct": "ok", "verifier": "seed", "unparsed": "warn", "truncated": "warn"}
VERDICTS = {"model_a": "A", "model_b": "B"}


@dataclass(frozen=True)
class CallFilters:
    """What the inspector shows: rows with a call of ``method``, of ``criterion``, whose
    question id holds ``search``; and the page."""

    method: str = ""
    criterion: str = ""
    search: str = ""
    page: int | None = None

    @property
    def active(self) -> bool:
        return bool(self.method or self.criterion or self.search)

    def query(self, **changes: str | int | None) -> str:
        """These filters as a query string (``changes`` replace values; empty ones are left
        out)."""
        values = {
            "method": self.method,
            "criterion": self.criterion,
            "q": self.search,
            "page": self.page,
            **changes,
        }
        return urlencode({k: v for k, v in values.items() if v not in (None, "")})


@dataclass(frozen=True)
class ShownCall:
    """One call as the page shows it: its outputs cut to the shown length."""

    call: JudgeCall
    raw_output: str
    reasoning_output: str
    verifier_output: str
    error: str

    @property
    def order(self) -> str:
        return ORDER_LABELS.get(self.call.order, self.call.order)

    @property
    def badge(self) -> str:
        return BADGES.get(self.call.parse_method, "bad")

    @property
    def method_label(self) -> str:
        return JudgeCall.ParseMethod(self.call.parse_method).label

    @property
    def verdict(self) -> str:
        return VERDICTS.get(self.call.verdict, self.call.verdict)

    @property
    def server(self) -> str:
        """The server that answered, without its scheme (the full URL is its title)."""
        return self.call.base_url.split("://", 1)[-1]


@dataclass(frozen=True)
class CallRow:
    """A prediction with its calls (A/B first), and the keys whose call is no longer stored."""

    prediction: Prediction
    criterion: str
    split: str
    calls: list[ShownCall]
    lost: int = 0

    @property
    def span(self) -> int:
        """Table rows the prediction's cells span: one per call (its outputs' row below them
        spans the table)."""
        return len(self.calls) or 1

    @property
    def verdict(self) -> str:
        return VERDICTS.get(self.prediction.prediction, self.prediction.prediction)


@dataclass
class CallsInspection:
    """A page of the run's rows, the rows matching the criterion and search, and how many of
    them have a call of each parse method."""

    page: Page
    filters: CallFilters
    matching: int
    counts: dict[str, int] = field(default_factory=dict)
    linked: bool = True  # False: no row of the run records its calls

    @property
    def method_options(self) -> list[tuple[str, str, int]]:
        """The parse method filter's options: value, label and rows, e.g. Truncated (12)."""
        return [(m, m.capitalize(), self.counts.get(m, 0)) for m in METHODS]

    @property
    def previous_query(self) -> str:
        return self.filters.query(page=self.page.number - 1)

    @property
    def next_query(self) -> str:
        return self.filters.query(page=self.page.number + 1)


def runner_run_get(*, version: DatasetVersion, run_id: int) -> JudgeRun:
    """The judge runner's run ``run_id`` of ``version`` (404 for an upload or another version's
    run)."""
    return get_object_or_404(JudgeRun, pk=run_id, version=version, source=JudgeRun.Source.RUNNER)


def run_criteria(*, version: DatasetVersion, run: JudgeRun) -> list[tuple[str, str]]:
    """The criteria of the run's rows: (key, name as the project names it), by name."""
    keys = set(
        DatasetRow.objects.filter(
            version=version, question_id__in=run.predictions.values("question_id")
        )
        .order_by()
        .values_list("criterion", flat=True)
        .distinct()
    )
    names = dict(
        Criterion.all_objects.filter(project_id=version.project_id, key__in=keys).values_list(
            "key", "name"
        )
    )
    return sorted(((k, names.get(k, k)) for k in keys), key=lambda kv: (kv[1].lower(), kv[0]))


def _methods_by_key(keys: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        found.update(JudgeCall.objects.filter(key__in=chunk).values_list("key", "parse_method"))
    return found


def _matching_rows(
    *, version: DatasetVersion, run: JudgeRun, filters: CallFilters
) -> list[tuple[int, list[str]]]:
    """(prediction id, call keys) of the run's rows of the criterion and search, in run order."""
    query = Prediction.objects.filter(run=run)
    if filters.criterion:
        of_criterion = DatasetRow.objects.filter(version=version, criterion=filters.criterion)
        query = query.filter(question_id__in=of_criterion.values("question_id"))
    if filters.search:
        query = query.filter(question_id__icontains=filters.search)
    return [
        (pk, list(keys or [])) for pk, keys in query.order_by("pk").values_list("pk", "call_keys")
    ]


def _shown(call: JudgeCall) -> ShownCall:
    return ShownCall(
        call=call,
        raw_output=shown_output(call.raw_output),
        reasoning_output=shown_output(call.reasoning_output),
        verifier_output=shown_output(call.verifier_output),
        error=shown_output(call.error),
    )


def _page_rows(*, version: DatasetVersion, ids: list[int]) -> list[CallRow]:
    """The predictions ``ids`` with their criterion and calls (one query each)."""
    row = DatasetRow.objects.filter(version=version, question_id=OuterRef("question_id"))
    predictions = list(
        Prediction.objects.filter(pk__in=ids)
        .defer("raw_output")
        .annotate(
            criterion=Subquery(row.values("criterion")[:1]),
            row_split=Subquery(row.values("split")[:1]),
        )
        .order_by("pk")
    )
    keys = [key for p in predictions for key in p.call_keys or []]
    calls = {c.key: c for c in JudgeCall.objects.filter(key__in=keys)} if keys else {}
    rows = []
    for p in predictions:
        found = [calls[k] for k in p.call_keys or [] if k in calls]
        rows.append(
            CallRow(
                prediction=p,
                criterion=p.criterion or "",
                split=p.row_split or "",
                calls=[_shown(c) for c in found],
                lost=len(p.call_keys or []) - len(found),
            )
        )
    return rows


def _counts(methods: Iterable[set[str]]) -> dict[str, int]:
    tally: Counter[str] = Counter()
    for present in methods:
        tally.update(present)
    return {m: tally.get(m, 0) for m in METHODS}


def calls_inspect(
    *, version: DatasetVersion, run: JudgeRun, filters: CallFilters
) -> CallsInspection:
    """The page of the run's rows the filters ask for, with the calls behind each row."""
    rows = _matching_rows(version=version, run=run, filters=filters)
    method_of = _methods_by_key([k for _, keys in rows for k in keys])
    present = [(pk, {method_of[k] for k in keys if k in method_of}) for pk, keys in rows]
    ids = [pk for pk, methods in present if not filters.method or filters.method in methods]
    page = Paginator(ids, PAGE_SIZE).get_page(filters.page)
    page.object_list = _page_rows(version=version, ids=list(page.object_list))
    linked = any(keys for _, keys in rows) or not rows
    return CallsInspection(
        page=page,
        filters=filters,
        matching=len(rows),
        counts=_counts(methods for _, methods in present),
        linked=linked,
    )
