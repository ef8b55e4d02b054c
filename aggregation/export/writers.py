"""Deterministic, streaming writers: JSONL, zip (JSONL + images) and Parquet with images.

Building twice from the same rows gives byte-identical files: keys are sorted, rows keep their
order, zip entries carry a fixed timestamp and fixed attributes, and no file holds a creation
time or the version number. Each writer takes rows in chunks, so memory stays at one chunk.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import IO, Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from annotation.pseudonyms import SCALE_VOTE_FIELDS
from core.background import OneAhead

from .rows import ROW_FIELDS, VOTES_FIELD

COPY_CHUNK = 1024 * 1024
# The earliest time a zip entry can hold (DOS epoch): the same for every build.
ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)
ZIP_FILE_MODE = 0o644 << 16
JSONL_ENTRY = "rows.jsonl"
JSONL_DEFLATE_LEVEL = 1


def jsonl_line(row: dict[str, Any]) -> bytes:
    """One row as compact JSON with sorted keys, UTF-8, and a newline (orjson: ~10x json)."""
    return orjson.dumps(row, option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)


_JSON_OPTIONS = orjson.OPT_SORT_KEYS


class SampleLines:
    """:func:`jsonl_line` of row after row, the values a row takes from its sample serialised
    once per sample (the same bytes: compact JSON is its values' JSON between fixed key parts).

    ``shared`` names the keys whose values are the same for every row of one sample; ``line``
    is told the row's sample (any object, compared by identity) and re-serialises them when it
    changes. Keys must be ASCII (orjson sorts keys by their bytes, ``sorted`` by code points).
    """

    def __init__(self, shared: Iterable[str]) -> None:
        self._shared = frozenset(shared)
        self._sample: object = None
        self._keys: tuple[str, ...] | None = None
        self._parts: list[bytes] = []
        self._slots: list[tuple[int, str]] = []

    def _template(self, row: dict[str, Any], keys: tuple[str, ...]) -> None:
        """The row's static parts (keys, separators, shared values) and its own values' slots."""
        parts: list[bytes] = []
        slots: list[tuple[int, str]] = []
        static = b""
        for n, key in enumerate(sorted(keys)):
            static += (b"," if n else b"{") + orjson.dumps(key) + b":"
            if key in self._shared:
                static += orjson.dumps(row[key], option=_JSON_OPTIONS)
            else:
                parts.append(static)
                slots.append((len(parts), key))
                parts.append(b"")
                static = b""
        parts.append(static + (b"}\n" if keys else b"{}\n"))
        self._parts, self._slots = parts, slots

    def line(self, row: dict[str, Any], sample: object) -> bytes:
        """``jsonl_line(row)``; ``sample`` is the same object for every row of one sample."""
        keys = tuple(row)
        if sample is not self._sample or keys != self._keys:
            self._template(row, keys)
            self._sample, self._keys = sample, keys
        parts = self._parts.copy()
        for index, key in self._slots:
            parts[index] = orjson.dumps(row[key], option=_JSON_OPTIONS)
        return b"".join(parts)


def file_digest(path: Path) -> tuple[str, int]:
    """SHA-256 (hex) and size of a file, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(COPY_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


class JsonlWriter:
    """One JSON object a line, UTF-8, keys sorted."""

    def __init__(self, path: Path) -> None:
        self._fh = open(path, "wb")  # noqa: SIM115 - closed in close()

    def write(self, rows: Iterable[dict[str, Any]]) -> None:
        self._fh.writelines(jsonl_line(row) for row in rows)

    def write_lines(self, lines: Iterable[bytes]) -> None:
        """Write lines made by :func:`jsonl_line`."""
        self._fh.writelines(lines)

    def close(self) -> None:
        self._fh.close()


def _string_field(name: str) -> dict[str, str]:
    return {"dtype": "string", "_type": "Value"}


def _int_field() -> dict[str, str]:
    return {"dtype": "int64", "_type": "Value"}


def _feature(kind: pa.DataType) -> Any:
    """The ``datasets`` feature of an integer, float, list or struct Arrow type."""
    if pa.types.is_list(kind):
        return {"feature": _feature(kind.value_type), "_type": "List"}
    if pa.types.is_struct(kind):
        return {kind.field(i).name: _feature(kind.field(i).type) for i in range(kind.num_fields)}
    return {"dtype": "float64" if pa.types.is_floating(kind) else "int64", "_type": "Value"}


def _levels(levels: tuple[str, ...]) -> pa.DataType:
    return pa.struct([(level, pa.int64()) for level in levels])


#: Parquet types of the columns a graded or pointwise project adds (rows.SCALE_FIELDS).
_GRADES = ("2", "1", "0", "-1", "-2")
_SCORES = ("1", "2", "3", "4", "5")
SCALE_TYPES: dict[str, dict[str, pa.DataType]] = {
    "graded": {
        "grades": pa.list_(pa.int64()),
        "median_grade": pa.float64(),
        "soft_label": _levels(_GRADES),
    },
    "pointwise": {
        "scores_a": pa.list_(pa.int64()),
        "scores_b": pa.list_(pa.int64()),
        "mean_score_a": pa.float64(),
        "mean_score_b": pa.float64(),
        "soft_label": pa.struct([("a", _levels(_SCORES)), ("b", _levels(_SCORES))]),
    },
}


def parquet_schema(*, include_votes: bool, scale: str = "pairwise") -> pa.Schema:
    """The Parquet schema, with the Hugging Face ``datasets`` features in its metadata.

    ``image`` is the ``datasets.Image`` layout (a struct of ``bytes`` and ``path``), so
    ``load_dataset("parquet", ...)`` decodes it to a PIL image; pandas reads it as a dict.
    """
    fields: list[pa.Field] = []
    features: dict[str, Any] = {}
    for name in ROW_FIELDS:
        if name == "image_path":
            fields.append(
                pa.field("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
            )
            features["image"] = {"_type": "Image"}
        fields.append(pa.field(name, pa.string()))
        features[name] = _string_field(name)
    for name, kind in SCALE_TYPES.get(scale, {}).items():
        fields.append(pa.field(name, kind))
        features[name] = _feature(kind)
    if include_votes:
        extra = SCALE_VOTE_FIELDS.get(scale, ())
        vote = pa.struct(
            [
                ("annotator", pa.string()),
                ("choice", pa.string()),
                ("rationale", pa.string()),
                ("unsure", pa.bool_()),
                *((name, pa.int64()) for name in extra),
            ]
        )
        fields.append(pa.field(VOTES_FIELD, pa.list_(vote)))
        feature = {k: _string_field(k) for k in ("annotator", "choice", "rationale")}
        feature["unsure"] = {"dtype": "bool", "_type": "Value"}
        feature.update({name: _int_field() for name in extra})
        features[VOTES_FIELD] = {"feature": feature, "_type": "List"}
    metadata = {"huggingface": json.dumps({"info": {"features": features}}, sort_keys=True)}
    return pa.schema(fields, metadata=metadata)


#: The long texts a sample's criteria rows share (the same objects, row after row).
_SAMPLE_TEXTS = ("question", "pred_a", "pred_b")


_row_values = itemgetter(*ROW_FIELDS)


def _repeated(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """A column whose consecutive rows often hold the same object, each converted once."""
    unique: list[Any] = []
    index: list[int] = []
    last: Any = object()
    for value in values:
        if value is not last:
            unique.append(value)
            last = value
        index.append(len(unique) - 1)
    return pa.array(unique, type=kind).take(pa.array(index, type=pa.int32()))


class ParquetRowWriter:
    """Writes each chunk of rows as one row group, images embedded as bytes.

    ``read_image(name)`` is called for every row with an image: the criterion rows of one
    prompt share its image, so give a function that caches (the build reads each image once).
    """

    def __init__(
        self,
        path: Path,
        *,
        include_votes: bool,
        read_image: Callable[[str], bytes],
        scale: str = "pairwise",
    ) -> None:
        self.schema = parquet_schema(include_votes=include_votes, scale=scale)
        self._scale_fields = tuple(SCALE_TYPES.get(scale, {}))
        self._include_votes = include_votes
        self._read_image = read_image
        self._writer = pq.ParquetWriter(
            str(path), self.schema, compression="snappy", write_statistics=False
        )

    def write(self, rows: list[dict[str, Any]], image_names: list[str]) -> None:
        """``image_names[i]`` is the storage name of row i's image ("" when it has none)."""
        if not rows:
            return
        # Column by column (the same values from_pydict would take, without a dict per row):
        # the fields every row has are taken in one call a row.
        columns = dict(zip(ROW_FIELDS, zip(*map(_row_values, rows), strict=True), strict=True))
        arrays = []
        for field in self.schema:
            if field.name == "image":
                arrays.append(self._images(columns["image_path"], image_names, field.type))
            elif field.name == VOTES_FIELD:
                votes = [row.get(VOTES_FIELD) or [] for row in rows]
                arrays.append(pa.array(votes, type=field.type))
            elif field.name in _SAMPLE_TEXTS:
                arrays.append(_repeated(columns[field.name], field.type))
            elif field.name in columns:
                arrays.append(pa.array(columns[field.name], type=field.type))
            else:
                arrays.append(pa.array([row.get(field.name) for row in rows], type=field.type))
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))

    def _images(
        self, image_paths: Sequence[str | None], image_names: list[str], kind: pa.DataType
    ) -> pa.Array:
        """The image structs: the bytes (read_image caches: a prompt's rows share its image)."""
        read = self._read_image
        data = [read(name) if name else None for name in image_names]
        paths = [
            path if name else None for path, name in zip(image_paths, image_names, strict=True)
        ]
        return pa.StructArray.from_arrays(
            [pa.array(data, type=pa.binary()), pa.array(paths, type=pa.string())],
            fields=list(kind),
            mask=pa.array([not name for name in image_names], type=pa.bool_()),
        )

    def close(self) -> None:
        self._writer.close()


def _zip_info(name: str, *, compress: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE_TIME)
    info.compress_type = compress
    info.external_attr = ZIP_FILE_MODE
    info.create_system = 3  # Unix, whatever the building machine is
    return info


def _safe_entry(relpath: str) -> str:
    if relpath.startswith("/") or ".." in relpath.split("/"):
        raise ValueError(f"unsafe image path {relpath!r}")
    return relpath


class _Deflater:
    """``rows.jsonl`` deflated chunk after chunk by one background thread into a spool file.

    zlib works without the interpreter lock, so the build goes on meanwhile. Deflate gives the
    same bytes however its input is split, so the entry equals deflating the whole file.
    """

    def __init__(self) -> None:
        self._spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the zip writer
        self._compressor = zlib.compressobj(JSONL_DEFLATE_LEVEL, zlib.DEFLATED, -15)
        self._worker = OneAhead("jsonl-deflate")
        self.crc = self.size = 0

    def _deflate(self, data: bytes) -> None:
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        self._spool.write(self._compressor.compress(data))

    def feed(self, data: bytes) -> None:
        self._worker.submit(self._deflate, data)  # one chunk at a time: memory stays at a chunk

    def finish(self) -> IO[bytes]:
        """Wait for the last chunk; the deflated bytes, from their start."""
        self.close()
        self._spool.write(self._compressor.flush())
        self._spool.seek(0)
        return self._spool

    def close(self) -> None:
        self._worker.close()

    def discard(self) -> None:
        try:
            self.close()
        finally:
            self._spool.close()


class ZipWriter:
    """The version's zip, written in one pass: each image as its prompt's rows stream by (the
    bytes the Parquet writer already read), then ``rows.jsonl``, deflated meanwhile.

    Images are stored uncompressed (they already are compressed); the JSONL is deflated at
    level 1 (a fifth of the time of the default level for a few percent more bytes), chunk by
    chunk as the rows come (:meth:`add_rows`), in the background. What stays in memory is the
    central directory (a few hundred bytes per entry). Each entry is the bytes
    ``ZipFile.open(info, "w", force_zip64=True)`` writes, without its seek back to rewrite the
    header once the CRC and sizes are known (which flushes the file every time): they are known
    before the header is written.
    """

    def __init__(self, path: Path) -> None:
        self._zf = zipfile.ZipFile(path, "w", allowZip64=True)
        self._end: int | None = None  # where the last entry written here ends
        self._rows: _Deflater | None = None
        self.images = 0

    def _entry(self, info: zipfile.ZipInfo, data: bytes | IO[bytes]) -> None:
        """Write an entry whose ``file_size``, ``compress_size`` and ``CRC`` are set."""
        zf = self._zf
        if zf._writing:
            raise ValueError("another entry of the zip is being written")
        # The file's position is known after an entry of ours: no tell() (a system call) then.
        if self._end != zf.start_dir and zf.fp.tell() != zf.start_dir:
            zf.fp.seek(zf.start_dir)
        info.header_offset = zf.start_dir
        zf._writecheck(info)  # what ZipFile.open checks (and warns of) before an entry
        if isinstance(data, bytes):
            written = zf.fp.write(info.FileHeader(True) + data)
            zf.start_dir += written
        else:
            zf.fp.write(info.FileHeader(True))
            shutil.copyfileobj(data, zf.fp, COPY_CHUNK)
            zf.start_dir = zf.fp.tell()
        self._end = zf.start_dir
        zf._didModify = True
        zf.filelist.append(info)
        zf.NameToInfo[info.filename] = info

    def add_image(self, relpath: str, data: bytes) -> None:
        info = _zip_info(_safe_entry(relpath), compress=zipfile.ZIP_STORED)
        info.file_size = info.compress_size = len(data)
        info.CRC = zlib.crc32(data)
        self._entry(info, data)
        self.images += 1

    def add_rows(self, data: bytes) -> None:
        """The next bytes of ``rows.jsonl`` (deflated in the background; see add_jsonl)."""
        if self._rows is None:
            self._rows = _Deflater()
        self._rows.feed(data)

    def add_jsonl(self) -> None:
        """Add ``rows.jsonl``: every add_rows so far, deflated."""
        rows, self._rows = self._rows or _Deflater(), None
        with rows.finish() as deflated:
            info = _zip_info(JSONL_ENTRY, compress=zipfile.ZIP_DEFLATED)
            info.file_size, info.CRC = rows.size, rows.crc
            info.compress_size = deflated.seek(0, 2)
            deflated.seek(0)
            self._entry(info, deflated)

    def close(self) -> None:
        try:
            if self._rows is not None:  # abandoned mid-build: stop the deflate thread
                self._rows.discard()
        finally:
            self._zf.close()
