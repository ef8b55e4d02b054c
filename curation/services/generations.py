"""Import of a raw generations file: prompts with their image and every model's responses.

One prompt per line (JSONL) or row (Parquet), alone or in a zip with its images::

    {"prompt_id": "p1", "split": "reasoning", "source": "MathVista", "question": "Find x.",
     "image": "images/p1.png", "reference_answer": "12",
     "responses": [{"model": "m1", "sample": 0, "text": "...", "correct": true}, ...],
     "verdicts": [{"a": {"model": "m1", "sample": 0}, "b": {"model": "m2", "sample": 0},
                   "judges": ["A", "B", "A"]}]}

The sample import's rules apply: the same readers, limits and image checks; every problem is
listed with its line and field and nothing is written when there is one; importing the same
file again changes nothing; a prompt stored with different content is an error unless
``update`` is given (then its responses, and the pairs built from them, are replaced).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction

from annotation.images import EXTENSIONS, ImageRejected, image_inspect
from annotation.importing.errors import ImportRejected, Problem, ProblemList
from annotation.importing.jsonl import jsonl_candidates
from annotation.importing.limits import (
    FIELD_MAX_CHARS,
    shown_value,
    text_problem,
    value_problem,
)
from annotation.importing.records import SPLITS, image_ref_parse
from annotation.importing.sources import ImageRefError, ImportSource, source_open
from annotation.models import Project
from annotation.splits import split_key

from ..filters import PREFERENCE_NAMES
from ..models import RawPrompt, RawResponse

Progress = Callable[..., None]
SAMPLE_MAX = 1000  # sample indices run from 0 to this


@dataclass
class RawRecord:
    line: int
    prompt_id: str
    split: str
    source: str
    question: str
    reference_answer: str
    image: Any  # ImageRef
    responses: list[dict[str, Any]]
    verdicts: list[dict[str, Any]]

    def content_hash(self, image_sha: str) -> str:
        payload = {
            "split": self.split,
            "source": self.source,
            "question": self.question,
            "reference_answer": self.reference_answer,
            "image": image_sha,
            "responses": self.responses,
            "verdicts": self.verdicts,
        }
        text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class GenerationsReport:
    prompts: int = 0
    responses: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        prompts = f"{self.prompts} prompt{'' if self.prompts == 1 else 's'}"
        responses = f"{self.responses} response{'' if self.responses == 1 else 's'}"
        return (
            f"{prompts} with {responses} read: {self.created} new, "
            f"{self.updated} updated, {self.unchanged} unchanged"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "prompts": self.prompts,
            "responses": self.responses,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "summary": self.summary(),
        }


#: The file's field names that have a sample field's length limit under another name.
LIMIT_OF = {"prompt_id": "external_id", "model": "model_a"}


def _text(data: dict, name: str, bad: Callable[[str, str], None], *, required: bool) -> str:
    """The text field ``name`` of ``data`` with the sample import's limit; "" when bad."""
    value = data.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            bad(name, "missing field" if name not in data else "must not be empty")
        return ""
    if not isinstance(value, str):
        bad(name, f"must be text, got {type(value).__name__}")
        return ""
    problem = text_problem(value, max_chars=FIELD_MAX_CHARS.get(LIMIT_OF.get(name, name)))
    if problem:
        bad(name, problem)
    return value


def _response_key(value: Any) -> tuple[str, int] | None:
    if isinstance(value, dict):
        model, sample = value.get("model"), value.get("sample", 0)
        if isinstance(model, str) and isinstance(sample, int) and not isinstance(sample, bool):
            return model.strip(), sample
    return None


def _responses(data: dict, bad: Callable[[str, str], None]) -> list[dict[str, Any]]:
    items = data.get("responses")
    if not isinstance(items, list) or not items:
        bad("responses", "a non-empty list of {model, sample, text} objects is needed")
        return []
    out: list[dict[str, Any]] = []
    seen: dict[tuple[str, int], int] = {}
    for i, item in enumerate(items):
        where = f"responses[{i}]"
        if not isinstance(item, dict):
            bad(where, f"must be an object, got {type(item).__name__}")
            continue
        model = _text(item, "model", lambda n, m, w=where: bad(f"{w}.{n}", m), required=True)
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            bad(
                f"{where}.text", "missing field" if "text" not in item else "must be non-empty text"
            )
            text = ""
        else:
            problem = text_problem(text, max_chars=FIELD_MAX_CHARS["response_a"])
            if problem:
                bad(f"{where}.text", problem)
        sample = item.get("sample", 0)
        if isinstance(sample, bool) or not isinstance(sample, int) or not 0 <= sample <= SAMPLE_MAX:
            bad(
                f"{where}.sample",
                f"must be a whole number from 0 to {SAMPLE_MAX}, got {shown_value(sample)}",
            )
            sample = 0
        correct = item.get("correct")
        if correct is not None and not isinstance(correct, bool):
            bad(f"{where}.correct", f"must be true or false, got {shown_value(correct)}")
            correct = None
        key = (model.strip(), sample)
        if model and key in seen:
            bad(
                f"{where}",
                f"duplicate response: model {key[0]!r} sample {sample} "
                f"(first at responses[{seen[key]}])",
            )
            continue
        seen[key] = i
        out.append({"model": key[0], "sample": sample, "text": text, "correct": correct})
    return out


