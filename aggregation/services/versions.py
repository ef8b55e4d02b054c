"""Building dataset versions: numbered per project, frozen once ready.

A version is built in three steps. The number is reserved (under a row lock on the project and
the unique (project, number) constraint) and a ``building`` record committed, so the lead sees it
in the list. The files are then written to a temporary directory from one consistent read of the
labels, and in a single transaction the rows are frozen, the files stored and the status set to
``ready``. Any error rolls that transaction back, removes stored files and marks the version
``failed``: a failed version has no rows and no files, and the API only ever shows ready ones.
Its note and its job's card say why in words, never with a server path: a media folder that
refuses the files is :class:`core.media.MediaUnwritable`, any other file error is restated.
A worker killed mid-build leaves the version ``building``: the job's next attempt rebuilds it
under the same number, and a job abandoned for good (cancelled, out of attempts) fails it, so a
number is never a silent gap.

Immutability: nothing here (or anywhere) changes a ready version; the ready flip is a conditional
update of a ``building`` record, and on PostgreSQL triggers refuse any change to a ready version's
rows, files or manifest.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from operator import itemgetter
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.files import File
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from annotation.models import Criterion, LabelScale, Project
from annotation.pseudonyms import Pseudonyms
from annotation.services.criteria import criteria_history
from core.db import JsonText, RowsInserter
from core.media import MediaUnwritable

from ..export.build import LABELS_PUBLISHED, LABELS_VOTES, BuildResult, export_build
from ..export.contested import CONTESTED_FILE, ContestedResult, contested_build
from ..export.manifest import (
    AGGREGATION_RULE,
    MANIFEST_NAME,
    agreement_pseudonymised,
    manifest_build,
    manifest_bytes,
)
from ..export.rows import ROW_FIELDS, SCALE_FIELDS, VOTES_FIELD
from ..export.writers import file_digest
from ..models import (
    AgreementSnapshot,
    CriterionLabel,
    DatasetFile,
    DatasetRow,
    DatasetVersion,
    Outcome,
    version_file_path,
)
from .aggregate import policy_settings

logger = logging.getLogger(__name__)

ProgressFn = Callable[..., None]


class VersionImmutable(Exception):
    """Raised on an attempt to change a version that is no longer building."""


def _build_failure(exc: BaseException) -> BaseException:
    """The error a failed build reports on its card: a file error restated without its path.

    It keeps its type (a missing image stays a FileNotFoundError); the original, with the
    server path, is chained to it for the log.
    """
    if not isinstance(exc, OSError):
        return exc
    reason = exc.strerror or exc.__class__.__name__
    message = f"a file could not be read or written ({reason}); the server's log names it"
    try:
        return type(exc)(message)
    except TypeError:
        return OSError(message)


def _number_reserve(
    *, project: Project, by: Any, include_votes: bool, include_seeds: bool, job: Any
) -> DatasetVersion:
    for _attempt in range(5):
        try:
            with transaction.atomic():
                Project.objects.select_for_update().filter(pk=project.pk).first()
                last = DatasetVersion.objects.filter(project=project).aggregate(n=Max("number"))
                return DatasetVersion.objects.create(
                    project=project,
                    number=(last["n"] or 0) + 1,
                    status=DatasetVersion.Status.BUILDING,
                    include_votes=include_votes,
                    include_seeds=include_seeds,
                    job=job,
                    created_by=by if getattr(by, "is_authenticated", False) else None,
                )
        except IntegrityError:
            # A concurrent build took the number (SQLite has no row lock): take the next one.
            continue
    raise RuntimeError("could not reserve a version number after 5 attempts")


def _version_folder(version: DatasetVersion) -> str:
    return version_file_path(DatasetFile(version=version), "x").rsplit("/", 1)[0]


def _stray_files_remove(version: DatasetVersion) -> None:
    """Remove files a dead attempt stored for a version whose records it never committed."""
    storage = _file_storage()
    folder = _version_folder(version)
    kept = set(DatasetFile.objects.filter(version=version).values_list("file", flat=True))
    try:
        names = storage.listdir(folder)[1] if storage.exists(folder) else []
    except (OSError, NotImplementedError):
        # A storage that cannot list folders raises NotImplementedError (Django's Storage
        # contract); its stray files are then left, as a failed write would leave them.
        return
    for name in names:
        path = f"{folder}/{name}"
        if path not in kept:
            storage.delete(path)


def _stale_build(job: Any) -> DatasetVersion | None:
    """The version a dead attempt of ``job`` left building, to rebuild under the same number.

    A job runs one attempt at a time (its lease), so a building version of the job is a dead
    attempt's: its rows and file records were rolled back with it; its stored files are removed.
    """
    if job is None or getattr(job, "pk", None) is None:
        return None
    version = DatasetVersion.objects.filter(
        job_id=job.pk, status=DatasetVersion.Status.BUILDING
    ).first()
    if version is not None:
        logger.warning("rebuilding version %s left building by a dead attempt", version.number)
        _stray_files_remove(version)
    return version


def version_build_abandoned(job: Any) -> int:
    """Fail the versions an abandoned job left building (its error in their note); how many."""
    failed = 0
    for version in DatasetVersion.objects.filter(
        job_id=job.pk, status=DatasetVersion.Status.BUILDING
    ):
        reason = job.error or job.message or "the job was stopped"
        failed += DatasetVersion.objects.filter(
            pk=version.pk, status=DatasetVersion.Status.BUILDING
        ).update(status=DatasetVersion.Status.FAILED, note=f"Build failed: {reason}"[:2000])
        _stray_files_remove(version)
    return failed


def _consistent_read(*, outermost: bool) -> None:
    # Every query of the build sees the same snapshot, so labels, votes and review decisions
    # written while it runs never mix into it. Only the outermost transaction can set it.
    if outermost and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def _agreement(project: Project, pseudonyms: Pseudonyms) -> dict[str, Any]:
    """The project's agreement figures with the version's pseudonyms in place of usernames."""
    snapshots = AgreementSnapshot.objects.filter(project=project).order_by("split")
    figures = {s.split: s.figures for s in snapshots}
    usernames: set[str] = set()
    for split in figures.values():
        usernames.update(split.get("per_annotator") or {})
        usernames.update((split.get("pairwise") or {}).get("annotators") or [])
    ids = dict(
        get_user_model().objects.filter(username__in=usernames).values_list("username", "pk")
    )
    # A username no longer found (renamed since the aggregation) still gets a name of its own;
    # non-members are named in user id order, so the names never follow the usernames.
    for n, user in enumerate(sorted(usernames - set(ids)), start=1):
        ids[user] = -n
    names = {user: pseudonyms.name(ids[user]) for user in sorted(usernames, key=ids.__getitem__)}
    return agreement_pseudonymised(figures, names)


_ROW_COLUMNS = ("question_id", "prompt_id", "split", "criterion", "preference")


def _rows_sink(
    version: DatasetVersion, inserter: RowsInserter
) -> Callable[[list[dict[str, Any]], list[bytes]], None]:
    """Freeze each chunk of rows as DatasetRow records; the JSONL line is the row's JSON."""
    columns = itemgetter(*_ROW_COLUMNS)

    def write_rows(rows: list[dict[str, Any]], lines: list[bytes]) -> None:
        inserter.write(
            [
                (version.pk, *columns(row), JsonText(line[:-1].decode()))
                for row, line in zip(rows, lines, strict=True)
            ]
        )

    return write_rows


