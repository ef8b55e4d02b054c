"""The aggregation job's work: formal votes -> CriterionLabel rows and AgreementSnapshot per split.

Only formal votes (round 0) of active, non-seed samples count: seeds are calibration material and
calibration votes never become labels. A (sample, criterion) gets a label once it has at least one
formal vote; one with fewer than ``annotators_per_sample`` votes is "dropped: missing votes".

Idempotent: the labels are compared with the stored rows and only differences are written, in
one transaction per split, so a second run changes nothing (same ids, same rows) and a run after
new votes updates just the labels whose votes changed. Labels whose votes have gone (a retired
sample, a deleted vote) are removed. Aggregations of one project are serialised with a
PostgreSQL advisory lock, so two jobs never interleave their writes.

The figures layout of AgreementSnapshot is documented in :mod:`aggregation.agreement`.
"""

from __future__ import annotations

import contextlib
import json
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from annotation.models import Choice, Criterion, Job, Project, SampleStatus, Slot, Split, Vote
from annotation.services.jobs import job_create, job_enqueue
from annotation.splits import split_label
from core.text import counted

from .. import agreement, rules
from ..models import AgreementSnapshot, CriterionLabel

Progress = Callable[..., None]

CHUNK = 50_000
CODES = {Choice.A.value: 0, Choice.B.value: 1, Choice.TIE.value: 2}
_LOCK_CLASS = zlib.crc32(b"aggregation.project_aggregate") & 0x7FFFFFFF


def _no_progress(done: int, total: int | None = None, message: str | None = None) -> None:
    return None


@contextlib.contextmanager
def _project_lock(project: Project) -> Iterator[None]:
    """Serialise aggregations of one project (PostgreSQL session advisory lock)."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [_LOCK_CLASS, project.pk])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_CLASS, project.pk])


def _formal_votes(project: Project, split: str, criteria: list[Criterion]) -> Any:
    """Formal votes of the sample's current slot holders.

    When a slot is released, reassigned or reclaimed after its lease expired, the earlier
    holder's votes stay stored (history) but no longer count: a label is made from the votes of
    the annotators who hold the sample's slots now, so never from more than k people. Samples
    without any slot rows (data created outside the import) count every formal vote.
    """
    holder = Slot.objects.filter(sample=OuterRef("sample_id"), annotator=OuterRef("annotator_id"))
    any_slot = Slot.objects.filter(sample=OuterRef("sample_id"))
    return (
        Vote.objects.filter(
            sample__project=project,
            sample__split=split,
            sample__is_seed=False,
            sample__status=SampleStatus.ACTIVE,
            round=Vote.FORMAL_ROUND,
            criterion_id__in=[c.pk for c in criteria],
        )
        .filter(Exists(holder) | ~Exists(any_slot))
        .order_by()
    )


def _load_votes(
    queryset: Any, progress: Progress, done: int, total: int, label: str
) -> dict[str, np.ndarray]:
    """The votes as arrays, read in chunks with values_list."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("id", "sample", "crit", "ann", "code")}
    rows = queryset.values_list("id", "sample_id", "criterion_id", "annotator_id", "choice")
    chunk: list[tuple] = []

    def flush() -> None:
        if not chunk:
            return
        ids, samples, crits, anns, choices = zip(*chunk, strict=True)
        parts["id"].append(np.fromiter(ids, np.int64, len(ids)))
        parts["sample"].append(np.fromiter(samples, np.int64, len(ids)))
        parts["crit"].append(np.fromiter(crits, np.int64, len(ids)))
        parts["ann"].append(np.fromiter(anns, np.int64, len(ids)))
        parts["code"].append(np.fromiter((CODES[c] for c in choices), np.int8, len(ids)))
        chunk.clear()

    read = 0
    for row in rows.iterator(chunk_size=CHUNK):
        chunk.append(row)
        if len(chunk) == CHUNK:
            read += CHUNK
            flush()
            progress(done + read, total, f"{label}: read {counted(read, 'vote')}")
    flush()
    return {
        k: np.concatenate(v) if v else np.zeros(0, np.int8 if k == "code" else np.int64)
        for k, v in parts.items()
    }


