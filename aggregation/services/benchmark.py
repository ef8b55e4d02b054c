"""The published Multi-Crit benchmark as a ready dataset version, labels as published.

``benchmark_import`` imports the release's rows (every file of a call read as one: a file per
split, or shards) into a project of its own without annotator slots, then freezes a
DatasetVersion whose labels are the published preferences: no votes, no aggregation, nothing for
annotators to do. Its manifest's ``labels`` section says so (provenance ``published``, the files
read, a fingerprint of the labels). Leaderboard, scorecards, the API and the exports work on it
like on any version.

Idempotent: the fingerprint digests every published label (question id, prompt, split,
criterion, preference) with its sample's content hash; importing the same files again finds the
ready version with that fingerprint and creates nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation.importing.errors import ImportRejected, Problem
from annotation.importing.service import ImportReport, samples_import
from annotation.models import Project, Slot, Vote
from core.text import counted

from ..export.build import LABELS_PUBLISHED, published_labels
from ..models import DatasetVersion
from .versions import version_build

Progress = Callable[..., None]

DESCRIPTION = (
    "The preferences of the published Multi-Crit release, imported as they are: one label per "
    "(prompt, criterion) row; no votes were cast or aggregated and no annotator worked on them."
)


@dataclass
class BenchmarkResult:
    """What one benchmark import did: the sample import, and the version (new or found)."""

    report: ImportReport
    version: DatasetVersion
    created: bool

    def summary(self) -> str:
        state = "created" if self.created else "already there, unchanged"
        return (
            f"{self.report.summary()}. Version {self.version.number} ({state}): "
            f"{counted(self.version.row_count, 'row')} with the published labels."
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.report.as_dict(),
            "version": self.version.number,
            "version_id": self.version.pk,
            "version_created": self.created,
            "rows": self.version.row_count,
            "summary": self.summary(),
        }


def labels_fingerprint(*, project: Project) -> tuple[str, int]:
    """SHA-256 over the project's published labels and their samples' content; the count."""
    digest = hashlib.sha256()
    n = 0
    values = published_labels(project=project).values_list(
        "sample__split",
        "sample__external_id",
        "criterion__key",
        "preference",
        "sample__content_hash",
        "sample__metadata__question_ids",
    )
    for split, prompt, criterion, preference, content, qids in values.iterator(chunk_size=2000):
        qid = (qids or {}).get(criterion, "") if isinstance(qids, dict) else ""
        digest.update(f"{split}\t{prompt}\t{criterion}\t{qid}\t{preference}\t{content}\n".encode())
        n += 1
    return digest.hexdigest(), n


def _check_project(slug: str) -> None:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        return
    if (
        Slot.objects.filter(sample__project=project).exists()
        or Vote.objects.filter(sample__project=project).exists()
    ):
        raise ImportRejected(
            [
                Problem(
                    None,
                    "project",
                    f"project {slug!r} has annotation slots or votes; import the published "
                    "benchmark into a project of its own",
                )
            ]
        )


def benchmark_import(
    *,
    project: Project | str,
    paths: Sequence[str | Path],
    by: Any = None,
    images: str | Path | None = None,
    project_name: str | None = None,
    file_names: Sequence[str] | None = None,
    job: Any = None,
    progress: Progress | None = None,
) -> BenchmarkResult:
    """Import published rows and return the ready version of their labels (new or found).

    Raises ImportRejected (every problem with its file, row and field) before anything is
    written when a file is invalid or the project already holds annotation work.
    """
    slug = project if isinstance(project, str) else project.slug
    _check_project(slug)
    report = samples_import(
        project=project,
        path=list(paths),
        images=images,
        slots=False,
        progress=progress,
        project_name=project_name,
    )
    if not report.format.startswith("multicrit"):
        raise ImportRejected(
            [Problem(None, "file", "the published benchmark comes as Multi-Crit rows")]
        )
    project = Project.objects.get(slug=slug)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        fingerprint, n_labels = labels_fingerprint(project=project)
        if n_labels == 0:
            raise ImportRejected([Problem(None, "file", "no model_a/model_b preference to use")])
        found = (
            DatasetVersion.objects.filter(
                project=project,
                status=DatasetVersion.Status.READY,
                manifest__labels__fingerprint=fingerprint,
            )
            .order_by("-number")
            .first()
        )
        if found is not None:
            return BenchmarkResult(report=report, version=found, created=False)
        names = list(file_names or [Path(p).name for p in paths])
        provenance = {
            "provenance": LABELS_PUBLISHED,
            "description": DESCRIPTION,
            "source_files": names,
            "fingerprint": fingerprint,
            "labels": n_labels,
            "votes": 0,
            "annotator_slots": 0,
        }
        version = version_build(
            project=project,
            by=by,
            include_seeds=True,
            job=job,
            progress=progress,
            labels_from=LABELS_PUBLISHED,
            provenance=provenance,
        )
    return BenchmarkResult(report=report, version=version, created=True)


def benchmark_upload_enqueue(*, project: Project, files: Sequence[Any], by: Any, images: str = ""):
    """Keep the uploaded files and queue the job that imports them as the benchmark version."""
    from annotation.importing.uploads import uploads_keep
    from core.jobs import job_create, job_enqueue
    from core.models import Job

    from ..tasks import benchmark_import_task

    # One random folder per file: unguessable, and same-named shards cannot collide.
    kept = uploads_keep(project=project, uploads=files, default="rows.parquet")
    names = [name for name, _ in kept]
    paths = [path for _, path in kept]
    with transaction.atomic():
        job = job_create(
            kind=Job.Kind.IMPORT,
            project=project,
            created_by=by,
            params={
                "benchmark": True,
                "paths": paths,
                "filenames": names,
                "filename": ", ".join(names),
                "images": images or "",
            },
            message=f"Queued: published benchmark from {', '.join(names)}",
        )
        job_enqueue(job, benchmark_import_task)
    return job