def _file_storage() -> Any:
    return DatasetFile._meta.get_field("file").storage


class _BuiltFile(File):
    """A built file a storage may move into place (it is not read again)."""

    def temporary_file_path(self) -> str:
        return str(self.name)


def _store(
    version: DatasetVersion,
    kind: str,
    path: Path,
    stored: list[str],
    digest: tuple[str, int] | None = None,
) -> DatasetFile:
    """Store a built file and its record; ``digest`` (sha256, size) when already computed.

    With a digest the built file is no longer read: a storage on the local disk moves it
    instead of copying it (Django's storage does so for a file with a temporary path).
    """
    sha, size = digest or file_digest(path)
    record = DatasetFile(version=version, kind=kind, size=size, sha256=sha)
    with open(path, "rb") as fh:
        try:
            record.file.save(path.name, _BuiltFile(fh) if digest else File(fh), save=False)
        except OSError as exc:
            logger.error("could not store %s of version %s: %s", kind, version.number, exc)
            raise MediaUnwritable("the version's files") from exc
    stored.append(record.file.name)
    record.save()
    return record


#: The manifest's rule section for a version of published labels (no votes were aggregated).
PUBLISHED_RULE: dict[str, Any] = {
    "name": "published_preferences",
    "kept": {"published": "the preference of the published release's row, as it is"},
    "dropped": {},
    "review": "none: the labels are the published ones",
    "conflict": "a prompt has a conflict when two of its criteria prefer opposite responses",
}


