"""The lead's sample browser: find any sample, then read it with every vote and rationale.

A project may hold 100,000 samples, so the list pages by id (keyset: ``after`` / ``before``
an id, never an OFFSET) and each page annotates only its own rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet

from annotation.models import Criterion, ProblemReport, Project, Sample, Vote
from annotation.services.assignment import count_of

from ..models import CriterionLabel, Outcome

PAGE_SIZE = 50

#: The agreement filter: what aggregation made of the sample's criteria.
AGREEMENT_CHOICES = [
    ("unanimous", "Every label unanimous"),
    ("majority_tie", "A label kept with a tie"),
    ("dropped", "A label dropped"),
    ("split", "A label dropped on an A/B split"),
    ("none", "Not aggregated yet"),
]
FLAG_CHOICES = [("open", "An open problem report"), ("any", "Any problem report")]
STATUS_CHOICES = [
    ("active", "Active"),
    ("retired", "Retired"),
    ("seed", "Seed samples"),
    ("formal", "Formal samples"),
]


@dataclass(frozen=True)
class SampleFilters:
    """The browser's filters, already validated (see ``aggregation.forms.SampleFilterForm``)."""

    q: str = ""
    split: str = ""
    status: str = ""
    agreement: str = ""
    flags: str = ""
    annotator: int | None = None


def samples_filtered(*, project: Project, filters: SampleFilters) -> QuerySet[Sample]:
    """The project's samples matching ``filters``, ordered by id."""
    qs = Sample.objects.filter(project=project)
    if filters.q:
        # An id typed exactly comes first in the reader's mind, but a partial id or any word of
        # the question finds it too.
        qs = qs.filter(Q(external_id__icontains=filters.q) | Q(question__icontains=filters.q))
    if filters.split:
        qs = qs.filter(split=filters.split)
    if filters.status in ("active", "retired"):
        qs = qs.filter(status=filters.status)
    elif filters.status in ("seed", "formal"):
        qs = qs.filter(is_seed=filters.status == "seed")
    labels = CriterionLabel.objects.filter(sample=OuterRef("pk"))
    if filters.agreement == "unanimous":
        qs = qs.filter(Exists(labels)).exclude(
            Exists(labels.exclude(outcome=Outcome.KEPT_UNANIMOUS))
        )
    elif filters.agreement == "majority_tie":
        qs = qs.filter(Exists(labels.filter(outcome=Outcome.KEPT_MAJORITY_TIE)))
    elif filters.agreement == "dropped":
        qs = qs.filter(Exists(labels.exclude(outcome__in=Outcome.kept())))
    elif filters.agreement == "split":
        qs = qs.filter(Exists(labels.filter(outcome=Outcome.DROPPED_SPLIT)))
    elif filters.agreement == "none":
        qs = qs.exclude(Exists(labels))
    reports = ProblemReport.objects.filter(sample=OuterRef("pk"))
    if filters.flags == "open":
        qs = qs.filter(Exists(reports.filter(resolved_at__isnull=True)))
    elif filters.flags == "any":
        qs = qs.filter(Exists(reports))
    if filters.annotator:
        qs = qs.filter(
            Exists(Vote.objects.filter(sample=OuterRef("pk"), annotator_id=filters.annotator))
        )
    return qs.order_by("id")


def samples_page(
    *,
    project: Project,
    filters: SampleFilters,
    after: int | None = None,
    before: int | None = None,
    per_page: int = PAGE_SIZE,
) -> dict[str, Any]:
    """One page of matching samples (after or before an id) with counts per row.

    ``total`` is the number of matches; ``next_after`` / ``prev_before`` are the ids to page on
    (None at either end).
    """
    qs = samples_filtered(project=project, filters=filters)
    if before is not None:
        window = qs.filter(id__lt=before).order_by("-id")
    else:
        window = qs.filter(id__gt=after) if after is not None else qs
    labels = CriterionLabel.objects.filter(sample_id=OuterRef("pk"))
    rows = list(
        window.annotate(
            n_votes=count_of(Vote.objects.filter(sample_id=OuterRef("pk"))),
            n_kept=count_of(labels.filter(outcome__in=Outcome.kept())),
            n_dropped=count_of(labels.exclude(outcome__in=Outcome.kept())),
            n_open_reports=count_of(
                ProblemReport.objects.filter(sample_id=OuterRef("pk"), resolved_at__isnull=True)
            ),
        ).only("id", "external_id", "split", "question", "is_seed", "status", "model_a", "model_b")[
            : per_page + 1
        ]
    )
    more = len(rows) > per_page
    rows = rows[:per_page]
    if before is not None:
        rows.reverse()
    first, last = (rows[0].pk, rows[-1].pk) if rows else (None, None)
    has_prev = first is not None and qs.filter(id__lt=first).exists()
    has_next = last is not None and (more if before is None else qs.filter(id__gt=last).exists())
    return {
        "rows": rows,
        "total": qs.count(),
        "next_after": last if has_next else None,
        "prev_before": first if has_prev else None,
    }


def sample_detail(*, project: Project, sample: Sample) -> dict[str, Any]:
    """Per criterion of the sample's split: its label and every vote, formal and calibration,
    each with its earlier versions (``vote.revisions``)."""
    criteria = list(
        Criterion.objects.filter(project=project, split=sample.split).order_by("order", "key")
    )
    labels = {lab.criterion_id: lab for lab in CriterionLabel.objects.filter(sample=sample)}
    votes: dict[int, list[Vote]] = {}
    for vote in (
        Vote.objects.filter(sample=sample)
        .select_related("annotator")
        .prefetch_related("revisions__revised_by")
        .order_by("criterion_id", "round", "annotator__username")
    ):
        votes.setdefault(vote.criterion_id, []).append(vote)
    blocks = [
        {"criterion": c, "label": labels.get(c.pk), "votes": votes.get(c.pk, [])} for c in criteria
    ]
    reports = list(
        ProblemReport.objects.filter(sample=sample)
        .select_related("reporter", "resolved_by", "reassigned_to")
        .order_by("-created_at")
    )
    return {
        "blocks": blocks,
        "n_votes": sum(len(b["votes"]) for b in blocks),
        "reports": reports,
    }
