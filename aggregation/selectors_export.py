"""Reads of the versions pages and the dataset API, and who may read which project.

The rule: a lead reads every project; anyone else reads the projects they are an active member
of (an annotator's token sees the datasets of their own projects, nothing else). API tokens add
no rights beyond their user's: a token is read-only for every scope.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, Q, QuerySet

from annotation.models import Job, Project
from annotation.permissions import is_lead

from .models import DatasetFile, DatasetRow, DatasetVersion


def projects_readable(*, user: Any) -> QuerySet[Project]:
    """The projects ``user`` may read, with their number of ready versions and the latest one."""
    projects = Project.objects.all()
    if not is_lead(user):
        projects = projects.filter(members__user=user, members__is_active=True)
    ready = Q(versions__status=DatasetVersion.Status.READY)
    return projects.annotate(
        n_versions=Count("versions", filter=ready, distinct=True),
        latest_version=Max("versions__number", filter=ready),
    ).order_by("name")


def project_readable(*, user: Any, project: Project) -> bool:
    return is_lead(user) or project.members.filter(user=user, is_active=True).exists()


def versions_ready(*, project: Project) -> QuerySet[DatasetVersion]:
    return (
        DatasetVersion.objects.filter(project=project, status=DatasetVersion.Status.READY)
        .select_related("project", "created_by")
        .prefetch_related("files")
        .order_by("-number")
    )


def versions_all(*, project: Project) -> QuerySet[DatasetVersion]:
    """Every version of the project (building and failed too), newest first, for the lead."""
    return (
        DatasetVersion.objects.filter(project=project)
        .select_related("created_by")
        .prefetch_related("files")
        .order_by("-number")
    )


def version_file(*, version: DatasetVersion, kind: str) -> DatasetFile | None:
    return DatasetFile.objects.filter(version=version, kind=kind).first()


def version_rows(
    *, version: DatasetVersion, split: str | None = None, criterion: str | None = None
) -> QuerySet[DatasetRow]:
    rows = DatasetRow.objects.filter(version=version)
    if split:
        rows = rows.filter(split=split)
    if criterion:
        rows = rows.filter(criterion=criterion)
    return rows.order_by("id")


def build_job_latest(*, project: Project) -> Job | None:
    return (
        Job.objects.filter(project=project, kind=Job.Kind.BUILD_VERSION)
        .order_by("-created_at", "-id")
        .first()
    )