def _labels_by_provenance(project: Project) -> dict[str, dict[str, int]]:
    """Every formal label (kept or not) per provenance: early-stopped ones are never rows."""
    rows = (
        CriterionLabel.objects.filter(sample__project=project, sample__is_seed=False)
        .values("provenance")
        .annotate(labels=Count("pk"), kept=Count("pk", filter=Q(outcome__in=Outcome.kept())))
        .order_by("provenance")
    )
    return {r["provenance"]: {"labels": r["labels"], "kept": r["kept"]} for r in rows}


def _scale_manifest(project: Project, scale: str) -> dict[str, Any]:
    """The label scale of a version, with the rule deriving A/B/tie and pointwise rubrics."""
    out: dict[str, Any] = {"label_scale": scale, "scale_rule": SCALE_RULES[scale]}
    if scale == LabelScale.POINTWISE:
        out["rubrics"] = {
            f"{c.split}/{c.key}": c.rubric
            for c in Criterion.objects.filter(project=project).order_by("split", "order", "key")
        }
    return out


#: How each scale's answer becomes the pairwise choice the aggregation rule reads.
SCALE_RULES = {
    LabelScale.PAIRWISE: "each vote is A, B or tie",
    LabelScale.GRADED: "grades +2 (A much better) .. -2 (B much better); the choice is the "
    "grade's sign: > 0 A, < 0 B, 0 tie. median_grade is the votes' median, soft_label the "
    "votes per grade",
    LabelScale.POINTWISE: "each response scored 1-5 with the criterion's rubric; the choice is "
    "A when score_a > score_b, B when lower, tie when equal. mean_score_a/b are the votes' "
    "means, soft_label the votes per score and response",
}


def _manifest(
    version: DatasetVersion,
    result: BuildResult,
    by: Any,
    provenance: dict[str, Any] | None,
    contested: ContestedResult | None = None,
) -> dict[str, Any]:
    project = version.project
    published = provenance is not None and provenance.get("provenance") == LABELS_PUBLISHED
    files = [
        {"name": result.files[kind].name, "kind": kind, "sha256": sha, "size": size}
        for kind, (sha, size) in result.digests.items()
    ]
    if contested is not None:
        sha, size = file_digest(contested.path)
        files.append(
            {"name": contested.path.name, "kind": DatasetFile.Kind.CONTESTED, "sha256": sha,
             "size": size}
        )  # fmt: skip
    columns = [
        "question_id",
        "prompt_id",
        "split",
        "criterion",
        "question",
        "image",
        *[
            f
            for f in ROW_FIELDS
            if f not in {"question_id", "prompt_id", "split", "criterion", "question"}
        ],
    ]
    scale = LabelScale.PAIRWISE if published else project.label_scale
    columns.extend(SCALE_FIELDS.get(scale, ()))
    if version.include_votes:
        columns.append(VOTES_FIELD)
    counts = result.counts()
    if not published:
        counts["labels_by_provenance"] = _labels_by_provenance(project)
    manifest = manifest_build(
        project={"slug": project.slug, "name": project.name, **_scale_manifest(project, scale)},
        version=version.number,
        created=timezone.now().replace(microsecond=0).isoformat(),
        created_by=getattr(by, "username", None),
        options={
            "include_votes": version.include_votes,
            "include_seeds": version.include_seeds,
            "annotators_per_sample": project.annotators_per_sample,
            "pseudonymised_annotators": result.annotators
            if version.include_votes or contested is not None
            else None,
            "include_contested": contested is not None,
            "policy": None if published else policy_settings(project),
        },
        rule=PUBLISHED_RULE if published else AGGREGATION_RULE,
        counts={
            **counts,
            **({"contested": contested.counts()} if contested is not None else {}),
        },
        agreement={} if published else _agreement(project, result.pseudonyms),
        files=files,
        columns=columns,
        criteria_history=criteria_history(project=project),
    )
    if provenance is not None:
        manifest["labels"] = provenance
    return manifest


