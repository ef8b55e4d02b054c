"""Build the export files of a project's current labels in a directory, streaming in chunks."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.files.storage import default_storage
from django.db.models import CharField, JSONField, Value

from aggregation.selectors.review import exportable_labels
from annotation.models import Project, ReferenceLabel, Sample, Vote
from annotation.pseudonyms import Pseudonyms, project_pseudonyms
from core.text import counted

from .rows import (
    PROVENANCE_PUBLISHED,
    SAMPLE_FIELDS,
    SCALE_FIELDS,
    SampleFields,
    has_conflict,
    row_build,
    scale_fields_build,
)
from .writers import JsonlWriter, ParquetRowWriter, SampleLines, ZipWriter, file_digest

CHUNK_SIZE = 500

# The files of a version, by DatasetFile kind, and the name each gets (``{stem}`` is
# ``<project slug>-v<number>``). The names are only on disk: no data file holds its own name.
FILE_NAMES = {
    "jsonl": "{stem}.jsonl",
    "jsonl_zip": "{stem}.zip",
    "parquet": "{stem}.parquet",
}
ProgressFn = Callable[..., None]
# Receives each chunk of rows and their JSONL lines (the same JSON, already encoded).
RowsSink = Callable[[list[dict[str, Any]], list[bytes]], None]


@dataclass
class SplitStats:
    rows: int = 0
    prompts: int = 0
    conflict_prompts: int = 0
    per_criterion: Counter = field(default_factory=Counter)
    per_provenance: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "prompts": self.prompts,
            "conflict_prompts": self.conflict_prompts,
            "conflict_share": round(self.conflict_prompts / self.prompts, 4)
            if self.prompts
            else None,
            "per_criterion": dict(sorted(self.per_criterion.items())),
            "provenance": dict(sorted(self.per_provenance.items())),
        }


@dataclass
class BuildResult:
    files: dict[str, Path]  # kind -> path
    digests: dict[str, tuple[str, int]]  # kind -> (sha256, size)
    per_split: dict[str, SplitStats]
    rows: int
    images: int
    annotators: int
    pseudonyms: Pseudonyms = field(default_factory=Pseudonyms)  # the names of this version

    def counts(self) -> dict[str, Any]:
        prompts = sum(s.prompts for s in self.per_split.values())
        conflicts = sum(s.conflict_prompts for s in self.per_split.values())
        provenance: Counter = Counter()
        for stats in self.per_split.values():
            provenance.update(stats.per_provenance)
        return {
            "rows": self.rows,
            "prompts": prompts,
            "images": self.images,
            "conflict_prompts": conflicts,
            "conflict_share": round(conflicts / prompts, 4) if prompts else None,
            "provenance": dict(sorted(provenance.items())),
            "per_split": {k: v.as_dict() for k, v in sorted(self.per_split.items())},
        }


# (key, lookup) of what a row needs from a label, its criterion and its sample.
_LABEL_FIELDS = (
    ("preference", "preference"),
    ("provenance", "provenance"),
    ("criterion", "criterion__key"),
    ("prompt_id", "sample__external_id"),
    ("split", "sample__split"),
    ("sample_id", "sample_id"),
    ("model_a", "sample__model_a"),
    ("model_b", "sample__model_b"),
    ("image_name", "sample__image"),
)
# Read only when needed: decoding JSON for every row costs more than any other field.
_VOTE_IDS = ("vote_ids", "vote_ids")
_SCALE_LABEL_FIELDS = (
    ("median_grade", "median_grade"),
    ("mean_score_a", "mean_score_a"),
    ("mean_score_b", "mean_score_b"),
    ("soft_label", "soft_label"),
)
_QUESTION_IDS = ("question_ids", "sample__metadata__question_ids")
# A sample's texts, read once for all its criteria rows (not once per row in the label query).
_TEXT_FIELDS = (("question", "question"), ("pred_a", "response_a"), ("pred_b", "response_b"))
# Labels read at once (the server cursor's fetch): their samples' texts take one query.
READ_SIZE = 4 * CHUNK_SIZE  # a multiple: the chunks (Parquet row groups) stay the same


#: Where a version's labels come from: the aggregated votes, or the published preferences
#: (reference labels imported from the published release, see services.benchmark).
LABELS_VOTES, LABELS_PUBLISHED = "votes", "published"


def published_labels(*, project: Project) -> Any:
    """The A/B reference labels of a published-benchmark project, in the export's row order."""
    return (
        ReferenceLabel.objects.filter(
            sample__project=project, sample__status="active", preference__in=["A", "B"]
        )
        .annotate(
            vote_ids=Value(None, output_field=JSONField()),
            provenance=Value(PROVENANCE_PUBLISHED, output_field=CharField()),
        )
        .order_by("sample__split", "sample__external_id", "criterion__order", "criterion__key")
    )


