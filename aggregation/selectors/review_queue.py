"""The lead's rationale review queue: which kept samples to read, in what order, and one item.

The queue holds the active samples with at least one label kept by aggregation (seed samples
only when the project exports them), ordered by id so next / previous are stable while the lead
works. Filters narrow it; a sample that leaves the filtered queue (say, once it is marked
reviewed under "not yet reviewed") still has neighbours, found by id.

The counts of the queue under any filter but "flagged" are sums of the ReviewQueueCell rows the
aggregation job stores with the labels, corrected live by the few retired samples and the
seeds; the flagged samples are counted live, from their few reports.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import urlencode

from django.db import OperationalError, connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.http import QueryDict
from django.shortcuts import get_object_or_404

from aggregation.review_cell_counts import KIND_BITS, PROVENANCE_BITS
from aggregation.selectors.review import labels_with_review_state
from annotation.models import Criterion, ProblemReport, Project, Sample, SampleStatus, Split, Vote

from ..models import (
    CriterionLabel,
    Outcome,
    Provenance,
    ReviewDecision,
    ReviewQueueCell,
    ReviewQueueFigures,
    SampleReview,
)

KINDS = {
    "unanimous": (Outcome.KEPT_UNANIMOUS,),
    "majority_tie": (Outcome.KEPT_MAJORITY_TIE,),
}
KIND_CHOICES = [("unanimous", "Unanimous"), ("majority_tie", "Majority + tie")]
PAGE_SIZE = 50
# An item page counts its position in the queue only while that takes less than this.
POSITION_BUDGET_MS = 30
# How a kept label was gathered (early-stopped labels are never kept, so not offered).
PROVENANCE_CHOICES = [
    (Provenance.HUMAN.value, "Human (full protocol)"),
    (Provenance.PANEL_HUMAN.value, "Panel + human"),
    (Provenance.PANEL_OVERRULED.value, "Panel overruled"),
]


@dataclass(frozen=True)
class QueueFilters:
    split: str = ""
    criterion: int | None = None
    kind: str = ""
    disagreements: bool = False
    flagged: bool = False
    unreviewed: bool = False
    provenance: str = ""

    @classmethod
    def from_query(cls, data: QueryDict | dict[str, str]) -> QueueFilters:
        """Read the filters from a query string; unknown values are ignored, not errors."""
        split = data.get("split", "")
        criterion = data.get("criterion", "")
        kind = data.get("kind", "")
        provenance = data.get("provenance", "")
        return cls(
            split=split if split in Split.values else "",
            criterion=int(criterion) if str(criterion).isdigit() else None,
            kind=kind if kind in KINDS else "",
            disagreements=data.get("disagreements") in ("1", "on", "true"),
            flagged=data.get("flagged") in ("1", "on", "true"),
            unreviewed=data.get("unreviewed") in ("1", "on", "true"),
            provenance=provenance if provenance in Provenance.values else "",
        )

    def params(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is True:
                out[f.name] = "1"
            elif value not in ("", None, False):
                out[f.name] = str(value)
        return out

    def querystring(self) -> str:
        """``?split=...`` (empty string when no filter is set), for links that keep filters."""
        params = self.params()
        return "?" + urlencode(params) if params else ""

    @property
    def active(self) -> bool:
        return bool(self.params())


def review_queue(
    *,
    project: Project,
    filters: QueueFilters | None = None,
    after: int | None = None,
    before: int | None = None,
) -> QuerySet[Sample]:
    """The kept samples of the project matching ``filters``, ordered by id.

    ``after`` / ``before`` bound the ids, in the label semi-joins too, so a merge join reads the
    label indexes from the bound rather than from the first sample of every project.
    """
    qs = Sample.objects.filter(project=project, status=SampleStatus.ACTIVE)
    if not project.export_includes_seeds:
        qs = qs.filter(is_seed=False)
    return _filtered(qs, filters or QueueFilters(), after=after, before=before).order_by("id")


def _filtered(
    qs: QuerySet[Sample],
    filters: QueueFilters,
    after: int | None = None,
    before: int | None = None,
) -> QuerySet[Sample]:
    """``qs`` narrowed to the samples holding a kept label and matching ``filters``."""
    bounds = {}
    if after is not None:
        qs, bounds["sample_id__gt"] = qs.filter(id__gt=after), after
    if before is not None:
        qs, bounds["sample_id__lt"] = qs.filter(id__lt=before), before
    labels = CriterionLabel.objects.filter(sample=OuterRef("pk"), **bounds)
    kept = labels.filter(outcome__in=Outcome.kept())
    qs = qs.filter(Exists(kept))
    if filters.split:
        qs = qs.filter(split=filters.split)
    if filters.criterion:
        # The criterion filter asks for samples where that criterion's label was kept; the
        # kind filter then applies to that criterion.
        kept = kept.filter(criterion_id=filters.criterion)
        qs = qs.filter(Exists(kept))
    if filters.kind:
        qs = qs.filter(Exists(kept.filter(outcome__in=KINDS[filters.kind])))
    if filters.provenance:
        qs = qs.filter(Exists(kept.filter(provenance=filters.provenance)))
    if filters.disagreements:
        qs = qs.filter(Exists(labels.exclude(outcome=Outcome.KEPT_UNANIMOUS)))
    if filters.flagged:
        qs = qs.filter(Exists(ProblemReport.objects.filter(sample=OuterRef("pk"))))
    if filters.unreviewed:
        qs = qs.exclude(Exists(SampleReview.objects.filter(sample=OuterRef("pk"))))
    return qs


def _reviewed() -> Exists:
    return Exists(SampleReview.objects.filter(sample=OuterRef("pk")))


def _stored_counts(project: Project, filters: QueueFilters) -> dict[str, int] | None:
    """The queue's total and reviewed from the stored cells; None when not all are stored.

    The cells hold retired samples and no seeds: the few such samples matching the filters are
    taken off and (when the project exports seeds) added live, on partial indexes.
    """
    counted = ReviewQueueFigures.objects.filter(project=project, counted=True).count()
    if counted < len(Split.values):
        return None
    cells = ReviewQueueCell.objects.filter(project=project)
    if filters.criterion:
        cells = cells.filter(criterion_id=filters.criterion)
    else:
        cells = cells.filter(criterion__isnull=True)
    if filters.split:
        cells = cells.filter(split=filters.split)
    if filters.kind:
        bits = sum(KIND_BITS[outcome] for outcome in KINDS[filters.kind])
        cells = cells.annotate(kind_bits=F("kinds").bitand(bits)).filter(kind_bits__gt=0)
    if filters.provenance:
        bit = PROVENANCE_BITS[filters.provenance]
        cells = cells.annotate(prov_bits=F("provenances").bitand(bit)).filter(prov_bits__gt=0)
    if filters.disagreements:
        cells = cells.filter(disagreement=True)
    stored = cells.aggregate(
        total=Coalesce(Sum("n"), 0), reviewed=Coalesce(Sum("n", filter=Q(reviewed=True)), 0)
    )
    off = Q(is_seed=False) & ~Q(status=SampleStatus.ACTIVE)
    seeds = Q(is_seed=True, status=SampleStatus.ACTIVE)
    others = Sample.objects.filter(project=project).filter(
        off | seeds if project.export_includes_seeds else off
    )
    fix = _filtered(others, filters).aggregate(
        off=Count("id", filter=Q(is_seed=False)),
        off_reviewed=Count("id", filter=Q(is_seed=False) & Q(_reviewed())),
        seeds=Count("id", filter=Q(is_seed=True)),
        seeds_reviewed=Count("id", filter=Q(is_seed=True) & Q(_reviewed())),
    )
    return {
        "total": stored["total"] - fix["off"] + fix["seeds"],
        "reviewed": stored["reviewed"] - fix["off_reviewed"] + fix["seeds_reviewed"],
    }


def review_counts(*, project: Project, filters: QueueFilters | None = None) -> dict[str, int]:
    """How many samples the queue holds, how many are reviewed and how many are left.

    Counted without the "not yet reviewed" filter, so the figures say what is left overall.
    Read from the stored cells (three small queries) unless "flagged" is set: the flagged
    samples are few, and counted live from their reports.
    """
    base = replace(filters or QueueFilters(), unreviewed=False)
    figures = None if base.flagged else _stored_counts(project, base)
    if figures is None:
        figures = review_queue(project=project, filters=base).aggregate(
            total=Count("id"), reviewed=Count("id", filter=Q(_reviewed()))
        )
    figures["left"] = figures["total"] - figures["reviewed"]
    figures["share"] = figures["reviewed"] / figures["total"] if figures["total"] else None
    return figures


def _count_within(queryset: QuerySet[Sample], budget_ms: int | None) -> int | None:
    """``queryset.count()``, or None when PostgreSQL cancels it after ``budget_ms``."""
    if budget_ms is None or connection.vendor != "postgresql":
        return queryset.count()
    try:
        # SET LOCAL lasts to the end of the transaction: the savepoint's rollback ends it on a
        # timeout, the reset after the count otherwise.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('statement_timeout'), "
                "set_config('statement_timeout', %s, true)",
                [f"{budget_ms}ms"],
            )
            previous = cursor.fetchone()[0]
            n = queryset.count()
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [previous])
        return n
    except OperationalError:
        return None


def review_next_id(*, project: Project, filters: QueueFilters, sample_id: int) -> int | None:
    """The id after ``sample_id`` in the filtered queue (None at its end): one indexed read."""
    return (
        review_queue(project=project, filters=filters, after=sample_id)
        .values_list("id", flat=True)
        .first()
    )


def review_neighbours(
    *,
    project: Project,
    filters: QueueFilters,
    sample_id: int,
    total: int | None = None,
    position_budget_ms: int | None = POSITION_BUDGET_MS,
) -> dict[str, Any]:
    """The previous and next sample ids around ``sample_id`` and its position in the queue.

    Next and previous are one indexed read each way. The position is a count of the ids
    before; on PostgreSQL it is given up (None, ``position_counted`` False) when it takes longer
    than ``position_budget_ms`` (None: no limit). ``total`` (from :func:`review_counts`) saves
    counting the queue.
    """
    prev_id = (
        review_queue(project=project, filters=filters, before=sample_id)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    next_id = review_next_id(project=project, filters=filters, sample_id=sample_id)
    in_queue = review_queue(project=project, filters=filters).filter(id=sample_id).exists()
    if total is None:
        counts = review_counts(project=project, filters=filters)
        total = counts["left"] if filters.unreviewed else counts["total"]
    before = None
    if in_queue:
        before = _count_within(
            review_queue(project=project, filters=filters, before=sample_id).order_by(),
            position_budget_ms,
        )
    return {
        "prev_id": prev_id,
        "next_id": next_id,
        "position": before + 1 if before is not None else None,
        "position_counted": before is not None or not in_queue,
        "in_queue": in_queue,
        "total": total,
    }


def review_page(
    *,
    project: Project,
    filters: QueueFilters,
    page: int = 1,
    per_page: int = PAGE_SIZE,
    after: int | None = None,
    before: int | None = None,
    counts: dict[str, int] | None = None,
) -> dict[str, Any]:
    """One page of the queue with each sample's labels and review state (fixed query count).

    ``after`` / ``before`` (the last id of the page before, the first of the page after) read
    the page by id, whatever its number; without them the page is found by its number.
    ``counts`` (from :func:`review_counts` with the same filters) saves counting the queue.
    """
    if counts is None:
        total = review_queue(project=project, filters=filters).count()
    else:
        total = counts["left"] if filters.unreviewed else counts["total"]
    pages = max(1, (total + per_page - 1) // per_page)
    page = max(1, min(page, pages))
    bounds = {"after": after} if after is not None else {"before": before}
    queue = review_queue(project=project, filters=filters, **bounds)
    annotated = queue.annotate(
        n_flags=Count("problem_reports", distinct=True),
        is_reviewed=Exists(SampleReview.objects.filter(sample=OuterRef("pk"))),
    )
    if after is not None:
        samples = list(annotated[:per_page])
    elif before is not None:
        samples = list(annotated.order_by("-id")[:per_page])[::-1]
    else:
        samples = list(annotated[(page - 1) * per_page : page * per_page])
    by_sample: dict[int, list[CriterionLabel]] = {s.pk: [] for s in samples}
    labels = (
        labels_with_review_state(project=project)
        .filter(sample_id__in=list(by_sample))
        .select_related("criterion")
        .order_by("sample_id", "criterion__order", "criterion__key")
    )
    for lab in labels:
        lab.discarded = lab.is_kept and ReviewDecision.Action.DISCARD in (
            lab.label_action,
            lab.sample_action,
        )
        by_sample[lab.sample_id].append(lab)
    rows = [{"sample": s, "labels": by_sample[s.pk]} for s in samples]
    return {
        "rows": rows,
        "page": page,
        "pages": pages,
        "total": total,
        "first_id": samples[0].pk if samples else None,
        "last_id": samples[-1].pk if samples else None,
    }


def review_item(*, project: Project, sample_id: int) -> dict[str, Any]:
    """A sample with, per criterion of its split: the label, every formal vote, the decisions."""
    sample = get_object_or_404(Sample, project=project, pk=sample_id)
    criteria = list(
        Criterion.objects.filter(project=project, split=sample.split).order_by("order", "key")
    )
    labels = {lab.criterion_id: lab for lab in CriterionLabel.objects.filter(sample=sample)}
    votes: dict[int, list[Vote]] = {}
    for vote in (
        Vote.objects.filter(sample=sample, round=Vote.FORMAL_ROUND)
        .select_related("annotator")
        .order_by("criterion_id", "annotator__username")
    ):
        votes.setdefault(vote.criterion_id, []).append(vote)
    decisions = list(
        ReviewDecision.objects.filter(sample=sample)
        .select_related("author", "criterion")
        .order_by("created_at", "id")
    )
    latest: dict[int | None, ReviewDecision] = {}
    for decision in decisions:
        latest[decision.criterion_id] = decision
    sample_decision = latest.get(None)
    sample_discarded = bool(
        sample_decision and sample_decision.action == ReviewDecision.Action.DISCARD
    )
    blocks = []
    for criterion in criteria:
        label = labels.get(criterion.pk)
        decision = latest.get(criterion.pk)
        label_discarded = bool(decision and decision.action == ReviewDecision.Action.DISCARD)
        blocks.append(
            {
                "criterion": criterion,
                "label": label,
                "kept": bool(label and label.is_kept),
                "votes": votes.get(criterion.pk, []),
                "decision": decision,
                "discarded": label_discarded,
                "exported": bool(label and label.is_kept and not label_discarded)
                and not sample_discarded,
            }
        )
    reports = list(
        ProblemReport.objects.filter(sample=sample).select_related("reporter", "resolved_by")
    )
    review = SampleReview.objects.filter(sample=sample).select_related("reviewed_by").first()
    return {
        "sample": sample,
        "blocks": blocks,
        "decisions": list(reversed(decisions)),
        "sample_decision": sample_decision,
        "sample_discarded": sample_discarded,
        "reports": reports,
        "review": review,
    }


def criterion_choices(*, project: Project) -> list[tuple[str, list[Criterion]]]:
    """The project's criteria grouped by split, for the queue's criterion filter."""
    criteria = list(Criterion.objects.filter(project=project).order_by("split", "order", "key"))
    return [
        (label, [c for c in criteria if c.split == value])
        for value, label in Split.choices
        if any(c.split == value for c in criteria)
    ]
