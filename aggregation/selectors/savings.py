"""Votes saved by early stopping and judge-assisted routing, and the expert time they stand for.

A label made with fewer than k votes because the rest could not change it (``early_stopped``) or
because one verifier confirmed the judge panel (``panel_human``) saved ``k - votes`` votes. Their
expected expert time is the split's median seconds per formal vote times the votes saved. The
share is of the votes the full protocol would have needed for the same labels (cast + saved).
"""

from __future__ import annotations

import statistics
from typing import Any

from django.db import connection
from django.db.models import Count, F, IntegerField, Q, Sum, Value
from django.db.models.functions import Coalesce, Greatest

from annotation.models import Project, SampleStatus, Split, Vote
from annotation.splits import split_label

from ..models import CriterionLabel, Provenance

SAVING = (Provenance.EARLY_STOPPED, Provenance.PANEL_HUMAN)
ROUTING_SHORT = {"off": "off", "panel_verifier": "panel + 1 verifier"}


def _median_seconds(project: Project) -> dict[str, float | None]:
    """Median seconds per formal vote (timed votes only) per split, in one query."""
    votes = Vote.objects.filter(
        sample__project=project, sample__is_seed=False, round=Vote.FORMAL_ROUND, seconds__gt=0
    )
    out: dict[str, float | None] = {split: None for split in Split.values}
    if connection.vendor == "postgresql":
        sql, params = votes.values("sample__split", "seconds").query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT q.split, PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY q.seconds)"
                f" FROM ({sql}) AS q(split, seconds) GROUP BY q.split",
                params,
            )
            out.update({split: float(m) for split, m in cursor.fetchall()})
        return out
    seconds: dict[str, list[float]] = {}
    for split, value in votes.values_list("sample__split", "seconds").iterator():
        seconds.setdefault(split, []).append(value)
    out.update({split: statistics.median(values) for split, values in seconds.items()})
    return out


def _saved_expression(k: int) -> Any:
    """Votes a label did not need: k minus its votes, for the provenances that save votes."""
    n_votes = F("votes_a") + F("votes_b") + F("votes_tie")
    return Greatest(Value(k) - n_votes, Value(0), output_field=IntegerField())


def saved_per_split(*, project: Project) -> dict[str, int]:
    """Votes saved per split by the labels of the last aggregation (for the progress figures)."""
    rows = (
        CriterionLabel.objects.filter(
            sample__project=project,
            sample__is_seed=False,
            sample__status=SampleStatus.ACTIVE,
            provenance__in=SAVING,
        )
        .values("sample__split")
        .annotate(saved=Coalesce(Sum(_saved_expression(project.annotators_per_sample)), 0))
        .order_by()
    )
    return {r["sample__split"]: int(r["saved"]) for r in rows}


def votes_saved(*, project: Project) -> dict[str, Any]:
    """Per split and in total: votes cast, votes saved, their share and expected expert minutes."""
    n_votes = F("votes_a") + F("votes_b") + F("votes_tie")
    saved_expr = _saved_expression(project.annotators_per_sample)
    rows = (
        CriterionLabel.objects.filter(
            sample__project=project, sample__is_seed=False, sample__status=SampleStatus.ACTIVE
        )
        .values("sample__split")
        .annotate(
            cast=Coalesce(Sum(n_votes), 0),
            saved=Coalesce(Sum(saved_expr, filter=Q(provenance__in=SAVING)), 0),
            stopped=Count("pk", filter=Q(provenance=Provenance.EARLY_STOPPED)),
            verified=Count("pk", filter=Q(provenance=Provenance.PANEL_HUMAN)),
            overruled=Count("pk", filter=Q(provenance=Provenance.PANEL_OVERRULED)),
        )
        .order_by("sample__split")
    )
    median = _median_seconds(project)
    by_split = {r["sample__split"]: r for r in rows}
    splits = []
    for split in Split.values:
        r = by_split.get(split)
        if r is None:
            continue
        splits.append(_row(split, split_label(split), r, median.get(split)))
    total = {
        key: sum(s[key] for s in splits)
        for key in ("cast", "saved", "stopped", "verified", "overruled")
    }
    minutes = [s["minutes"] for s in splits if s["minutes"] is not None]
    total.update(
        split="all",
        label="All splits",
        share=_share(total["saved"], total["cast"]),
        median_seconds=None,
        minutes=sum(minutes) if minutes else None,
    )
    return {
        "on": bool(project.early_stopping) or project.routing_policy != "off",
        "early_stopping": bool(project.early_stopping),
        "routing_policy": ROUTING_SHORT.get(project.routing_policy, project.routing_policy),
        "audit_share": float(project.audit_share),
        "splits": splits,
        "total": total,
    }


def _share(saved: int, cast: int) -> float | None:
    return saved / (saved + cast) if saved + cast else None


def _row(split: str, label: str, r: dict[str, Any], median: float | None) -> dict[str, Any]:
    saved = int(r["saved"])
    return {
        "split": split,
        "label": label,
        "cast": int(r["cast"]),
        "saved": saved,
        "stopped": int(r["stopped"]),
        "verified": int(r["verified"]),
        "overruled": int(r["overruled"]),
        "share": _share(saved, int(r["cast"])),
        "median_seconds": median,
        "minutes": saved * median / 60 if median is not None else None,
    }
