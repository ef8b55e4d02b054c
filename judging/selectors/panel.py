"""Reads of the judge panel page: what the stored panel labels say, the panel's jobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Max, Q

from annotation.models import Criterion, PanelLabel, Project, Sample, SampleStatus
from core.models import Job


@dataclass(frozen=True)
class PanelSummary:
    """The project's panel labels in numbers."""

    items: int  # formal (sample, criterion) items today
    labeled: int
    routable: int
    unanimous: int
    consistent: int
    side_a: int
    side_b: int
    judges: list[str]
    written_at: Any

    @property
    def routable_share(self) -> float | None:
        return self.routable / self.labeled if self.labeled else None


def panel_summary(*, project: Project) -> PanelSummary:
    """Counts of the project's panel labels, and how many formal items it has today."""
    per_split = dict(
        Criterion.objects.filter(project=project)
        .values_list("split")
        .annotate(n=Count("id"))
        .values_list("split", "n")
    )
    samples = dict(
        Sample.objects.filter(project=project, is_seed=False, status=SampleStatus.ACTIVE)
        .values_list("split")
        .annotate(n=Count("id"))
        .values_list("split", "n")
    )
    items = sum(n * per_split.get(split, 0) for split, n in samples.items())
    labels = PanelLabel.objects.filter(sample__project=project)
    counts = labels.aggregate(
        n_labeled=Count("id"),
        n_routable=Count("id", filter=Q(routable=True)),
        n_unanimous=Count("id", filter=Q(unanimous=True)),
        n_consistent=Count("id", filter=Q(consistent=True)),
        n_side_a=Count("id", filter=Q(routable=True, choice="A")),
        n_side_b=Count("id", filter=Q(routable=True, choice="B")),
        last=Max("created_at"),
    )
    first = labels.values_list("judges", flat=True).first()
    return PanelSummary(
        items=items,
        labeled=counts["n_labeled"],
        routable=counts["n_routable"],
        unanimous=counts["n_unanimous"],
        consistent=counts["n_consistent"],
        side_a=counts["n_side_a"],
        side_b=counts["n_side_b"],
        judges=list(first or []),
        written_at=counts["last"],
    )


def panel_jobs(*, project: Project, limit: int = 5) -> list[Job]:
    """The project's latest panel jobs, newest first."""
    return list(Job.objects.filter(project=project, kind=Job.Kind.PANEL)[:limit])


def panel_job_get(*, project: Project, job_id: int | None) -> Job | None:
    """The panel job ``job_id`` of ``project``, if there is one."""
    if job_id is None:
        return None
    return Job.objects.filter(pk=job_id, project=project, kind=Job.Kind.PANEL).first()
