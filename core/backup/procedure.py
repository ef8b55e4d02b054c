"""Taking a backup into a new folder, and restoring one into an empty database and media folder.

The apps' stored file sets (dataset versions) are given by the caller as ``file_sets``: a name
(the manifest's key) and the function listing them from the configured database.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django

from .manifest import (
    FORMAT,
    MEDIA_NAME,
    BackupRefused,
    artifact_dict,
    artifact_of,
    manifest_artifacts,
    manifest_check,
    manifest_write,
)
from .media import folder_is_empty, media_archive, media_extract, media_problem
from .state import counts_differences, migrations_applied, migrations_unknown, row_counts
from .strategies import DatabaseStrategy, strategy_for
from .verify import FileSet, FileSetCheck, OpenFile, filesets_check

FileSetLister = Callable[[], list[FileSet]]


@dataclass(frozen=True)
class BackupResult:
    directory: Path
    manifest: dict[str, Any]
    seconds: float


@dataclass(frozen=True)
class RestoreResult:
    manifest: dict[str, Any]
    strategy: DatabaseStrategy
    media_files: int
    migrated: bool
    count_differences: list[str]
    checks: list[FileSetCheck]

    @property
    def ok(self) -> bool:
        counts_ok = self.migrated or not self.count_differences
        return counts_ok and all(check.ok for check in self.checks)


def _folder_prepare(out: Path) -> bool:
    """Create the backup folder (owner-only); whether it was created."""
    if not folder_is_empty(out):
        raise BackupRefused(f"{out} is not empty: each backup goes into a new folder")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    return created


def _database_state(
    connection: Any, app_labels: tuple[str, ...], file_sets: dict[str, FileSetLister]
) -> dict[str, Any]:
    return {
        "migrations": migrations_applied(connection),
        "row_counts": row_counts(connection, app_labels),
        "file_sets": {name: [s.as_dict() for s in lister()] for name, lister in file_sets.items()},
    }


def _manifest(
    strategy: DatabaseStrategy, written: list[Path], media_count: int, state: dict[str, Any]
) -> dict[str, Any]:
    database, media = written
    return {
        "format": FORMAT,
        "created_at": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "django": django.get_version(),
        "database": {
            "strategy": strategy.name,
            "description": strategy.description,
            "file": artifact_dict(artifact_of(database)),
        },
        "media": {"file": artifact_dict(artifact_of(media)), "files": media_count},
        **state,
    }


def backup_create(
    *,
    out: Path,
    connection: Any,
    media_root: Path,
    app_labels: tuple[str, ...],
    file_sets: dict[str, FileSetLister],
) -> BackupResult:
    """Dump the database, then archive the media, then write the manifest (the last file).

    The counts and file sets are read in the dump's own snapshot. The media archive comes after
    the dump: stored files are written before the records naming them are committed and never
    rewritten, so every file the dump names is in the archive.
    """
    started = time.monotonic()
    strategy = strategy_for(connection)
    created = _folder_prepare(out)
    written = [out / strategy.dump_name, out / MEDIA_NAME]
    try:
        with strategy.snapshot():
            state = _database_state(connection, app_labels, file_sets)
            strategy.dump(written[0])
        media_count = media_archive(media_root, written[1])
        manifest = _manifest(strategy, written, media_count, state)
        manifest_write(out, manifest)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        if created and folder_is_empty(out):
            out.rmdir()
        raise
    return BackupResult(directory=out, manifest=manifest, seconds=time.monotonic() - started)


def _restore_refusal(
    manifest: dict[str, Any],
    strategy: DatabaseStrategy,
    *,
    archive: Path,
    media_root: Path,
    replace: bool,
) -> str | None:
    """Why this backup cannot go into this target, or None."""
    if manifest["database"].get("strategy") != strategy.name:
        return (
            f"the backup holds a {manifest['database'].get('strategy')} database and the "
            f"configured one is {strategy.name}"
        )
    unknown = migrations_unknown(manifest.get("migrations") or {})
    if unknown:
        return (
            f"the backup was taken by newer code: {len(unknown)} migrations unknown here "
            f"({', '.join(unknown[:3])}...); restore it with that code or newer"
        )
    if not replace and not strategy.is_empty():
        return "the configured database is not empty (--force replaces the backup's tables)"
    if not replace and not folder_is_empty(media_root):
        return f"the media folder {media_root} is not empty (--force writes over it)"
    return media_problem(archive, media_root)


def _file_sets_check(
    manifest: dict[str, Any], file_sets: dict[str, FileSetLister], open_file: OpenFile
) -> list[FileSetCheck]:
    """Each file set of the restored database against the manifest's record and its bytes."""
    listed = manifest.get("file_sets") or {}
    return [
        check
        for name, lister in file_sets.items()
        for check in filesets_check(
            expected=[FileSet.from_dict(s) for s in listed.get(name, [])],
            found=lister(),
            open_file=open_file,
        )
    ]


def backup_restore(
    *,
    source: Path,
    connection: Any,
    media_root: Path,
    replace: bool,
    file_sets: dict[str, FileSetLister],
    open_file: OpenFile,
    migrate: Callable[[], None],
) -> RestoreResult:
    """Check the backup's checksums and the target, restore, migrate, then check every file set.

    Nothing is written before the checksums and the target are found right.
    """
    manifest = manifest_check(source)
    database, media = (source / artifact.name for artifact in manifest_artifacts(manifest))
    strategy = strategy_for(connection)
    refusal = _restore_refusal(
        manifest, strategy, archive=media, media_root=media_root, replace=replace
    )
    if refusal:
        raise BackupRefused(f"{refusal}; nothing was restored")
    strategy.restore(database, replace=replace)
    media_files = media_extract(media, media_root)
    migrate()
    expected_counts: dict[str, int] = manifest.get("row_counts") or {}
    labels = tuple(sorted({label.split(".")[0] for label in expected_counts}))
    return RestoreResult(
        manifest=manifest,
        strategy=strategy,
        media_files=media_files,
        migrated=migrations_applied(connection) != manifest.get("migrations"),
        count_differences=counts_differences(expected_counts, row_counts(connection, labels)),
        checks=_file_sets_check(manifest, file_sets, open_file),
    )