def version_build(
    *,
    project: Project,
    by: Any,
    include_votes: bool = False,
    include_seeds: bool | None = None,
    job: Any = None,
    progress: ProgressFn | None = None,
    labels_from: str = LABELS_VOTES,
    provenance: dict[str, Any] | None = None,
    include_contested: bool = False,
) -> DatasetVersion:
    """Build and freeze a new version of the project's exportable labels; return it ready.

    ``include_seeds`` defaults to the project's setting. ``labels_from="published"`` freezes
    the published preferences instead (services.benchmark); ``provenance`` becomes the
    manifest's ``labels`` section, saying where the labels came from. ``include_contested``
    adds the contested split (every dropped label with its votes, ``export.contested``) as a
    file of its own, recorded in the manifest. On error the version is
    marked failed (with the error in its note, no rows, no files) and the error re-raised.
    """
    if include_seeds is None:
        include_seeds = project.export_includes_seeds
    version = _stale_build(job) or _number_reserve(
        project=project, by=by, include_votes=include_votes, include_seeds=include_seeds, job=job
    )
    stored: list[str] = []
    outermost = not connection.in_atomic_block
    try:
        with tempfile.TemporaryDirectory(prefix="export-") as tmp, transaction.atomic():
            _consistent_read(outermost=outermost)
            # The rows are frozen while the files are written (RowsInserter).
            inserter = RowsInserter(DatasetRow, ("version_id", *_ROW_COLUMNS, "data"))
            try:
                result = export_build(
                    project=project,
                    out_dir=Path(tmp),
                    stem=f"{project.slug}-v{version.number}",
                    include_votes=include_votes,
                    include_seeds=include_seeds,
                    on_rows=_rows_sink(version, inserter),
                    progress=progress,
                    labels_from=labels_from,
                )
            finally:
                inserter.close()
            for kind, path in result.files.items():
                _store(version, kind, path, stored, result.digests[kind])
            contested = None
            if include_contested and labels_from == LABELS_VOTES:
                contested = contested_build(
                    project=project,
                    path=Path(tmp)
                    / CONTESTED_FILE.format(stem=f"{project.slug}-v{version.number}"),
                    include_seeds=include_seeds,
                    pseudonyms=result.pseudonyms,
                )
                _store(version, DatasetFile.Kind.CONTESTED, contested.path, stored)
            manifest = _manifest(version, result, by, provenance, contested)
            manifest_path = Path(tmp) / MANIFEST_NAME
            manifest_path.write_bytes(manifest_bytes(manifest))
            _store(version, DatasetFile.Kind.MANIFEST, manifest_path, stored)
            updated = DatasetVersion.objects.filter(
                pk=version.pk, status=DatasetVersion.Status.BUILDING
            ).update(status=DatasetVersion.Status.READY, manifest=manifest, row_count=result.rows)
            if not updated:
                raise VersionImmutable(f"version {version.number} is no longer building")
    except BaseException as exc:
        for name in stored:
            try:
                _file_storage().delete(name)
            except OSError:
                logger.exception("could not remove %s", name)
        failure = _build_failure(exc)
        DatasetVersion.objects.filter(pk=version.pk, status=DatasetVersion.Status.BUILDING).update(
            status=DatasetVersion.Status.FAILED,
            note=f"Build failed: {failure or failure.__class__.__name__}"[:2000],
        )
        if failure is not exc:
            raise failure from exc
        raise
    version.refresh_from_db()
    return version


def version_build_start(
    *,
    project: Project,
    by: Any,
    include_votes: bool = False,
    include_seeds: bool | None = None,
    include_contested: bool = False,
) -> Any:
    """Create a BUILD_VERSION job and enqueue its task once the transaction commits."""
    from core.jobs import job_create, job_enqueue
    from core.models import Job

    from ..tasks import version_build_task

    with transaction.atomic():
        job = job_create(
            kind=Job.Kind.BUILD_VERSION,
            project=project,
            created_by=by,
            params={
                "include_votes": include_votes,
                "include_seeds": include_seeds,
                "include_contested": include_contested,
            },
            message="Waiting for a worker",
        )
        job_enqueue(job, version_build_task)
    return job