def _chunks(
    project: Project,
    include_seeds: bool,
    labels_from: str = LABELS_VOTES,
    include_votes: bool = False,
    scaled: bool = False,
) -> Iterator[list[dict[str, Any]]]:
    # Plain values, not model instances: building 100,000s of instances would dominate.
    fields = list(_LABEL_FIELDS)
    if labels_from == LABELS_PUBLISHED:
        source = published_labels(project=project)
        fields.append(_QUESTION_IDS)
    else:
        source = exportable_labels(project=project, include_seeds=include_seeds)
    if include_votes or scaled:
        fields.append(_VOTE_IDS)
    if scaled:
        fields.extend(_SCALE_LABEL_FIELDS)
    labels = source.values_list(*(lookup for _, lookup in fields))
    keys = [key for key, _ in fields]
    block: list[dict[str, Any]] = []
    for values in labels.iterator(chunk_size=READ_SIZE):
        block.append(dict(zip(keys, values, strict=True)))
        if len(block) >= READ_SIZE:
            yield from _with_texts(block)
            block = []
    if block:
        yield from _with_texts(block)


def _with_texts(block: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """The block's labels with their samples' texts (one query), in chunks of CHUNK_SIZE."""
    ids = {label["sample_id"] for label in block}
    texts = {
        pk: values
        for pk, *values in Sample.objects.filter(pk__in=ids).values_list(
            "pk", *(lookup for _, lookup in _TEXT_FIELDS)
        )
    }
    names = [key for key, _ in _TEXT_FIELDS]
    for label in block:
        label.update(zip(names, texts[label["sample_id"]], strict=True))
    for start in range(0, len(block), CHUNK_SIZE):
        yield block[start : start + CHUNK_SIZE]


def _votes_by_id(chunk: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    ids = [int(i) for label in chunk for i in (label["vote_ids"] or [])]
    if not ids:
        return {}
    values = Vote.objects.filter(id__in=ids).values(
        "id", "annotator_id", "choice", "grade", "score_a", "score_b", "rationale", "unsure"
    )
    return {v["id"]: v for v in values}


def _read_image(name: str) -> bytes:
    with default_storage.open(name, "rb") as fh:
        return fh.read()


def export_count(*, project: Project, include_seeds: bool, labels_from: str = LABELS_VOTES) -> int:
    if labels_from == LABELS_PUBLISHED:
        return published_labels(project=project).count()
    return exportable_labels(project=project, include_seeds=include_seeds).count()


def export_build(
    *,
    project: Project,
    out_dir: Path,
    stem: str,
    include_votes: bool = False,
    include_seeds: bool = False,
    on_rows: RowsSink | None = None,
    progress: ProgressFn | None = None,
    labels_from: str = LABELS_VOTES,
) -> BuildResult:
    """Write the JSONL, zip and Parquet files of the exportable labels into ``out_dir``.

    ``labels_from="published"`` exports the published preferences instead (no votes), each
    row keeping its published question id.

    ``on_rows(rows, lines)`` receives each chunk (to freeze it as DatasetRow records);
    ``progress(done, total, message)`` is called once per chunk.
    """
    # The total only tells the progress: no count query without it.
    total = (
        export_count(project=project, include_seeds=include_seeds, labels_from=labels_from)
        if progress is not None
        else 0
    )
    # Graded and pointwise rows carry the votes' grades or scores and the label's figures.
    scale = project.label_scale if labels_from == LABELS_VOTES else "pairwise"
    scaled = scale in SCALE_FIELDS
    paths = {kind: out_dir / pattern.format(stem=stem) for kind, pattern in FILE_NAMES.items()}
    pseudonyms = project_pseudonyms(project=project)
    per_split: dict[str, SplitStats] = defaultdict(SplitStats)
    prompt_key: tuple[str, str] | None = None
    prompt_prefs: list[str] = []
    done = images = 0

    def close_prompt() -> None:
        if prompt_key is not None:
            stats = per_split[prompt_key[0]]
            stats.prompts += 1
            stats.conflict_prompts += has_conflict(prompt_prefs)

    # Each prompt's image is read once per chunk: into the zip when its first row comes, and
    # from this cache (the chunk's images) into the chunk's Parquet row group.
    chunk_images: dict[str, bytes] = {}

    def prompt_image(name: str) -> bytes:
        if name not in chunk_images:
            chunk_images[name] = _read_image(name)
        return chunk_images[name]

    jsonl = JsonlWriter(paths["jsonl"])
    parquet = ParquetRowWriter(
        paths["parquet"], include_votes=include_votes, read_image=prompt_image, scale=scale
    )
    archive = ZipWriter(paths["jsonl_zip"])
    fields: SampleFields | None = None
    fields_of: int | None = None
    encoder = SampleLines(SAMPLE_FIELDS)  # a sample's texts serialised once for its rows
    try:
        for chunk in _chunks(project, include_seeds, labels_from, include_votes, scaled):
            chunk_images.clear()
            votes = _votes_by_id(chunk) if include_votes or scaled else {}
            rows: list[dict[str, Any]] = []
            lines: list[bytes] = []
            names: list[str] = []
            for label in chunk:
                if fields is None or label["sample_id"] != fields_of:
                    # A sample's criteria rows come together: its fields are made once.
                    fields_of = label["sample_id"]
                    fields = SampleFields(
                        prompt_id=label["prompt_id"],
                        split=label["split"],
                        question=label["question"],
                        pred_a=label["pred_a"],
                        pred_b=label["pred_b"],
                        model_a=label["model_a"],
                        model_b=label["model_b"],
                        image_name=label["image_name"] or "",
                    )
                row_votes = None
                label_votes = [
                    votes[int(i)] for i in label.get("vote_ids") or [] if int(i) in votes
                ]
                if include_votes:
                    row_votes = pseudonyms.votes(label_votes, scale=scale)
                question_ids = label.get("question_ids")
                row = row_build(
                    fields,
                    criterion=label["criterion"],
                    preference=label["preference"],
                    votes=row_votes,
                    provenance=label["provenance"],
                    question_id=question_ids.get(label["criterion"])
                    if labels_from == LABELS_PUBLISHED and isinstance(question_ids, dict)
                    else None,
                    scaled=scale_fields_build(scale, label, label_votes) if scaled else None,
                )
                key = (row["split"], row["prompt_id"])
                if key != prompt_key:
                    close_prompt()
                    prompt_key, prompt_prefs[:] = key, []
                    if row["image_path"]:
                        archive.add_image(row["image_path"], prompt_image(fields.image_name))
                        images += 1
                prompt_prefs.append(row["preference"])
                stats = per_split[row["split"]]
                stats.rows += 1
                stats.per_criterion[row["criterion"]] += 1
                stats.per_provenance[row["provenance"]] += 1
                rows.append(row)
                lines.append(encoder.line(row, fields))
                names.append(fields.image_name)
            if on_rows is not None:  # first: a sink may work in the background meanwhile
                on_rows(rows, lines)
            data = b"".join(lines)
            archive.add_rows(data)  # deflated in the background too
            jsonl.write_lines((data,))
            parquet.write(rows, names)
            done += len(rows)
            if progress is not None:
                progress(done, total, f"{done:,} of {counted(total, 'row')}")
        close_prompt()
        jsonl.close()
        if progress is not None:
            progress(done, total, "Adding the rows to the zip")
        archive.add_jsonl()
    finally:
        jsonl.close()
        parquet.close()
        archive.close()
    return BuildResult(
        files=paths,
        digests={kind: file_digest(path) for kind, path in paths.items()},
        per_split=dict(per_split),
        rows=done,
        images=images,
        annotators=len(pseudonyms),
        pseudonyms=pseudonyms,
    )
