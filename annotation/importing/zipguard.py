"""Reading a zip upload within bounds: member count, declared sizes, and bytes actually read.

A zip's directory can lie about sizes and its data can be damaged (a bad CRC shows only once a
member is read). The declared sizes are checked before anything is read; while a member is read,
its bytes are counted against the same limits, and every error of the zip module becomes a
problem naming the member instead of a crash.
"""

from __future__ import annotations

import zipfile
import zlib
from typing import IO, Any

from .errors import ImportRejected, Problem
from .limits import (
    ZIP_MAX_DATA_BYTES,
    ZIP_MAX_MEMBERS,
    ZIP_MAX_TOTAL_BYTES,
    size_text,
)

# What reading a damaged, truncated, encrypted or oddly compressed member raises.
ZIP_READ_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    OSError,
    RuntimeError,  # an encrypted member
    NotImplementedError,  # zipfile's answer to a compression method it does not support
    ValueError,
)


class ZipMemberError(ValueError):
    """A member could not be read within the limits; the message names it."""


def zip_limit_problems(archive: zipfile.ZipFile, data_name: str | None = None) -> list[Problem]:
    """Problems with the archive's directory: too many members, declared sizes over the limits."""
    infos = archive.infolist()
    problems = []
    if len(infos) > ZIP_MAX_MEMBERS:
        problems.append(
            Problem(None, "zip", f"{len(infos):,} entries; at most {ZIP_MAX_MEMBERS:,} are allowed")
        )
    total = sum(info.file_size for info in infos)
    if total > ZIP_MAX_TOTAL_BYTES:
        problems.append(
            Problem(
                None,
                "zip",
                f"the entries unpack to {size_text(total)}; "
                f"at most {size_text(ZIP_MAX_TOTAL_BYTES)} is allowed",
            )
        )
    for info in infos:
        if info.flag_bits & 0x1:
            problems.append(
                Problem(None, "zip entry", f"encrypted entries are unsupported: {info.filename!r}")
            )
        if info.filename == data_name and info.file_size > ZIP_MAX_DATA_BYTES:
            problems.append(
                Problem(
                    None,
                    "zip entry",
                    f"{info.filename!r} unpacks to {size_text(info.file_size)}; "
                    f"at most {size_text(ZIP_MAX_DATA_BYTES)} is allowed",
                )
            )
    return problems


def _damaged(name: str, exc: BaseException) -> ImportRejected:
    return ImportRejected(
        [Problem(None, "zip entry", f"{name!r} cannot be read: damaged zip ({exc})")]
    )


class GuardedMember:
    """A zip member opened for reading: counts its bytes, turns read errors into problems."""

    def __init__(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int) -> None:
        self.name = info.filename
        self.max_bytes = min(max_bytes, info.file_size)
        self.read_bytes = 0
        try:
            self._raw = archive.open(info)
        except ZIP_READ_ERRORS as exc:
            raise _damaged(self.name, exc) from None

    def _count(self, data: bytes) -> bytes:
        # The position, not a running sum: the Parquet reader seeks back and forth.
        self.read_bytes = max(self.read_bytes, self._raw.tell())
        if self.read_bytes > self.max_bytes:
            raise ImportRejected(
                [
                    Problem(
                        None,
                        "zip entry",
                        f"{self.name!r} holds more data than its declared "
                        f"{size_text(self.max_bytes)}",
                    )
                ]
            )
        return data

    def read(self, size: int = -1) -> bytes:
        try:
            return self._count(self._raw.read(size))
        except ZIP_READ_ERRORS as exc:
            raise _damaged(self.name, exc) from None

    def readline(self, size: int = -1) -> bytes:
        try:
            return self._count(self._raw.readline(size))
        except ZIP_READ_ERRORS as exc:
            raise _damaged(self.name, exc) from None

    def seek(self, offset: int, whence: int = 0) -> int:
        try:
            return self._raw.seek(offset, whence)
        except ZIP_READ_ERRORS as exc:
            raise _damaged(self.name, exc) from None

    def __iter__(self) -> GuardedMember:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def __enter__(self) -> GuardedMember:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._raw.close()

    def __getattr__(self, name: str) -> Any:
        # tell, seekable, readable, closed, mode ...: what the Parquet reader asks a file for.
        return getattr(self._raw, name)


def member_open(archive: zipfile.ZipFile, name: str, max_bytes: int) -> IO[bytes]:
    """Open the member ``name`` for a bounded, checked read."""
    return GuardedMember(archive, archive.getinfo(name), max_bytes)  # type: ignore[return-value]


def member_read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int) -> bytes:
    """All bytes of a small member (an image), read within ``max_bytes``.

    Raises :class:`ZipMemberError` naming the member when it is damaged or larger.
    """
    try:
        with archive.open(info) as handle:
            data = handle.read(max_bytes + 1)
    except ZIP_READ_ERRORS as exc:
        raise ZipMemberError(f"{info.filename!r} cannot be read: damaged zip ({exc})") from None
    if len(data) > max_bytes:
        raise ZipMemberError(f"{info.filename!r} is larger than {size_text(max_bytes)}")
    return data
