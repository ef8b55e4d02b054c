"""Stored file sets (a dataset version and its files) checked against their recorded checksums.

An app lists its file sets as :class:`FileSet` values; the backup records them in its manifest,
and after a restore :func:`fileset_check` compares, for each set, the manifest's record, the
restored database's record and the bytes of each restored file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from .manifest import stream_digest

OpenFile = Callable[[str], IO[bytes]]


@dataclass(frozen=True)
class StoredFile:
    """A file as its set records it: storage name, kind, SHA-256 (hex) and size."""

    name: str
    kind: str
    sha256: str
    size: int


@dataclass(frozen=True)
class FileSet:
    key: str
    status: str
    files: tuple[StoredFile, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "status": self.status,
            "files": [asdict(f) for f in self.files],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileSet:
        files = tuple(StoredFile(**f) for f in data.get("files", []))
        return cls(key=data["key"], status=data["status"], files=files)


@dataclass(frozen=True)
class FileSetCheck:
    key: str
    status: str
    files: int
    size: int
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.problems


def _record_problems(expected: FileSet, found: FileSet) -> list[str]:
    """Where the restored records differ from the ones the backup listed."""
    problems = []
    if expected.status != found.status:
        problems.append(f"status {found.status}, the backup says {expected.status}")
    before = {f.name: f for f in expected.files}
    after = {f.name: f for f in found.files}
    for name in sorted(before.keys() - after.keys()):
        problems.append(f"{name}: in the backup's records, not in the restored database")
    for name in sorted(after.keys() - before.keys()):
        problems.append(f"{name}: in the restored database, not in the backup's records")
    for name in sorted(before.keys() & after.keys()):
        if before[name] != after[name]:
            problems.append(f"{name}: its record differs from the backup's")
    return problems


def _content_problem(record: StoredFile, open_file: OpenFile) -> str | None:
    try:
        with open_file(record.name) as stream:
            sha256, size = stream_digest(stream)
    except FileNotFoundError:
        return f"{record.name}: missing"
    if size != record.size:
        return f"{record.name}: {size} bytes, recorded {record.size}"
    if sha256 != record.sha256:
        return f"{record.name}: SHA-256 {sha256}, recorded {record.sha256}"
    return None


def fileset_check(
    *, expected: FileSet | None, found: FileSet | None, open_file: OpenFile
) -> FileSetCheck:
    """Compare a set's record in the backup (``expected``) and after the restore (``found``)."""
    if found is None:
        assert expected is not None
        return FileSetCheck(
            key=expected.key,
            status=expected.status,
            files=len(expected.files),
            size=sum(f.size for f in expected.files),
            problems=("in the backup, not in the restored database",),
        )
    problems = (
        _record_problems(expected, found)
        if expected is not None
        else ["not in the backup's manifest"]
    )
    problems += [p for record in found.files if (p := _content_problem(record, open_file))]
    return FileSetCheck(
        key=found.key,
        status=found.status,
        files=len(found.files),
        size=sum(f.size for f in found.files),
        problems=tuple(problems),
    )


def filesets_check(
    *, expected: list[FileSet], found: list[FileSet], open_file: OpenFile
) -> list[FileSetCheck]:
    """One check per set of either list, in the restored database's order, then the missing."""
    before = {s.key: s for s in expected}
    after = {s.key: s for s in found}
    checks = [
        fileset_check(expected=before.get(s.key), found=s, open_file=open_file) for s in found
    ]
    checks += [
        fileset_check(expected=s, found=None, open_file=open_file)
        for s in expected
        if s.key not in after
    ]
    return checks
