"""The media folder as one tar archive, and back.

Only regular files go in (no symlinks, devices or empty folders), under their path relative to
MEDIA_ROOT, in sorted order. Extraction uses the ``data`` filter: no absolute paths, no ``..``,
no links, no special files or permission bits, whatever the archive holds.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterator
from pathlib import Path


def media_files(root: Path) -> Iterator[Path]:
    """Every regular file under ``root`` (symlinks not followed), in a stable order."""
    if not root.is_dir():
        return
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                yield path


def media_archive(root: Path, target: Path) -> int:
    """Write every file under ``root`` to the tar archive ``target``; how many files."""
    count = 0
    with tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as archive:
        for path in media_files(root):
            archive.add(path, arcname=path.relative_to(root).as_posix(), recursive=False)
            count += 1
    os.chmod(target, 0o600)
    return count


def media_problem(source: Path, root: Path) -> str | None:
    """Why the archive would not extract safely into ``root`` (checked before writing), or None."""
    try:
        with tarfile.open(source, "r") as archive:
            for member in archive.getmembers():
                if member.isfile():
                    tarfile.data_filter(member, str(root))
    except tarfile.TarError as exc:
        return f"{source.name}: {exc}"
    return None


def media_extract(source: Path, root: Path) -> int:
    """Extract the archive into ``root`` (created if needed); how many files."""
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source, "r") as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        archive.extractall(root, members=members, filter="data")
    return len(members)


def folder_is_empty(root: Path) -> bool:
    """True for a missing folder or one with nothing in it."""
    return not root.exists() or (root.is_dir() and not any(root.iterdir()))