def _verdicts(
    data: dict, keys: set[tuple[str, int]], bad: Callable[[str, str], None]
) -> list[dict[str, Any]]:
    items = data.get("verdicts")
    if items is None:
        return []
    if not isinstance(items, list):
        bad("verdicts", "must be a list of {a, b, judges} objects")
        return []
    out = []
    for i, item in enumerate(items):
        where = f"verdicts[{i}]"
        if not isinstance(item, dict):
            bad(where, "must be an object with a, b and judges")
            continue
        a, b = _response_key(item.get("a")), _response_key(item.get("b"))
        ok = True
        for name, key in (("a", a), ("b", b)):
            if key is None:
                bad(f"{where}.{name}", 'must name a response: {"model": ..., "sample": ...}')
                ok = False
            elif key not in keys:
                bad(f"{where}.{name}", f"no response of model {key[0]!r} sample {key[1]}")
                ok = False
        judges = item.get("judges")
        if (
            not isinstance(judges, list)
            or not judges
            or not all(isinstance(v, str) and v in PREFERENCE_NAMES for v in judges)
        ):
            bad(f"{where}.judges", "a list of preferences A, B or tie is needed")
            ok = False
        if ok:
            out.append(
                {"a": list(a), "b": list(b), "judges": [PREFERENCE_NAMES[v] for v in judges]}
            )
    return out


def raw_validate(data: dict[str, Any], *, line: int) -> tuple[RawRecord | None, list[tuple]]:
    """Check one prompt's fields; return the record or its ``(field, message)`` problems."""
    problems: list[tuple[str, str]] = []

    def bad(name: str, message: str) -> None:
        problems.append((name, message))

    if "prompt_id" not in data and "id" in data:
        data = {**data, "prompt_id": data["id"]}
    prompt_id = data.get("prompt_id")
    if isinstance(prompt_id, int) and not isinstance(prompt_id, bool):
        data = {**data, "prompt_id": str(prompt_id)}
    prompt_id = _text(data, "prompt_id", bad, required=True)
    split = data.get("split")
    if isinstance(split, str) and split_key(split):
        split = split_key(split)
    if not isinstance(split, str) or not split.strip():
        bad("split", "missing field" if "split" not in data else "must be non-empty text")
    elif split not in SPLITS:
        bad("split", f"unknown split {split!r} (expected {' or '.join(sorted(SPLITS))})")
    question = _text(data, "question", bad, required=True)
    source = _text(data, "source", bad, required=False)
    reference = _text(data, "reference_answer", bad, required=False)
    image = None
    if data.get("image") is None:
        bad("image", "missing field")
    else:
        image, error = image_ref_parse(data["image"])
        if error:
            bad("image", error)
    responses = _responses(data, bad)
    keys = {(r["model"], r["sample"]) for r in responses}
    verdicts = _verdicts(data, keys, bad)
    if split == "reasoning" and not reference.strip():
        unflagged = [i for i, r in enumerate(responses) if r["correct"] is None]
        if unflagged:
            bad(
                "reference_answer",
                "needed on the reasoning split to check answers "
                "(or give every response a correct: true/false flag)",
            )
    if problems:
        return None, problems
    return RawRecord(
        line, prompt_id.strip(), split, source, question, reference, image, responses, verdicts
    ), []


def _rows(source: ImportSource) -> Iterator[tuple[int, dict | None, list[Problem]]]:
    if source.kind != "parquet":
        for candidate in jsonl_candidates(source):
            yield candidate.line, candidate.data, candidate.problems
        return
    import pyarrow.parquet as pq

    with source.open_data() as handle:
        try:
            parquet = pq.ParquetFile(handle)
            row = 0
            for batch in parquet.iter_batches(batch_size=256):
                for obj in batch.to_pylist():
                    row += 1
                    problem = value_problem(obj)
                    if problem:
                        yield row, None, [Problem(row, problem[0] or "row", problem[1], "row")]
                    else:
                        yield row, obj, []
        except ImportRejected:
            raise
        except Exception as exc:  # pyarrow raises several types for a broken file
            yield 0, None, [Problem(None, "file", f"not a readable Parquet file ({exc})")]