def _label_rows(
    votes: dict[str, np.ndarray], criteria: list[Criterion], k: int
) -> tuple[dict[tuple[int, int], tuple], dict[str, np.ndarray]]:
    """The label of every (sample, criterion) with votes, keyed by (sample_id, criterion_id)."""
    position = {c.pk: i for i, c in enumerate(criteria)}
    n_crit = len(criteria)
    crit_pos = np.fromiter((position[c] for c in votes["crit"]), np.int64, len(votes["crit"]))
    keys = votes["sample"] * n_crit + crit_pos
    item_keys, item = np.unique(keys, return_inverse=True)
    n_items = len(item_keys)
    counts = np.bincount(item * 3 + votes["code"], minlength=n_items * 3).reshape(n_items, 3)
    outcome, preference = rules.classify(counts[:, 0], counts[:, 1], counts[:, 2], k=k)
    order = np.lexsort((votes["id"], item))
    bounds = np.cumsum(np.bincount(item, minlength=n_items))[:-1]
    vote_ids = np.split(votes["id"][order], bounds)
    item_sample = item_keys // n_crit
    item_crit = item_keys % n_crit
    crit_ids = [c.pk for c in criteria]
    labels: dict[tuple[int, int], tuple] = {}
    for i, (s, c, o, p, (a, b, t)) in enumerate(
        zip(
            item_sample.tolist(),
            item_crit.tolist(),
            outcome.tolist(),
            preference.tolist(),
            counts.tolist(),
            strict=True,
        )
    ):
        labels[(s, crit_ids[c])] = (
            rules.OUTCOMES[o],
            rules.PREFERENCES[p],
            a,
            b,
            t,
            # As JSON text: compared with the stored column cast to text, so an unchanged
            # label costs no JSON decoding on a re-run.
            json.dumps(vote_ids[i].tolist()),
        )
    arrays = {
        "item": item,
        "item_sample": item_sample,
        "item_crit": item_crit,
        "outcome": outcome,
    }
    return labels, arrays


def _agreement(
    votes: dict[str, np.ndarray],
    arrays: dict[str, np.ndarray],
    criteria: list[Criterion],
    k: int,
    **options: Any,
) -> dict[str, Any]:
    ids = np.unique(votes["ann"])
    names = dict(get_user_model().objects.filter(pk__in=ids.tolist()).values_list("pk", "username"))
    # Raters in username order, so the pairwise matrix reads alphabetically.
    by_name = sorted(range(len(ids)), key=lambda i: names[int(ids[i])])
    rank = np.empty(len(ids), np.int64)
    rank[by_name] = np.arange(len(ids))
    rater = rank[np.searchsorted(ids, votes["ann"])]
    n_items = len(arrays["item_sample"])
    matrix = np.full((len(ids), n_items), agreement.MISSING, dtype=np.int8)
    matrix[rater, arrays["item"]] = votes["code"]
    return agreement.agreement_figures(
        matrix,
        clusters=arrays["item_sample"],
        groups=arrays["item_crit"],
        group_names=[c.key for c in criteria],
        rater_names=[names[int(ids[i])] for i in by_name],
        m=k,
        **options,
    )


def _write_labels(
    *,
    project: Project,
    split: str,
    labels: dict[tuple[int, int], tuple],
    job: Job | None,
    now: Any,
) -> dict[str, int]:
    """Make the stored labels of the split equal ``labels``; call inside a transaction."""
    existing = (
        CriterionLabel.objects.filter(
            sample__project=project, sample__split=split, sample__is_seed=False
        )
        .annotate(vote_ids_text=Cast("vote_ids", TextField()))
        .values_list("id", *_COLUMNS[:-3], "vote_ids_text")
    )
    stale: list[int] = []
    changed: list[tuple[int, tuple[int, int], tuple]] = []
    seen: set[tuple[int, int]] = set()
    for pk, sample_id, criterion_id, *stored in existing.iterator(chunk_size=CHUNK):
        key = (sample_id, criterion_id)
        new = labels.get(key)
        if new is None:
            stale.append(pk)
            continue
        seen.add(key)
        if tuple(stored) != new:
            changed.append((pk, key, new))
    created = [(key, new) for key, new in labels.items() if key not in seen]
    for start in range(0, len(stale), 5000):
        CriterionLabel.objects.filter(pk__in=stale[start : start + 5000]).delete()
    if connection.vendor == "postgresql":
        _pg_write(changed, created, job, now)
    else:
        CriterionLabel.objects.bulk_update(
            [_label(key, new, job, now, pk=pk) for pk, key, new in changed],
            [*_COLUMNS[2:-2], "job", "computed_at"],
            batch_size=2000,
        )
        CriterionLabel.objects.bulk_create(
            [_label(key, new, job, now) for key, new in created], batch_size=5000
        )
    return {
        "created": len(created),
        "updated": len(changed),
        "deleted": len(stale),
        "unchanged": len(labels) - len(created) - len(changed),
    }


_COLUMNS = (
    "sample_id",
    "criterion_id",
    "outcome",
    "preference",
    "votes_a",
    "votes_b",
    "votes_tie",
    "vote_ids",
    "job_id",
    "computed_at",
)


def _pg_write(changed: list, created: list, job: Job | None, now: Any) -> None:
    """Write changed and new labels with COPY (Django's bulk_update costs seconds per 1,000)."""
    table = CriterionLabel._meta.db_table
    job_id = job.pk if job else None

    def row(key: tuple[int, int], new: tuple) -> list[Any]:
        outcome, preference, a, b, t, vote_ids = new
        return [*key, outcome, preference, a, b, t, vote_ids, job_id, now]

    columns = ", ".join(_COLUMNS)
    with connection.cursor() as cursor:
        raw = cursor.cursor
        if changed:
            raw.execute(
                "CREATE TEMP TABLE aggregation_label_changes (label_id bigint, "
                "sample_id bigint, criterion_id bigint, outcome text, preference text, "
                "votes_a integer, votes_b integer, votes_tie integer, vote_ids jsonb, "
                "job_id bigint, computed_at timestamptz) ON COMMIT DROP"
            )
            with raw.copy(
                f"COPY aggregation_label_changes (label_id, {columns}) FROM STDIN"
            ) as copy:
                for pk, key, new in changed:
                    copy.write_row([pk, *row(key, new)])
            assignments = ", ".join(f"{c} = u.{c}" for c in _COLUMNS[2:])
            raw.execute(
                f"UPDATE {table} t SET {assignments} "
                f"FROM aggregation_label_changes u WHERE t.id = u.label_id"
            )
            raw.execute("DROP TABLE aggregation_label_changes")
        if created:
            with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for key, new in created:
                    copy.write_row(row(key, new))


