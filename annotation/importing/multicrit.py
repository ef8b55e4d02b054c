"""Reader of the published Multi-Crit row format: one row per (prompt, criterion), folded back.

Rows (JSONL or Parquet, read in record batches) go into a temporary SQLite file, so that the
rows of one prompt can be gathered wherever they are in the file without holding the file in
memory. Each prompt becomes one sample; its rows' preferences become reference labels.

Several files load into one store (the release ships a file per split, or shards), so the rows
of one prompt fold together wherever they are; problems then name the file with the row. Split
labels are normalised (``openEnded``, ``open-ended`` -> ``open_ended``) before anything is
checked or stored.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from ..splits import split_key
from .candidates import Candidate
from .errors import ImportRejected, Problem
from .jsonl import json_line
from .limits import FIELD_MAX_CHARS, bounded_lines, shown_value, text_problem, value_problem
from .records import image_ref_parse
from .sources import ImportSource

ROW_REQUIRED = ("prompt_id", "question", "pred_a", "pred_b", "split", "criterion", "preference")
# Fields every row of one prompt repeats; they must agree.
SHARED = (
    "question",
    "pred_a",
    "pred_b",
    "model_a",
    "model_b",
    "split",
    "source",
    "pair_type",
    "is_seed",
    "metadata",
    "reference_answer",
)
OUR_NAMES = {"pred_a": "response_a", "pred_b": "response_b"}
# How our field names appear in this format, for error messages.
FILE_NAMES = {"external_id": "prompt_id", "response_a": "pred_a", "response_b": "pred_b"}
ROW_PREFERENCES = {"model_a": "model_a", "model_b": "model_b", "A": "model_a", "B": "model_b"}
BATCH_ROWS = 256


def _iter_rows(source: ImportSource) -> Iterator[tuple[int, dict | None, Problem | None]]:
    if source.kind == "parquet":
        import pyarrow.parquet as pq

        with source.open_data() as handle:
            try:
                parquet = pq.ParquetFile(handle)
            except ImportRejected:
                raise
            except Exception as exc:  # pyarrow raises several types for a broken file
                yield 0, None, Problem(None, "file", f"not a readable Parquet file ({exc})")
                return
            row = 0
            batches = parquet.iter_batches(batch_size=BATCH_ROWS)
            while True:
                try:
                    batch = next(batches, None)
                    objs = [] if batch is None else batch.to_pylist()
                except ImportRejected:
                    raise
                except Exception as exc:  # a damaged page or a value pyarrow cannot convert
                    message = f"rows after {row} cannot be read ({exc})"
                    yield row + 1, None, Problem(row + 1, "file", message, "row")
                    return
                if batch is None:
                    return
                for obj in objs:
                    row += 1
                    problem = value_problem(obj)
                    if problem:
                        name, message = problem
                        yield row, None, Problem(row, name or "row", message, "row")
                    else:
                        yield row, obj, None
        return
    with source.open_data() as handle:
        for line, raw in bounded_lines(handle):
            if raw is None or raw.strip():
                obj, problem = json_line(raw, line, unit="row")
                yield line, obj, problem


def _row_type_problems(obj: dict, row: int) -> list[Problem]:
    """Ids, criterion and split must be short text (ids may be whole numbers)."""
    problems = []
    for name in ("prompt_id", "question_id", "criterion", "split"):
        value = obj.get(name)
        if value is None:
            continue
        numeric_id = name in ("prompt_id", "question_id") and type(value) is int
        if not isinstance(value, str) and not numeric_id:
            problems.append(Problem(row, name, f"must be text, got {type(value).__name__}", "row"))
            continue
        limit = FIELD_MAX_CHARS.get("external_id" if name == "prompt_id" else name, 200)
        message = text_problem(str(value), max_chars=limit)
        if message:
            problems.append(Problem(row, name, message, "row"))
    return problems


class RowStore:
    """The rows of a Multi-Crit file in a temporary SQLite database, grouped by prompt."""

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="multicrit-rows-", suffix=".sqlite3")
        os.close(fd)
        self.db = sqlite3.connect(self.path)
        self.db.executescript(
            """
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            CREATE TABLE rows (
                row_no INTEGER PRIMARY KEY, prompt_id TEXT NOT NULL, criterion TEXT NOT NULL,
                preference TEXT NOT NULL, question_id TEXT, shared TEXT NOT NULL,
                image_key TEXT NOT NULL, src INTEGER NOT NULL, src_row INTEGER NOT NULL
            );
            CREATE TABLE images (prompt_id TEXT PRIMARY KEY, data BLOB NOT NULL);
            """
        )
        self.rows = 0
        self.prompts = 0
        self.units: list[str] = []  # per loaded file: "row", or "<file> row" for several files

    def close(self) -> None:
        self.db.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def __enter__(self) -> RowStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def load(
        self,
        source: ImportSource,
        *,
        criteria: dict[str, set[str]],
        progress: Callable[[int], None] | None = None,
        unit: str = "row",
    ) -> list[Problem]:
        """Read every row of one file, check it on its own, and store it; the row problems.

        Call once per file; ``unit`` is how the problems name a row of this file.
        """
        src = len(self.units)
        self.units.append(unit)
        problems: list[Problem] = []
        insert_rows: list[tuple] = []
        all_keys = set().union(*criteria.values()) if criteria else set()
        for row, obj, problem in _iter_rows(source):
            self.rows += 1
            if problem is not None:
                if problem.line is not None:
                    problem = Problem(problem.line, problem.field, problem.message, unit)
                problems.append(problem)
                continue
            row_problems = []
            for name in ROW_REQUIRED:
                value = obj.get(name)
                if value is None or (isinstance(value, str) and not value.strip()):
                    row_problems.append(Problem(row, name, "missing field", unit))
            image_value = obj.get("image")
            if image_value is None or (
                isinstance(image_value, dict) and not any(image_value.values())
            ):
                image_value = obj.get("image_path")
            if image_value is None:
                row_problems.append(
                    Problem(row, "image", "missing field (image or image_path)", unit)
                )
            row_problems.extend(_row_type_problems(obj, row))
            preference = obj.get("preference")
            if preference is not None and (
                not isinstance(preference, str) or preference not in ROW_PREFERENCES
            ):
                row_problems.append(
                    Problem(
                        row,
                        "preference",
                        f"must be model_a or model_b, got {shown_value(preference)}",
                        unit,
                    )
                )
            if split_key(obj.get("split")):
                obj["split"] = split_key(obj["split"])
            split, criterion = obj.get("split"), obj.get("criterion")
            if isinstance(criterion, str) and criterion:
                keys = criteria.get(split) if isinstance(split, str) else None
                if (keys is not None and criterion not in keys) or (
                    keys is None and criterion not in all_keys
                ):
                    where = f" for split {split}" if keys is not None else ""
                    row_problems.append(
                        Problem(
                            row,
                            "criterion",
                            f"unknown criterion {shown_value(criterion)}{where}",
                            unit,
                        )
                    )
            image, image_error = (None, None)
            if image_value is not None:
                image, image_error = image_ref_parse(image_value)
                if image_error:
                    row_problems.append(Problem(row, "image", image_error, unit))
            if row_problems:
                problems.extend(row_problems)
                continue
            prompt_id = str(obj["prompt_id"]).strip()
            if image.data is not None:
                key = "sha256:" + hashlib.sha256(image.data).hexdigest()
                self.db.execute(
                    "INSERT OR IGNORE INTO images (prompt_id, data) VALUES (?, ?)",
                    (prompt_id, image.data),
                )
            else:
                key = "path:" + image.path
            shared = {name: obj.get(name) for name in SHARED if obj.get(name) is not None}
            insert_rows.append(
                (
                    prompt_id,
                    criterion,
                    ROW_PREFERENCES[preference],
                    None if obj.get("question_id") is None else str(obj["question_id"]),
                    json.dumps(shared, sort_keys=True, ensure_ascii=False, default=str),
                    key,
                    src,
                    row,
                )
            )
            if len(insert_rows) >= 1000:
                self._flush(insert_rows)
            if progress is not None:
                progress(self.rows)
        self._flush(insert_rows)
        self.db.execute("CREATE INDEX IF NOT EXISTS rows_prompt ON rows (prompt_id, row_no)")
        self.prompts = self.db.execute("SELECT COUNT(DISTINCT prompt_id) FROM rows").fetchone()[0]
        return problems

    def _flush(self, rows: list[tuple]) -> None:
        self.db.executemany(
            "INSERT INTO rows (prompt_id, criterion, preference, question_id, shared, image_key, "
            "src, src_row) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        rows.clear()

    def candidates(self) -> Iterator[Candidate]:
        """One folded sample per prompt, in the order of each prompt's first row."""
        prompts = self.db.execute(
            "SELECT prompt_id FROM rows GROUP BY prompt_id ORDER BY MIN(row_no)"
        )
        for (prompt_id,) in prompts:
            rows = self.db.execute(
                "SELECT src_row, criterion, preference, question_id, shared, image_key, src "
                "FROM rows WHERE prompt_id = ? ORDER BY row_no",
                (prompt_id,),
            ).fetchall()
            yield self._fold(prompt_id, rows)

    def _where(self, src: int, row_no: int) -> str:
        return f"{self.units[src]} {row_no}"

    def _fold(self, prompt_id: str, rows: list[tuple]) -> Candidate:
        first_row, _, _, _, first_shared, first_key, first_src = rows[0]
        problems: list[Problem] = []
        reference: dict[str, str] = {}
        question_ids: dict[str, str] = {}
        seen: dict[str, str] = {}
        shared = json.loads(first_shared)
        first_at = self._where(first_src, first_row)
        for row_no, criterion, preference, question_id, row_shared, image_key, src in rows:
            unit = self.units[src]
            if criterion in seen:
                problems.append(
                    Problem(
                        row_no,
                        "criterion",
                        f"criterion {criterion!r} repeated for prompt_id {prompt_id!r} "
                        f"(first at {seen[criterion]})",
                        unit,
                    )
                )
                continue
            seen[criterion] = self._where(src, row_no)
            if row_shared != first_shared:
                other = json.loads(row_shared)
                for name in SHARED:
                    if other.get(name) != shared.get(name):
                        problems.append(
                            Problem(
                                row_no,
                                name,
                                f"differs from {first_at} of prompt_id {prompt_id!r}",
                                unit,
                            )
                        )
            if image_key != first_key:
                problems.append(
                    Problem(
                        row_no,
                        "image",
                        f"differs from {first_at} of prompt_id {prompt_id!r}",
                        unit,
                    )
                )
            reference[criterion] = preference
            if question_id is not None:
                question_ids[criterion] = question_id
        data = {OUR_NAMES.get(name, name): value for name, value in shared.items()}
        data["external_id"] = prompt_id
        data["reference"] = reference
        if question_ids:
            metadata = data.get("metadata") or {}
            if isinstance(metadata, dict):  # a non-object is reported by the validation
                data["metadata"] = {**metadata, "question_ids": question_ids}
        if first_key.startswith("path:"):
            data["image"] = first_key[len("path:") :]
        else:
            blob = self.db.execute(
                "SELECT data FROM images WHERE prompt_id = ?", (prompt_id,)
            ).fetchone()[0]
            data["image"] = bytes(blob)
        return Candidate(
            line=first_row,
            data=data,
            problems=problems,
            unit=self.units[first_src],
            names=FILE_NAMES,
            source=first_src,
        )
