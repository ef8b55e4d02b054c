"""The backup's manifest: what the folder holds and the checksums that prove it intact."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

MANIFEST_NAME = "manifest.json"
MEDIA_NAME = "media.tar"
FORMAT = 1
_CHUNK = 1024 * 1024


class BackupRefused(Exception):
    """The backup or the target is not fit to use; nothing was written."""


@dataclass(frozen=True)
class Artifact:
    """One file of the backup folder: its name, SHA-256 (hex) and size in bytes."""

    name: str
    sha256: str
    size: int


def stream_digest(stream: Any) -> tuple[str, int]:
    """SHA-256 (hex) and length of what an open binary stream has left, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(_CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def artifact_of(path: Path) -> Artifact:
    with open(path, "rb") as stream:
        sha256, size = stream_digest(stream)
    return Artifact(name=path.name, sha256=sha256, size=size)


def artifact_problem(directory: Path, expected: Artifact) -> str | None:
    """Why ``directory/expected.name`` is not the file the manifest names, or None."""
    path = directory / expected.name
    if Path(expected.name).name != expected.name or not path.is_file():
        return f"{expected.name}: missing"
    found = artifact_of(path)
    if found.size != expected.size:
        return f"{expected.name}: {found.size} bytes, the manifest says {expected.size}"
    if found.sha256 != expected.sha256:
        return f"{expected.name}: SHA-256 {found.sha256}, the manifest says {expected.sha256}"
    return None


def manifest_artifacts(manifest: dict[str, Any]) -> list[Artifact]:
    """The database and media files a manifest names."""
    try:
        return [
            Artifact(**manifest["database"]["file"]),
            Artifact(**manifest["media"]["file"]),
        ]
    except (KeyError, TypeError) as exc:
        raise BackupRefused(f"{MANIFEST_NAME} does not name its files ({exc})") from None


def manifest_check(directory: Path) -> dict[str, Any]:
    """The manifest of a backup folder whose files all match it; refused otherwise."""
    manifest = manifest_read(directory)
    problems = [p for a in manifest_artifacts(manifest) if (p := artifact_problem(directory, a))]
    if problems:
        raise BackupRefused(
            "the backup does not match its manifest, nothing was restored: " + "; ".join(problems)
        )
    return manifest


def manifest_read(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST_NAME
    if not path.is_file():
        raise BackupRefused(
            f"{directory} has no {MANIFEST_NAME}: not a backup, or an unfinished one"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BackupRefused(f"{MANIFEST_NAME} cannot be read: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupRefused(f"{MANIFEST_NAME} is not a backup manifest of format {FORMAT}")
    return manifest


def manifest_write(directory: Path, manifest: dict[str, Any]) -> Path:
    """Write the manifest (owner-readable only), through a temporary name: it is the last file."""
    path = directory / MANIFEST_NAME
    partial = directory / f".{MANIFEST_NAME}.partial"
    partial.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.chmod(partial, 0o600)
    partial.replace(path)
    return path


def artifact_dict(artifact: Artifact) -> dict[str, Any]:
    return asdict(artifact)
