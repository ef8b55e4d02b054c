"""Where an import reads from: a JSONL or Parquet file on disk, or a zip holding one plus images.

Images are referenced by paths relative to an images root, when one is given (``--images DIR``,
or a folder inside a zip), then relative to the data file's folder; a missing image names every
path tried. A path that is absolute or climbs out with ``..`` is refused, and so is any zip entry
named that way (zip slip), before anything is read.
"""

from __future__ import annotations

import abc
import posixpath
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from .errors import ImportRejected, Problem
from .limits import (
    IMAGE_MAX_BYTES,
    ZIP_MAX_DATA_BYTES,
    JsonInputError,
    bounded_lines,
    json_loads,
    size_text,
)
from .zipguard import ZipMemberError, member_open, member_read, zip_limit_problems

DATA_SUFFIXES = (".jsonl", ".ndjson", ".parquet")
# A single image file larger than this is refused before it is read into memory.
MAX_IMAGE_BYTES = IMAGE_MAX_BYTES
_DRIVE = re.compile(r"^[A-Za-z]:")


class ImageRefError(ValueError):
    """The referenced image cannot be read; the message says why."""


def unsafe_path(name: str) -> str | None:
    """Why ``name`` may not be used as a relative path (None when it is fine)."""
    if not name or not name.strip():
        return "empty path"
    normal = name.replace("\\", "/")
    if normal.startswith("/") or _DRIVE.match(normal):
        return "absolute paths are not allowed"
    if ".." in normal.split("/"):
        return "paths with '..' are not allowed"
    return None


class ImportSource(abc.ABC):
    """A data file (re-openable for the two passes) and the images beside it."""

    kind: str  # "jsonl" | "parquet"
    name: str

    @abc.abstractmethod
    def open_data(self) -> IO[bytes]:
        """Open the data file from its start."""

    @abc.abstractmethod
    def _read(self, relative: str) -> bytes:
        """The bytes of an image named relative to the data file."""

    def read_image(self, ref: str) -> bytes:
        reason = unsafe_path(ref)
        if reason:
            raise ImageRefError(f"{reason}: {ref!r}")
        return self._read(ref.replace("\\", "/"))


class FileSource(ImportSource):
    def __init__(self, path: Path, images_root: str | Path | None = None) -> None:
        self.path = path
        self.name = path.name
        self.kind = "parquet" if path.suffix.lower() == ".parquet" else "jsonl"
        self.base = path.resolve().parent
        # (folder, how a message names a path in it): the images root as given, then the
        # data file's folder by the file's name (no server paths in messages).
        self.roots: list[tuple[Path, str]] = []
        if images_root:
            self.roots.append((Path(images_root).resolve(), str(Path(images_root)) + "/{}"))
        if not self.roots or self.roots[0][0] != self.base:
            self.roots.append((self.base, "{} beside " + self.name))

    def open_data(self) -> IO[bytes]:
        return open(self.path, "rb")

    def _read(self, relative: str) -> bytes:
        tried = []
        for root, shown in self.roots:
            target = (root / relative).resolve()
            if not target.is_relative_to(root):
                raise ImageRefError(f"path leaves the images folder: {relative!r}")
            if target.is_file():
                if target.stat().st_size > MAX_IMAGE_BYTES:
                    raise ImageRefError(f"image file larger than {size_text(MAX_IMAGE_BYTES)}")
                return target.read_bytes()
            tried.append(shown.format(relative))
        raise ImageRefError(f"image file not found: {relative!r} (tried {', '.join(tried)})")


