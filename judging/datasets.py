"""Dataset rows for scoring: the published Multi-Crit row format (JSONL/Parquet) or a version.

A row needs ``prompt_id``, ``split`` (``open_ended`` or ``reasoning``, in any spelling
``annotation.splits.split_key`` accepts: ``openEnded``, ``open-ended``, ...), ``criterion`` and
``preference`` (``model_a`` or ``model_b``); ``question_id`` is optional and defaults to
``<prompt_id>__<criterion>``. Other fields (question, responses, image) are not needed to score and
are not read from Parquet, so the embedded images are never loaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from aggregation.export.rows import question_id_for
from annotation.importing.limits import JsonInputError, bounded_lines, json_loads, line_too_long
from annotation.splits import split_key
from judging.errors import DatasetFileError
from judging.metrics import MODEL_A, MODEL_B, SPLIT_ORDER, ScoreInput

REQUIRED = ("prompt_id", "split", "criterion", "preference")
OPTIONAL = ("question_id",)


def _text(value: Any, *, line: int, field: str) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        raise DatasetFileError("is missing or empty", line=line, field=field)
    if not isinstance(value, str | int):
        kind = type(value).__name__
        raise DatasetFileError(f"must be a string, got {kind}", line=line, field=field)
    return str(value).strip()


def rows_from_records(
    records: Any, *, source: str = "", skipped: list[str] | None = None
) -> ScoreInput:
    """Validate ``(line, mapping)`` pairs and build the arrays; the first bad line raises.

    With a ``skipped`` list, a repeated question id (or prompt and criterion) keeps its first
    row, as the published evaluation does, and each later one is listed there instead.
    """
    columns: dict[str, list[str]] = {k: [] for k in (*OPTIONAL, *REQUIRED)}
    seen_qid: dict[str, int] = {}
    seen_cell: dict[tuple[str, str], int] = {}
    prompt_split: dict[str, str] = {}
    for line, record in records:
        if not isinstance(record, dict):
            raise DatasetFileError("a row must be a JSON object", line=line)
        values = {f: _text(record.get(f), line=line, field=f) for f in REQUIRED}
        values["split"] = split_key(values["split"]) or values["split"]
        if values["split"] not in SPLIT_ORDER:
            raise DatasetFileError(
                f"unknown split {values['split']!r} (expected one of {', '.join(SPLIT_ORDER)})",
                line=line,
                field="split",
            )
        if values["preference"] not in (MODEL_A, MODEL_B):
            raise DatasetFileError(
                f"must be model_a or model_b, got {values['preference']!r}",
                line=line,
                field="preference",
            )
        prompt, criterion = values["prompt_id"], values["criterion"]
        qid_raw = record.get("question_id")
        qid = (
            question_id_for(prompt, criterion)
            if qid_raw is None or qid_raw == ""
            else _text(qid_raw, line=line, field="question_id")
        )
        if skipped is not None and (qid in seen_qid or (prompt, criterion) in seen_cell):
            first = seen_qid.get(qid) or seen_cell[prompt, criterion]
            skipped.append(f"line {line}: row {qid!r} repeats line {first}; the first is kept")
            continue
        if qid in seen_qid:
            raise DatasetFileError(
                f"duplicate question id {qid!r} (first on line {seen_qid[qid]})",
                line=line,
                field="question_id",
            )
        if (prompt, criterion) in seen_cell:
            raise DatasetFileError(
                f"prompt {prompt!r} already has a row for criterion {criterion!r} "
                f"(line {seen_cell[prompt, criterion]})",
                line=line,
                field="criterion",
            )
        if prompt_split.setdefault(prompt, values["split"]) != values["split"]:
            raise DatasetFileError(
                f"prompt {prompt!r} is in split {prompt_split[prompt]!r} on an earlier line",
                line=line,
                field="split",
            )
        seen_qid[qid] = line
        seen_cell[prompt, criterion] = line
        columns["question_id"].append(qid)
        for f in REQUIRED:
            columns[f].append(values[f])
    if not columns["question_id"]:
        raise DatasetFileError(f"{source or 'the dataset'} has no rows")
    return ScoreInput(**{k: np.array(v, dtype=str) for k, v in columns.items()})


def _jsonl_records(path: Path):
    with path.open("rb") as handle:
        for line_no, raw in bounded_lines(handle):
            if raw is None:
                raise DatasetFileError(line_too_long(), line=line_no)
            if line_no == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark
            if not raw.strip():
                continue
            try:
                yield line_no, json_loads(raw)
            except JsonInputError as exc:
                raise DatasetFileError(f"not valid JSON ({exc})", line=line_no) from None


def _parquet_records(path: Path):
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # pyarrow raises several types for a non-Parquet file
        raise DatasetFileError(f"{path.name} is not a readable Parquet file ({exc})") from None
    missing = [f for f in REQUIRED if f not in schema.names]
    if missing:
        raise DatasetFileError(
            f"the Parquet file has no column {missing[0]!r}", field=missing[0], line=None
        )
    wanted = [f for f in (*OPTIONAL, *REQUIRED) if f in schema.names]
    table = pq.read_table(path, columns=wanted)
    data = table.to_pydict()
    for i in range(table.num_rows):
        yield i + 1, {f: data[f][i] for f in wanted}


def load_rows_file(path: str | Path, *, skipped: list[str] | None = None) -> ScoreInput:
    """Rows of a dataset file in the published row format (``.jsonl``/``.json`` or ``.parquet``).

    Raises DatasetFileError naming the line (Parquet: the row number) and the field.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetFileError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return rows_from_records(_parquet_records(path), source=path.name, skipped=skipped)
    if suffix in (".jsonl", ".json", ".ndjson"):
        return rows_from_records(_jsonl_records(path), source=path.name, skipped=skipped)
    raise DatasetFileError(f"{path.name}: expected a .jsonl or .parquet file")