def _label(
    key: tuple[int, int], new: tuple, job: Job | None, now: Any, pk: int | None = None
) -> CriterionLabel:
    outcome, preference, a, b, t, vote_ids = new
    return CriterionLabel(
        pk=pk,
        sample_id=key[0],
        criterion_id=key[1],
        outcome=outcome,
        preference=preference,
        votes_a=a,
        votes_b=b,
        votes_tie=t,
        vote_ids=json.loads(vote_ids),
        job=job,
        computed_at=now,
    )


def project_aggregate(
    *,
    project: Project,
    split: str | None = None,
    job: Job | None = None,
    progress: Progress | None = None,
    min_overlap: int = agreement.DEFAULT_MIN_OVERLAP,
    n_boot: int = agreement.DEFAULT_N_BOOT,
    seed: int = 0,
) -> dict[str, Any]:
    """Aggregate the formal votes of a project (or one split) into labels and agreement figures.

    Returns a JSON-serialisable summary per split (label counts by outcome, rows created /
    updated / deleted / unchanged, kept samples) plus a one-line ``summary``.
    """
    progress = progress or _no_progress
    if split is not None and split not in Split.values:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(Split.values)}")
    splits = [split] if split else list(Split.values)
    k = project.annotators_per_sample
    criteria_by_split = {
        s: list(Criterion.objects.filter(project=project, split=s).order_by("order", "key"))
        for s in splits
    }
    splits = [s for s in splits if criteria_by_split[s]]
    total = sum(_formal_votes(project, s, criteria_by_split[s]).count() for s in splits)
    progress(0, total, "reading votes")
    done = 0
    out: dict[str, Any] = {"splits": {}}
    with _project_lock(project):
        for s in splits:
            criteria = criteria_by_split[s]
            label = split_label(s)
            votes = _load_votes(_formal_votes(project, s, criteria), progress, done, total, label)
            done += len(votes["id"])
            progress(done, total, f"{label}: labels and agreement")
            labels, arrays = _label_rows(votes, criteria, k)
            figures = _agreement(
                votes, arrays, criteria, k, min_overlap=min_overlap, n_boot=n_boot, seed=seed
            )
            now = timezone.now()
            figures = {"split": s, **figures, "computed_at": now.isoformat()}
            progress(done, total, f"{label}: writing {counted(len(labels), 'label')}")
            with transaction.atomic():
                writes = _write_labels(project=project, split=s, labels=labels, job=job, now=now)
                AgreementSnapshot.objects.update_or_create(
                    project=project,
                    split=s,
                    defaults={"figures": figures, "job": job, "computed_at": now},
                )
            n_samples = len(np.unique(arrays["item_sample"]))
            position = np.searchsorted(np.unique(arrays["item_sample"]), arrays["item_sample"])
            kept_samples = int(rules.samples_kept(position, arrays["outcome"], n_samples).sum())
            by_outcome = np.bincount(arrays["outcome"], minlength=len(rules.OUTCOMES))
            out["splits"][s] = {
                "votes": len(votes["id"]),
                "labels": len(labels),
                "outcomes": {o: int(n) for o, n in zip(rules.OUTCOMES, by_outcome, strict=True)},
                "kept": int(by_outcome[list(rules.KEPT)].sum()),
                "samples": n_samples,
                "samples_kept": kept_samples,
                **writes,
            }
    progress(total, total, "done")
    parts = [
        f"{split_label(s)}: {r['kept']:,} of {counted(r['labels'], 'label')} kept, "
        f"{r['samples_kept']:,} of {counted(r['samples'], 'sample')}"
        for s, r in out["splits"].items()
    ]
    out["summary"] = "; ".join(parts) if parts else "No criteria to aggregate."
    return out


def aggregation_start(*, project: Project, split: str | None = None, created_by: Any) -> Job:
    """Create an aggregation Job and enqueue its task once the transaction commits."""
    from ..tasks_aggregate import aggregate_project

    if split is not None and split not in Split.values:
        raise ValueError(f"unknown split {split!r}")
    scope = split_label(split) if split else "all splits"
    with transaction.atomic():
        job = job_create(
            kind=Job.Kind.AGGREGATE,
            project=project,
            created_by=created_by,
            params={"split": split},
            message=f"Queued: {scope}",
        )
        job_enqueue(job, aggregate_project)
    return job
