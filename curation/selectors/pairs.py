"""Reads of the curation page: the latest run, counts, the pair browser and the decisions CSV."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Prefetch, QuerySet

from annotation.models import Project, Sample

from ..models import CandidatePair, CurationRun, PairDecision, RawPrompt, RawResponse

CSV_HEADER = [
    "position",
    "prompt_id",
    "split",
    "source",
    "kind",
    "model_a",
    "sample_a",
    "model_b",
    "sample_b",
    "how",
    "filter",
    "passed",
    "reason",
    "figures",
    "removed_by",
    "sample_id",
]


def run_latest(*, project: Project) -> CurationRun | None:
    return CurationRun.objects.filter(project=project).first()


def curation_counts(*, project: Project) -> dict[str, int]:
    """Prompts and responses stored, pairs made and kept, kept pairs already promoted."""
    kept_ids = CandidatePair.objects.filter(project=project, removed_by="").values("external_id")
    return {
        "prompts": RawPrompt.objects.filter(project=project).count(),
        "responses": RawResponse.objects.filter(prompt__project=project).count(),
        "pairs": CandidatePair.objects.filter(project=project).count(),
        "kept": CandidatePair.objects.filter(project=project, removed_by="").count(),
        "promoted": Sample.objects.filter(project=project, external_id__in=kept_ids).count(),
    }


def pair_sources(*, project: Project) -> list[str]:
    return list(
        RawPrompt.objects.filter(project=project)
        .order_by("source")
        .values_list("source", flat=True)
        .distinct()
    )


def pairs_filtered(
    *, project: Project, split: str = "", source: str = "", status: str = ""
) -> QuerySet[CandidatePair]:
    """The pairs of the browser, in order, with their prompt, responses and decisions."""
    pairs = (
        CandidatePair.objects.filter(project=project)
        .select_related("prompt", "response_a", "response_b")
        .prefetch_related(Prefetch("decisions", queryset=PairDecision.objects.order_by("order")))
    )
    if split:
        pairs = pairs.filter(prompt__split=split)
    if source:
        pairs = pairs.filter(prompt__source=source)
    if status == "kept":
        pairs = pairs.filter(removed_by="")
    elif status:
        pairs = pairs.filter(removed_by=status)
    return pairs.order_by("position")


def decision_rows(*, project: Project) -> Iterator[list[Any]]:
    """One CSV row per (pair, filter that looked at it); a pair no filter saw has one row."""
    import json

    promoted = set(
        Sample.objects.filter(
            project=project,
            external_id__in=CandidatePair.objects.filter(project=project).values("external_id"),
        ).values_list("external_id", flat=True)
    )
    pairs = (
        CandidatePair.objects.filter(project=project)
        .select_related("prompt", "response_a", "response_b")
        .prefetch_related(Prefetch("decisions", queryset=PairDecision.objects.order_by("order")))
        .order_by("position")
    )
    for pair in pairs.iterator(chunk_size=1000):
        base = [
            pair.position,
            pair.prompt.prompt_id,
            pair.prompt.split,
            pair.prompt.source,
            pair.kind,
            pair.response_a.model,
            pair.response_a.sample_index,
            pair.response_b.model,
            pair.response_b.sample_index,
            json.dumps(pair.how, sort_keys=True),
        ]
        tail = [pair.removed_by or "kept", pair.external_id if pair.external_id in promoted else ""]
        decisions = list(pair.decisions.all())
        if not decisions:
            yield [*base, "", "", "", "", *tail]
        for d in decisions:
            yield [
                *base,
                d.filter,
                "yes" if d.passed else "no",
                d.reason,
                json.dumps(d.figures, sort_keys=True),
                *tail,
            ]
