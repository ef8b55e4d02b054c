"""Dataset rows for scoring: the published Multi-Crit row format (JSONL/Parquet) or a version.

A row needs ``prompt_id``, ``split`` (``open_ended`` or ``reasoning``, in any spelling
``annotation.splits.split_key`` accepts: ``openEnded``, ``open-ended``, ...), ``criterion`` and
``preference`` (``model_a``, ``model_b`` or ``tie``); ``question_id`` is optional and defaults to
``<prompt_id>__<criterion>``. Other fields (question, responses, image) are not needed to score and
are not read from Parquet, so the embedded images are never loaded.

What the published evaluation scores is scored here too, with a warning on the rows
(``ScoreInput.warnings``) instead of a refusal:

- a human ``tie`` label: it equals no verdict of a judge, so the row always counts as wrong, and
  it is in no conflicting criterion pair (protocol section 7);
- a prompt with rows in both splits: the published evaluation reads each split on its own, so
  each split scores its own rows of the prompt (and a question id may then name a row in each
  split; a predictions line for it says which with its ``split``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aggregation.export.rows import question_id_for
from annotation.importing.limits import JsonInputError, bounded_lines, json_loads, line_too_long
from annotation.splits import split_key
from core.text import counted
from judging.errors import DatasetFileError
from judging.metrics import PREFERENCES, SPLIT_ORDER, TIE_LABEL, ScoreInput

REQUIRED = ("prompt_id", "split", "criterion", "preference")
OPTIONAL = ("question_id",)
FIELDS = ("question_id", "prompt_id", "split", "criterion", "preference")
#: How many rows (or prompts) a warning names before it counts the rest.
LISTED = 5


def _text(value: Any, *, line: int, field: str) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        raise DatasetFileError("is missing or empty", line=line, field=field)
    if not isinstance(value, str | int):
        kind = type(value).__name__
        raise DatasetFileError(f"must be a string, got {kind}", line=line, field=field)
    return str(value).strip()


@dataclass(frozen=True)
class _Row:
    line: int
    question_id: str
    prompt_id: str
    split: str
    criterion: str
    preference: str


def _row(line: int, record: Any) -> _Row:
    """One validated row; DatasetFileError names the line and field."""
    if not isinstance(record, dict):
        raise DatasetFileError("a row must be a JSON object", line=line)
    values = {f: _text(record.get(f), line=line, field=f) for f in REQUIRED}
    split = split_key(values["split"]) or values["split"]
    if split not in SPLIT_ORDER:
        raise DatasetFileError(
            f"unknown split {split!r} (expected one of {', '.join(SPLIT_ORDER)})",
            line=line,
            field="split",
        )
    if values["preference"] not in PREFERENCES:
        raise DatasetFileError(
            f"must be model_a, model_b or tie, got {values['preference']!r}",
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
    return _Row(line, qid, prompt, split, criterion, values["preference"])


def rows_from_records(
    records: Iterable[tuple[int, Any]], *, source: str = "", skipped: list[str] | None = None
) -> ScoreInput:
    """Validate ``(line, mapping)`` pairs and build the arrays; the first bad line raises.

    Rows repeat within a split (each split is read on its own, as the published evaluation
    reads it). Without a ``skipped`` list a repeat is an error naming both lines. With one, the
    rows are kept as the published evaluation keeps them, and each row left out is listed there:

    - a repeated question id keeps its FIRST row (the published code skips an id it has seen);
    - a repeated (prompt, criterion) under another question id keeps its LAST row (the published
      code files rows in a dict keyed by prompt, then criterion, so a later row replaces an
      earlier one). The question-id rule applies first: a row whose id was seen stays out even
      when the row first seen with that id was itself replaced.

    Tie labels and prompts in two splits are kept, with warnings on the result.
    """
    rows = _kept_rows((_row(line, record) for line, record in records), skipped)
    if not rows:
        raise DatasetFileError(f"{source or 'the dataset'} has no rows")
    out = _score_input([[getattr(r, f) for r in rows] for f in FIELDS])
    out.warnings.extend(dataset_warnings(out, lambda i: f"line {rows[i].line}"))
    return out


def _score_input(columns: Sequence[Sequence[str]]) -> ScoreInput:
    """Rows from their columns in ``FIELDS`` order."""
    question_id, prompt_id, split, criterion, preference = (np.array(c, dtype=str) for c in columns)
    return ScoreInput(question_id, prompt_id, split, criterion, preference)


def _kept_rows(rows: Iterable[_Row], skipped: list[str] | None) -> list[_Row]:
    """The rows without repeats, by the rules of ``rows_from_records``."""
    kept: dict[tuple[str, str, str], _Row] = {}  # (split, prompt, criterion) -> its row
    seen_qid: dict[tuple[str, str], int] = {}  # (split, question id) -> first line
    for row in rows:
        line, qid = row.line, row.question_id
        first = seen_qid.get((row.split, qid))
        if first is not None:
            if skipped is None:
                message = f"duplicate question id {qid!r} (first on line {first})"
                raise DatasetFileError(message, line=line, field="question_id")
            skipped.append(
                f"line {line}: row {qid!r} repeats the question id of line {first}; "
                "the first is kept"
            )
            continue
        seen_qid[row.split, qid] = line
        earlier = kept.get((row.split, row.prompt_id, row.criterion))
        if earlier is not None:
            if skipped is None:
                message = (
                    f"prompt {row.prompt_id!r} already has a row for criterion "
                    f"{row.criterion!r} (line {earlier.line})"
                )
                raise DatasetFileError(message, line=line, field="criterion")
            skipped.append(
                f"line {earlier.line}: row {earlier.question_id!r} is replaced by line {line} "
                f"(row {qid!r}, the same prompt and criterion); the last is kept"
            )
        kept[row.split, row.prompt_id, row.criterion] = row
    return list(kept.values())


def _named(items: list[str]) -> str:
    shown = ", ".join(items[:LISTED])
    return shown if len(items) <= LISTED else f"{shown} and {len(items) - LISTED} more"


def _in_two_splits(keys: np.ndarray, split: np.ndarray) -> dict[str, dict[str, int]]:
    """Keys with rows in more than one split: key -> split -> position of its first row there."""
    combined = np.char.add(np.char.add(keys, "\x1f"), split)
    _, first = np.unique(combined, return_index=True)
    first.sort()
    names, counts = np.unique(keys[first], return_counts=True)
    several = set(names[counts > 1].tolist())
    out: dict[str, dict[str, int]] = {}
    for i in first.tolist():
        if keys[i] in several:
            out.setdefault(str(keys[i]), {})[str(split[i])] = i
    return out


def dataset_warnings(rows: ScoreInput, where: Callable[[int], str]) -> list[str]:
    """What the rows hold that scores as published but deserves a look; ``where(i)`` names row i.

    Human tie labels, prompts with rows in both splits, and question ids naming a row in each.
    """
    out = []
    ties = np.flatnonzero(rows.preference == TIE_LABEL).tolist()
    if ties:
        named = _named([where(i) for i in ties])
        out.append(
            f"{counted(len(ties), 'row')} with a human tie label ({named}): a tie equals no "
            "verdict of a judge, so each counts as wrong, as in the published evaluation, and it "
            "is in no conflicting criterion pair"
        )
    for keys, noun, effect in (
        (rows.prompt_id, "prompt", "each split scores its own rows of it"),
        (
            rows.question_id,
            "question id",
            "a predictions line for it says which row with its split (or read one split only)",
        ),
    ):
        both = _in_two_splits(keys, rows.split)
        if both:
            keys_named = [
                f"{key!r} ({', '.join(f'{s} at {where(i)}' for s, i in firsts.items())})"
                for key, firsts in both.items()
            ]
            out.append(
                f"{counted(len(both), noun)} with rows in both splits, accepted as the published "
                f"evaluation reads each split on its own: {_named(keys_named)}; {effect}"
            )
    return out


def _jsonl_records(path: Path):
    with path.open("rb") as handle:
        for line_no, raw in bounded_lines(handle):
            if raw is None:
                raise DatasetFileError(line_too_long(), line=line_no)
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


def load_rows_files(paths: Sequence[str | Path], *, skipped: list[str] | None = None) -> ScoreInput:
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

    file: str

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

    values = list(DatasetRow.objects.filter(version=version).order_by("id").values_list(*FIELDS))
    if not values:
        raise DatasetFileError(f"dataset version {version} has no rows")
    columns = list(zip(*values, strict=True))
    rows = _score_input(columns)
    rows.warnings.extend(dataset_warnings(rows, lambda i: f"row {str(rows.question_id[i])!r}"))
    return rows


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

    ``skipped``: see ``rows_from_records`` (files only; a version has no repeated rows). What the
    rows hold that is scored but worth a look is in the result's ``warnings``.
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