class ZipSource(ImportSource):
    def __init__(
        self, archive: zipfile.ZipFile, data_name: str, images_root: str | None = None
    ) -> None:
        self.archive = archive
        self.data_name = data_name
        self.name = posixpath.basename(data_name)
        self.kind = "parquet" if data_name.lower().endswith(".parquet") else "jsonl"
        self.base = posixpath.dirname(data_name)
        self.entries = {info.filename: info for info in archive.infolist() if not info.is_dir()}
        root = (images_root or "").replace("\\", "/").strip("/")
        self.roots = [root] if root else []
        if self.base not in self.roots:
            self.roots.append(self.base)

    def open_data(self) -> IO[bytes]:
        return member_open(self.archive, self.data_name, ZIP_MAX_DATA_BYTES)

    def _read(self, relative: str) -> bytes:
        tried = []
        for root in self.roots:
            name = posixpath.normpath(posixpath.join(root, relative)) if root else relative
            info = self.entries.get(name)
            if info is not None:
                if info.file_size > MAX_IMAGE_BYTES:
                    raise ImageRefError(f"image file larger than {size_text(MAX_IMAGE_BYTES)}")
                try:
                    return member_read(self.archive, info, MAX_IMAGE_BYTES)
                except ZipMemberError as exc:
                    raise ImageRefError(str(exc)) from None
            tried.append(name)
        raise ImageRefError(f"image not found in the zip: {relative!r} (tried {', '.join(tried)})")


def zip_problems(archive: zipfile.ZipFile) -> list[Problem]:
    """Every entry whose name is absolute or contains ``..`` (refused before any read)."""
    problems = []
    for info in archive.infolist():
        reason = unsafe_path(info.filename)
        if reason:
            problems.append(Problem(None, "zip entry", f"{reason}: {info.filename!r}"))
    return problems


def _zip_data_name(archive: zipfile.ZipFile) -> str:
    candidates = [
        info.filename
        for info in archive.infolist()
        if not info.is_dir()
        and info.filename.lower().endswith(DATA_SUFFIXES)
        and not info.filename.startswith("__MACOSX/")
    ]
    if len(candidates) != 1:
        found = ", ".join(candidates) if candidates else "none"
        raise ImportRejected(
            [
                Problem(
                    None,
                    "zip",
                    f"the zip must hold exactly one .jsonl or .parquet data file (found: {found})",
                )
            ]
        )
    return candidates[0]


@contextmanager
def source_open(path: str | Path, *, images: str | Path | None = None) -> Iterator[ImportSource]:
    """Open ``path`` (.jsonl/.ndjson/.parquet or .zip) as an import source.

    ``images`` is the images root: a directory for a data file, a folder inside the zip for a
    zip (image paths are tried against it first, then against the data file's folder).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise ImportRejected([Problem(None, "file", f"no such file: {path.name}")])
    if suffix == ".zip":
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise ImportRejected([Problem(None, "file", f"not a valid zip file ({exc})")]) from exc
        with archive:
            problems = zip_problems(archive)
            if images:
                reason = unsafe_path(str(images))
                if reason:
                    problems.append(Problem(None, "images", f"{reason}: {str(images)!r}"))
                else:
                    folder = str(images).replace("\\", "/").strip("/") + "/"
                    if not any(n.startswith(folder) for n in archive.namelist()):
                        problems.append(
                            Problem(None, "images", f"the zip has no folder {folder!r}")
                        )
            if problems:
                raise ImportRejected(problems)
            data_name = _zip_data_name(archive)
            problems = zip_limit_problems(archive, data_name)
            if problems:
                raise ImportRejected(problems)
            yield ZipSource(archive, data_name, str(images) if images else None)
        return
    if suffix not in DATA_SUFFIXES:
        raise ImportRejected(
            [Problem(None, "file", "expected a .jsonl, .parquet or .zip file, got " + path.name)]
        )
    if images and not Path(images).is_dir():
        raise ImportRejected([Problem(None, "images", f"no such directory: {images}")])
    yield FileSource(path, images)


def jsonl_looks_like_rows(source: ImportSource) -> bool:
    """True when the first JSON object of a JSONL file is a Multi-Crit row (one per criterion)."""
    with source.open_data() as handle:
        for _, raw in bounded_lines(handle):
            if raw is None:
                return False
            if not raw.strip():
                continue
            try:
                obj = json_loads(raw)
            except JsonInputError:
                return False
            return isinstance(obj, dict) and "prompt_id" in obj and "criterion" in obj
    return False