def _image_name(project: Project, sha: str, fmt: str) -> str:
    return f"curation/{project.pk}/{sha[:2]}/{sha}.{EXTENSIONS.get(fmt, 'bin')}"


def generations_import(
    *,
    project: Project,
    path: str | Path,
    images: str | Path | None = None,
    update: bool = False,
    progress: Progress | None = None,
) -> GenerationsReport:
    """Validate the whole generations file, then store it in one transaction.

    Raises :class:`ImportRejected` listing every problem (line or row, field); nothing is
    written then.
    """
    started = time.monotonic()
    progress = progress or (lambda *a, **k: None)
    report = GenerationsReport()
    problems = ProblemList()
    planned: list[tuple[RawRecord, str, str, str, str]] = []  # record, action, hash, sha, fmt
    existing = dict(
        RawPrompt.objects.filter(project=project).values_list("prompt_id", "content_hash")
    )
    with source_open(path, images=images) as source:
        seen: dict[str, int] = {}
        unit = "row" if source.kind == "parquet" else "line"
        for line, data, read_problems in _rows(source):
            problems.extend(read_problems)
            if data is None:
                continue
            record, field_problems = raw_validate(data, line=line)
            for name, message in field_problems:
                problems.add(Problem(line, name, message, unit))
            if record is None:
                continue
            if record.prompt_id in seen:
                problems.add(
                    Problem(
                        line,
                        "prompt_id",
                        f"duplicate prompt id "
                        f"{record.prompt_id!r} (first at {unit} "
                        f"{seen[record.prompt_id]})",
                        unit,
                    )
                )
                continue
            seen[record.prompt_id] = line
            try:
                raw = (
                    record.image.data
                    if record.image.data is not None
                    else (source.read_image(record.image.path))
                )
                info = image_inspect(raw)
            except (ImageRefError, ImageRejected) as exc:
                problems.add(Problem(line, "image", str(exc), unit))
                continue
            digest = record.content_hash(info.sha256)
            stored = existing.get(record.prompt_id)
            if stored is None:
                action = "create"
            elif stored == digest:
                action = "unchanged"
            elif update:
                action = "update"
            else:
                problems.add(
                    Problem(
                        line,
                        "prompt_id",
                        f"prompt {record.prompt_id!r} is "
                        "already stored with different content; import with "
                        "update to replace it",
                        unit,
                    )
                )
                continue
            report.prompts += 1
            report.responses += len(record.responses)
            planned.append((record, action, digest, info.sha256, info.format))
            progress(len(seen), None, "Checking prompts")
        problems.raise_if_any()
        if not planned:
            raise ImportRejected([Problem(None, "file", "the file holds no prompt")])
        created_files: list[str] = []
        try:
            with transaction.atomic():
                _write(project, planned, source, report, created_files, progress)
        except BaseException:
            for name in created_files:
                default_storage.delete(name)
            raise
    report.seconds = time.monotonic() - started
    return report


def _write(project, planned, source, report, created_files, progress) -> None:
    responses: list[RawResponse] = []
    for done, (record, action, digest, sha, fmt) in enumerate(planned, start=1):
        if action == "unchanged":
            report.unchanged += 1
            continue
        name = _image_name(project, sha, fmt)
        if not default_storage.exists(name):
            raw = (
                record.image.data
                if record.image.data is not None
                else (source.read_image(record.image.path))
            )
            name = default_storage.save(name, ContentFile(raw))
            created_files.append(name)
        fields = {
            "split": record.split,
            "source": record.source,
            "question": record.question,
            "reference_answer": record.reference_answer,
            "image": name,
            "image_sha256": sha,
            "verdicts": record.verdicts,
            "content_hash": digest,
            "line": record.line,
        }
        if action == "update":
            RawPrompt.objects.filter(project=project, prompt_id=record.prompt_id).delete()
            report.updated += 1
        else:
            report.created += 1
        prompt = RawPrompt.objects.create(project=project, prompt_id=record.prompt_id, **fields)
        responses.extend(
            RawResponse(
                prompt=prompt,
                model=r["model"],
                sample_index=r["sample"],
                text=r["text"],
                correct=r["correct"],
            )
            for r in record.responses
        )
        if len(responses) >= 2000:
            RawResponse.objects.bulk_create(responses)
            responses.clear()
        progress(done, len(planned), "Storing prompts")
    RawResponse.objects.bulk_create(responses)