def load_rows_files(paths: list[str | Path], *, skipped: list[str] | None = None) -> ScoreInput:
    """Rows of several dataset files (per-split or per-shard files of one release) as one set.

    Checked together: a question id or (prompt, criterion) in two files is an error naming the
    file and line of both.
    """
    records = []
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise DatasetFileError(f"no such file: {path}")
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            reader = _parquet_records(path)
        elif suffix in (".jsonl", ".json", ".ndjson"):
            reader = _jsonl_records(path)
        else:
            raise DatasetFileError(f"{path.name}: expected a .jsonl or .parquet file")
        records.append((path.name, reader))

    def chained():
        for name, reader in records:
            for line, record in reader:
                yield _Located(name, line), record

    names = ", ".join(name for name, _ in records)
    return rows_from_records(chained(), source=names, skipped=skipped)


class _Located(int):
    """A line number that prints with its file name (for the messages of several files)."""

    def __new__(cls, name: str, line: int) -> _Located:
        obj = super().__new__(cls, line)
        obj.file = name
        return obj

    def __str__(self) -> str:
        return f"{int(self)} of {self.file}"

    __repr__ = __str__


def rows_from_version(version: Any) -> ScoreInput:
    """The rows of one of our DatasetVersions (its frozen DatasetRow records)."""
    from aggregation.models import DatasetRow

    fields = ("question_id", "prompt_id", "split", "criterion", "preference")
    values = list(DatasetRow.objects.filter(version=version).order_by("id").values_list(*fields))
    if not values:
        raise DatasetFileError(f"dataset version {version} has no rows")
    columns = list(zip(*values, strict=True))
    return ScoreInput(**{f: np.array(c, dtype=str) for f, c in zip(fields, columns, strict=True)})


def contested_from_version(version: Any) -> list[tuple[str, str, str, str]]:
    """(question_id, prompt_id, split, criterion) of a version's contested split, if exported."""
    from aggregation.models import DatasetFile

    record = DatasetFile.objects.filter(version=version, kind=DatasetFile.Kind.CONTESTED).first()
    if record is None:
        return []
    out = []
    with record.file.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                row = json.loads(raw)
                out.append((row["question_id"], row["prompt_id"], row["split"], row["criterion"]))
    return out


def resolve_dataset(spec: str, *, skipped: list[str] | None = None) -> tuple[ScoreInput, str]:
    """Rows and a label for ``spec``: row files (comma-separated), ``PROJECT:vN`` or a version id.

    ``skipped``: see ``rows_from_records`` (files only; a version has no repeated rows).
    """
    import re

    path = Path(spec)
    if path.is_file():
        return load_rows_file(path, skipped=skipped), path.name
    parts = [part.strip() for part in spec.split(",") if part.strip()]
    if len(parts) > 1:
        return load_rows_files(parts, skipped=skipped), ",".join(Path(p).name for p in parts)
    from aggregation.models import DatasetVersion

    match = re.fullmatch(r"(?P<slug>[-\w]+):v(?P<number>\d+)", spec.strip())
    if match:
        lookup = {"project__slug": match["slug"], "number": int(match["number"])}
    elif spec.strip().isdigit():
        lookup = {"pk": int(spec)}
    else:
        raise DatasetFileError(
            f"{spec!r} is neither a dataset file nor a version (PROJECT:vN or a version id)"
        )
    version = DatasetVersion.objects.select_related("project").filter(**lookup).first()
    if version is None:
        raise DatasetFileError(f"no dataset version {spec!r}")
    if version.status != DatasetVersion.Status.READY:
        raise DatasetFileError(f"dataset version {version} is {version.get_status_display()}")
    return rows_from_version(version), f"{version.project.slug}:v{version.number}"
