"""The sample import: validate the whole file, then write it in one transaction.

Two passes over the file. The first reads every sample, checks every field and image, compares
with what the project already holds and runs the curation filters; it keeps only a small plan
per sample (action, content hash), never the samples themselves. Any problem stops the import
with the full list and nothing written. The second pass re-reads the file and writes in batches
inside one transaction: samples, their images, reference labels, and the Slot rows of every
formal sample.

Multi-Crit row files may come several at a time (a file per split, or shards): their rows are
folded per prompt together. A prompt whose other criteria an earlier import already stored
(the same sample content, new criteria) is merged into that sample, keeping every question id,
without ``--update``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.core.files.storage import default_storage
from django.db import transaction

from core.text import counted

from .. import curation
from ..default_criteria import DEFAULT_CRITERIA
from ..images import ImageRejected, image_inspect, image_process, sample_image_attach
from ..models import Criterion, Project, ReferenceLabel, Sample, Slot, Vote
from ..services.assignment import slots_create
from ..services.projects import project_get_or_create
from .candidates import Candidate
from .errors import ImportRejected, Problem, ProblemList
from .jsonl import jsonl_candidates, lines_count
from .multicrit import RowStore
from .records import SampleRecord, sample_validate
from .sources import ImageRefError, ImportSource, jsonl_looks_like_rows, source_open

BATCH = 500
Progress = Callable[..., None]

CREATE, UPDATE, UNCHANGED, FILTERED = "create", "update", "unchanged", "filtered"
MERGE = "merge"  # new criteria of a stored prompt (rows of one prompt in several imports)


@dataclass
class ImportReport:
    format: str
    samples: int = 0  # samples in the file
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    merged: int = 0
    removed_by_filter: dict[str, int] = field(default_factory=dict)
    reference_labels: int = 0
    slots: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        parts = [
            f"{counted(self.samples, 'sample')} read ({self.format})",
            f"{self.created} created",
            f"{self.updated} updated",
            f"{self.unchanged} unchanged",
        ]
        if self.merged:
            parts.append(f"{self.merged} merged (new criteria of stored prompts)")
        if self.removed_by_filter:
            parts.append(
                "filtered out: "
                + ", ".join(f"{name} {count}" for name, count in self.removed_by_filter.items())
            )
        parts.append(
            f"{counted(self.reference_labels, 'reference label')}, {counted(self.slots, 'slot')}"
        )
        return "; ".join(parts) + f" in {self.seconds:.1f}s"

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "samples": self.samples,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "merged": self.merged,
            "removed_by_filter": self.removed_by_filter,
            "reference_labels": self.reference_labels,
            "slots": self.slots,
            "summary": self.summary(),
        }


@dataclass
class _Planned:
    action: str
    content_hash: str
    line: int
    references: dict[str, str] | None = None  # MERGE: every criterion's preference
    metadata: dict[str, Any] | None = None  # MERGE: the metadata with every question id


@dataclass
class _Curation:
    ids: list[str] = field(default_factory=list)
    len_a: list[int] = field(default_factory=list)
    len_b: list[int] = field(default_factory=list)
    reasoning: list[bool] = field(default_factory=list)
    correct_a: list[bool] = field(default_factory=list)
    correct_b: list[bool] = field(default_factory=list)
    ensemble: list[list[str]] = field(default_factory=list)
    exempt: list[bool] = field(default_factory=list)


def _criteria_of(project: Project | None) -> dict[str, set[str]]:
    keys: dict[str, set[str]] = {}
    if project is None:
        for spec in DEFAULT_CRITERIA:
            keys.setdefault(spec.split, set()).add(spec.key)
        return keys
    for split, key in Criterion.objects.filter(project=project).values_list("split", "key"):
        keys.setdefault(split, set()).add(key)
    return keys


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


class _Reader:
    """The format-specific part: how to count and iterate the candidates of the sources."""

    def __init__(
        self, sources: list[ImportSource], criteria: dict[str, set[str]], stack: ExitStack
    ):
        self.sources = sources
        self.source = sources[0]
        self.criteria = criteria
        self.rows: RowStore | None = None
        rows_format = [s.kind == "parquet" or jsonl_looks_like_rows(s) for s in sources]
        if any(rows_format):
            kinds = {s.kind for s in sources}
            self.format = "multicrit-parquet" if kinds == {"parquet"} else "multicrit-jsonl"
            self.rows = stack.enter_context(RowStore())
        else:
            self.format = "jsonl"
        self.not_rows = [s.name for s, ok in zip(sources, rows_format, strict=True) if not ok]

    def prepare(self, progress: Progress) -> tuple[int, list[Problem]]:
        """Count the samples (reading Multi-Crit rows into the row store); row problems."""
        if len(self.sources) > 1 and (self.rows is None or self.not_rows):
            names = ", ".join(self.not_rows or [s.name for s in self.sources])
            message = f"several files are only for the Multi-Crit row format; not rows: {names}"
            return 0, [Problem(None, "file", message)]
        if self.rows is None:
            return lines_count(self.source), []
        problems = []
        several = len(self.sources) > 1
        for source in self.sources:
            problems += self.rows.load(
                source,
                criteria=self.criteria,
                progress=lambda n: progress(n, None, "Reading rows"),
                unit=f"{source.name} row" if several else "row",
            )
        return self.rows.prompts, problems

    def candidates(self) -> Iterator[Candidate]:
        if self.rows is None:
            return jsonl_candidates(self.source)
        return self.rows.candidates()

    def image_bytes(self, candidate: Candidate, record: SampleRecord) -> bytes:
        """The image of a sample, read from the file the sample came from."""
        return _image_bytes(self.sources[candidate.source], record)


def _image_bytes(source: ImportSource, record: SampleRecord) -> bytes:
    if record.image.data is not None:
        return record.image.data
    return source.read_image(record.image.path)


def _curation_fields(
    record: SampleRecord, filters: list[str], acc: _Curation
) -> list[tuple[str, str]]:
    """Collect the filter features of one sample; problems for fields the filters need."""
    problems = []
    meta = record.metadata
    correct_a = correct_b = False
    if "correctness" in filters and record.split == "reasoning" and not record.is_seed:
        correct_a, correct_b = meta.get("correct_a"), meta.get("correct_b")
        for name, value in (("correct_a", correct_a), ("correct_b", correct_b)):
            if not isinstance(value, bool):
                problems.append((f"metadata.{name}", "true/false needed by the correctness filter"))
    ensemble = ["", "", ""]
    if "ensemble" in filters and not record.is_seed:
        value = meta.get("ensemble")
        if (
            not isinstance(value, list)
            or len(value) != curation.ENSEMBLE_SIZE
            or not all(isinstance(v, str) for v in value)
        ):
            problems.append(
                ("metadata.ensemble", "a list of 3 judge preferences needed by the ensemble filter")
            )
        else:
            ensemble = [{"model_a": "A", "model_b": "B"}.get(v, v) for v in value]
    acc.ids.append(record.external_id)
    acc.len_a.append(curation.text_length(record.response_a, "characters"))
    acc.len_b.append(curation.text_length(record.response_b, "characters"))
    acc.reasoning.append(record.split == "reasoning")
    acc.correct_a.append(bool(correct_a))
    acc.correct_b.append(bool(correct_b))
    acc.ensemble.append(ensemble)
    acc.exempt.append(record.is_seed)
    return problems


def _existing(project: Project | None, ids: list[str]) -> dict[str, dict[str, Any]]:
    if project is None or not ids:
        return {}
    rows = Sample.objects.filter(project=project, external_id__in=ids).values(
        "pk", "external_id", "content_hash", "split", "is_seed"
    )
    found = {row["external_id"]: row for row in rows}
    if found:
        pks = [row["pk"] for row in found.values()]
        voted = set(Vote.objects.filter(sample_id__in=pks).values_list("sample_id", flat=True))
        claimed = set(
            Slot.objects.filter(sample_id__in=pks, annotator__isnull=False).values_list(
                "sample_id", flat=True
            )
        )
        for row in found.values():
            row["in_use"] = row["pk"] in voted or row["pk"] in claimed
    return found


def _merge_plan(
    pk: int, record: SampleRecord, image_sha: str
) -> tuple[dict[str, str], dict[str, Any], str] | str:
    """Fold a prompt's rows into the stored sample of an earlier import, when only criteria
    are new: ``(references, metadata, content hash)``, or why it cannot be merged."""
    sample = Sample.objects.get(pk=pk)
    stored_meta = dict(sample.metadata or {})
    new_meta = dict(record.metadata)
    stored_qids = stored_meta.pop("question_ids", None) or {}
    new_qids = new_meta.pop("question_ids", None) or {}
    fields = {k: v for k, v in record.model_fields().items() if k != "metadata"}
    same = all(getattr(sample, k) == v for k, v in fields.items())
    if not same or stored_meta != new_meta or sample.image_sha256 != image_sha:
        return "different content"
    stored_refs = dict(
        ReferenceLabel.objects.filter(sample=sample).values_list("criterion__key", "preference")
    )
    clash = sorted(k for k, v in record.references.items() if stored_refs.get(k, v) != v)
    if clash:
        return f"a different preference for {', '.join(clash)}"
    references = {**stored_refs, **record.references}
    metadata = dict(new_meta)
    if stored_qids or new_qids:
        metadata["question_ids"] = {**stored_qids, **new_qids}
    merged = SampleRecord(**{**record.__dict__, "references": references, "metadata": metadata})
    return references, metadata, merged.content_hash(image_sha)


def _validate(
    reader: _Reader,
    *,
    project: Project | None,
    update: bool,
    filters: list[str],
    total: int,
    progress: Progress,
    problems: ProblemList,
) -> tuple[dict[str, _Planned], dict[str, int]]:
    plan: dict[str, _Planned] = {}
    seen: dict[str, int] = {}
    images_ok: dict[str, str] = {}  # path or content -> sha256: a shared image is checked once
    features = _Curation()
    batch: list[tuple[SampleRecord, str, Candidate, str]] = []

    def settle() -> None:
        existing = _existing(project, [record.external_id for record, _, _, _ in batch])
        for record, digest, candidate, image_sha in batch:
            row = existing.get(record.external_id)
            merge = None
            if row is not None and row["content_hash"] != digest and reader.rows is not None:
                merge = _merge_plan(row["pk"], record, image_sha)
            if row is None:
                action = CREATE
            elif row["content_hash"] == digest:
                action = UNCHANGED
            elif isinstance(merge, tuple):
                references, metadata, merged_hash = merge
                if merged_hash == row["content_hash"]:
                    plan[record.external_id] = _Planned(UNCHANGED, merged_hash, candidate.line)
                else:
                    plan[record.external_id] = _Planned(
                        MERGE, merged_hash, candidate.line, references, metadata
                    )
                continue
            elif not update:
                problems.add(
                    Problem(
                        candidate.line,
                        candidate.names.get("external_id", "id"),
                        f"sample {record.external_id!r} already exists with "
                        f"{merge if isinstance(merge, str) else 'different content'}; "
                        "import with --update (Replace changed samples) to replace it",
                        candidate.unit,
                    )
                )
                continue
            else:
                action = UPDATE
                changes_role = row["split"] != record.split or row["is_seed"] != record.is_seed
                if changes_role and row["in_use"]:
                    problems.add(
                        Problem(
                            candidate.line,
                            "split" if row["split"] != record.split else "is_seed",
                            f"sample {record.external_id!r} already has votes or claimed slots; "
                            "its split and seed flag cannot change",
                            candidate.unit,
                        )
                    )
                    continue
            plan[record.external_id] = _Planned(action, digest, candidate.line)
        batch.clear()

    done = 0
    for candidate in reader.candidates():
        done += 1
        problems.extend(candidate.problems)
        if candidate.data is None:
            continue
        unit = candidate.unit

        record, field_problems = sample_validate(
            candidate.data, line=candidate.line, criteria=reader.criteria, names=candidate.names
        )
        for name, message in field_problems:
            problems.add(Problem(candidate.line, name, message, unit))
        id_name = candidate.names.get("external_id", "id")
        if record is None or candidate.problems:
            # Still claim the id, so that a later line repeating it is reported as a duplicate.
            raw_id = candidate.data.get("external_id", candidate.data.get("id"))
            if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
                seen.setdefault(str(raw_id).strip(), candidate.line)
            continue
        if record.external_id in seen:
            problems.add(
                Problem(
                    candidate.line,
                    id_name,
                    f"duplicate id {record.external_id!r} "
                    f"(first at {unit} {seen[record.external_id]})",
                    unit,
                )
            )
            continue
        seen[record.external_id] = candidate.line
        image_field = "image_path" if unit == "row" and record.image.path else "image"
        try:
            if record.image.data is not None:
                key = "sha256:" + hashlib.sha256(record.image.data).hexdigest()
            else:
                key = f"path:{candidate.source}:{record.image.path}"
            image_sha = images_ok.get(key)
            if image_sha is None:
                image_sha = image_inspect(reader.image_bytes(candidate, record)).sha256
                images_ok[key] = image_sha
        except (ImageRefError, ImageRejected) as exc:
            problems.add(Problem(candidate.line, image_field, str(exc), unit))
            continue
        for name, message in _curation_fields(record, filters, features):
            problems.add(Problem(candidate.line, name, message, unit))
        batch.append((record, record.content_hash(image_sha), candidate, image_sha))
        if len(batch) >= BATCH:
            settle()
        progress(done, total, "Validating")
    settle()
    progress(done, total, "Validating")

    removed: dict[str, int] = {}
    if filters and features.ids:
        result = curation.curate(
            curation.CurationFeatures(
                len_a=np.array(features.len_a),
                len_b=np.array(features.len_b),
                is_reasoning=np.array(features.reasoning),
                correct_a=np.array(features.correct_a),
                correct_b=np.array(features.correct_b),
                ensemble=np.array(features.ensemble, dtype=object).astype(str),
                exempt=np.array(features.exempt),
            ),
            filters,
        )
        removed = result.removed
        for external_id in np.array(features.ids, dtype=object)[~result.keep]:
            if external_id in plan:
                plan[external_id].action = FILTERED
    elif filters:
        removed = {name: 0 for name in filters}
    return plan, removed


def _write(
    reader: _Reader,
    *,
    project: Project,
    plan: dict[str, _Planned],
    report: ImportReport,
    progress: Progress,
    created_files: list[str],
    with_slots: bool = True,
) -> None:
    criteria = {(c.split, c.key): c for c in Criterion.objects.filter(project=project)}
    k = project.annotators_per_sample
    to_write = sum(1 for p in plan.values() if p.action in (CREATE, UPDATE, MERGE))
    done = 0
    creating: list[tuple[Sample, SampleRecord]] = []
    stored: dict[str, tuple] = {}

    def flush() -> None:
        if not creating:
            return
        Sample.objects.bulk_create([sample for sample, _ in creating], batch_size=BATCH)
        if with_slots:
            formal = [sample.pk for sample, record in creating if not record.is_seed]
            report.slots += slots_create(sample_ids=formal, k=k, fresh=True)
        labels = [
            ReferenceLabel(
                sample=sample,
                criterion=criteria[(record.split, key)],
                preference=preference,
                source=ReferenceLabel.Source.IMPORTED,
            )
            for sample, record in creating
            for key, preference in record.references.items()
        ]
        ReferenceLabel.objects.bulk_create(labels, batch_size=2000)
        report.reference_labels += len(labels)
        creating.clear()

    for candidate in reader.candidates():
        if candidate.data is None:
            continue
        record, _ = sample_validate(candidate.data, line=candidate.line, criteria=reader.criteria)
        planned = plan.get(record.external_id)
        if planned is None or planned.action in (UNCHANGED, FILTERED):
            continue
        if planned.action == MERGE:
            _merge_one(project, record, planned, criteria, report)
            done += 1
            progress(done, to_write, "Writing")
            continue
        image = reader.image_bytes(candidate, record)
        if planned.action == CREATE:
            sample = Sample(
                project=project,
                external_id=record.external_id,
                content_hash=planned.content_hash,
                **record.model_fields(),
            )
            _attach(sample, image, stored, created_files)
            creating.append((sample, record))
            report.created += 1
            if len(creating) >= BATCH:
                flush()
        else:
            _update_one(project, record, planned, image, stored, criteria, report, created_files)
        done += 1
        progress(done, to_write, "Writing")
    flush()
    progress(done, to_write, "Writing")


def _merge_one(
    project: Project,
    record: SampleRecord,
    planned: _Planned,
    criteria: dict[tuple[str, str], Criterion],
    report: ImportReport,
) -> None:
    """Add the new criteria (reference labels, question ids) of a stored prompt."""
    sample = Sample.objects.select_for_update().get(project=project, external_id=record.external_id)
    have = set(
        ReferenceLabel.objects.filter(sample=sample).values_list("criterion__key", flat=True)
    )
    labels = [
        ReferenceLabel(
            sample=sample,
            criterion=criteria[(record.split, key)],
            preference=preference,
            source=ReferenceLabel.Source.IMPORTED,
        )
        for key, preference in (planned.references or {}).items()
        if key not in have
    ]
    ReferenceLabel.objects.bulk_create(labels)
    sample.metadata = planned.metadata or {}
    sample.content_hash = planned.content_hash
    sample.save(update_fields=["metadata", "content_hash"])
    report.reference_labels += len(labels)
    report.merged += 1


def _attach(sample: Sample, data: bytes, stored: dict[str, tuple], created_files: list[str]):
    """Process and store the image once per import; later samples sharing it reuse the files."""
    digest = hashlib.sha256(data).hexdigest()
    known = stored.get(digest)
    if known is None:
        created_files.extend(sample_image_attach(sample=sample, processed=image_process(data)))
        stored[digest] = (
            sample.image.name,
            sample.image_web.name,
            sample.image_width,
            sample.image_height,
            sample.image_sha256,
        )
        return
    image, web, sample.image_width, sample.image_height, sample.image_sha256 = known
    sample.image.name = image
    sample.image_web.name = web


def _update_one(
    project: Project,
    record: SampleRecord,
    planned: _Planned,
    image: bytes,
    stored: dict[str, tuple],
    criteria: dict[tuple[str, str], Criterion],
    report: ImportReport,
    created_files: list[str],
) -> None:
    sample = Sample.objects.select_for_update().get(project=project, external_id=record.external_id)
    was_seed = sample.is_seed
    for name, value in record.model_fields().items():
        setattr(sample, name, value)
    sample.content_hash = planned.content_hash
    _attach(sample, image, stored, created_files)
    sample.save()
    if was_seed and not sample.is_seed:
        report.slots += slots_create(sample_ids=[sample.pk], k=project.annotators_per_sample)
    elif sample.is_seed and not was_seed:
        # Validation made sure no slot of this sample is claimed.
        Slot.objects.filter(sample=sample, annotator__isnull=True).delete()
    for key, preference in record.references.items():
        ReferenceLabel.objects.update_or_create(
            sample=sample,
            criterion=criteria[(record.split, key)],
            defaults={"preference": preference, "source": ReferenceLabel.Source.IMPORTED},
        )
        report.reference_labels += 1
    report.updated += 1


def samples_import(
    *,
    project: Project | str,
    path: str | Path | Sequence[str | Path],
    update: bool = False,
    filters: list[str] | str | None = None,
    progress: Progress | None = None,
    project_name: str | None = None,
    images: str | Path | None = None,
    slots: bool = True,
    label_scale: str | None = None,
) -> ImportReport:
    """Import the samples of ``path`` into ``project`` (a Project, or a slug created on write).

    ``path`` may list several Multi-Crit row files, read as one. ``images`` is an images root
    (a directory; for a zip, a folder inside it) tried before each file's own folder.
    ``slots=False`` creates no annotator slots (a published benchmark needs no annotation).
    ``label_scale`` is the scale of a project created by the import.

    Raises :class:`ImportRejected` listing every problem (with line or row and field) when the
    file is invalid; then nothing is written. ``progress(done, total, message)`` is called as
    the passes advance.
    """
    started = time.monotonic()
    progress = progress or _noop
    if isinstance(filters, str):
        filters = curation.parse_filters(filters)
    filters = list(filters or [])
    if isinstance(project, str):
        slug = project
        project = Project.objects.filter(slug=slug).first()
    else:
        slug = project.slug
    criteria = _criteria_of(project)
    problems = ProblemList()
    paths = [path] if isinstance(path, str | Path) else list(path)
    if not paths:
        raise ImportRejected([Problem(None, "file", "no file given")])
    with ExitStack() as stack:
        sources = [stack.enter_context(source_open(p, images=images)) for p in paths]
        reader = _Reader(sources, criteria, stack)
        total, read_problems = reader.prepare(progress)
        problems.extend(read_problems)
        plan, removed = _validate(
            reader,
            project=project,
            update=update,
            filters=filters,
            total=total,
            progress=progress,
            problems=problems,
        )
        problems.raise_if_any()
        report = ImportReport(format=reader.format, samples=len(plan), removed_by_filter=removed)
        report.unchanged = sum(1 for p in plan.values() if p.action == UNCHANGED)
        created_files: list[str] = []
        try:
            with transaction.atomic():
                if project is None:
                    project, _ = project_get_or_create(
                        slug=slug, name=project_name, label_scale=label_scale
                    )
                _write(
                    reader,
                    project=project,
                    plan=plan,
                    report=report,
                    progress=progress,
                    created_files=created_files,
                    with_slots=slots,
                )
        except BaseException:
            # The rows are rolled back; remove the image files this attempt added.
            for name in created_files:
                default_storage.delete(name)
            raise
    progress(report.samples, report.samples, "Done")
    report.seconds = time.monotonic() - started
    return report
