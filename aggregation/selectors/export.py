"""Reads of the versions pages and the dataset API, and who may read which project and file.

The rule: a lead reads every project; anyone else reads the projects they are an active member
of (an annotator's token sees the datasets of their own projects, nothing else). API tokens add
no rights beyond their user's: a token is read-only for every scope.

Annotators never see another annotator's votes, rationales or pseudonyms. So whatever names
annotators is the lead's alone: the rows of a version built with votes, every data file of such
a version (JSONL, zip, Parquet: each holds the ``votes`` column), and the manifest file (its
agreement figures per annotator and pairwise table name them by pseudonym). A member reads the
label-only rows and files, and the manifest without those tables (:func:`manifest_readable`).
The web pages, the API and the file downloads all ask :func:`version_rows_readable` and
:func:`version_file_readable`.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Max, Q, QuerySet
from django.http import Http404

from annotation.models import Project
from core.models import Job
from core.permissions import is_lead

from ..models import DatasetFile, DatasetRow, DatasetVersion

#: The manifest's agreement entries that name annotators.
PER_ANNOTATOR_KEYS = frozenset({"per_annotator", "pairwise"})
LEAD_ONLY_MESSAGE = (
    "This holds the annotators' votes, rationales or pseudonyms: only a lead may read it."
)


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


def version_lead_only_kinds(*, version: DatasetVersion) -> frozenset[str]:
    """The file kinds of ``version`` that name annotators (votes, rationales or pseudonyms)."""
    if version.include_votes:
        return frozenset(DatasetFile.Kind.values)
    # The contested split always holds the dropped labels' votes and rationales.
    return frozenset({DatasetFile.Kind.MANIFEST, DatasetFile.Kind.CONTESTED})


def version_rows_readable(*, user: Any, version: DatasetVersion) -> bool:
    """Whether ``user`` (who reads the project) may read the version's rows."""
    return is_lead(user) or not version.include_votes


def version_file_readable(*, user: Any, version: DatasetVersion, kind: str) -> bool:
    """Whether ``user`` (who reads the project) may download the version's ``kind`` file."""
    return is_lead(user) or kind not in version_lead_only_kinds(version=version)


def manifest_readable(*, user: Any, version: DatasetVersion) -> dict[str, Any]:
    """The version's manifest as ``user`` may read it: without per-annotator figures unless lead."""
    manifest = version.manifest or {}
    if is_lead(user):
        return manifest
    agreement = {
        split: {k: v for k, v in figures.items() if k not in PER_ANNOTATOR_KEYS}
        for split, figures in (manifest.get("agreement") or {}).items()
    }
    return {**manifest, "agreement": agreement}


def versions_ready(*, project: Project) -> QuerySet[DatasetVersion]:
    """The project's ready versions (the only ones anyone but a build sees), newest first."""
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
    """The version's stored ``kind`` file, if it has one."""
    return DatasetFile.objects.filter(version=version, kind=kind).first()


def version_file_for(*, user: Any, version: DatasetVersion, kind: str) -> DatasetFile:
    """The ``kind`` file ``user`` downloads: PermissionDenied if lead-only, Http404 if none."""
    if not version_file_readable(user=user, version=version, kind=kind):
        raise PermissionDenied(LEAD_ONLY_MESSAGE)
    record = version_file(version=version, kind=kind)
    if record is None:
        raise Http404(f"Version {version.number} has no {kind!r} file.")
    return record


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
