"""The aggregation job's work: formal votes -> CriterionLabel rows and AgreementSnapshot per split.

Only formal votes (round 0) of active, non-seed samples count: seeds are calibration material and
calibration votes never become labels. A (sample, criterion) gets a label once it has at least one
formal vote; one with fewer than ``annotators_per_sample`` votes is "dropped: missing votes".

Idempotent: the labels are compared with the stored rows and only differences are written, in
one transaction per split, so a second run changes nothing (same ids, same rows) and a run after
new votes updates just the labels whose votes changed. Labels whose votes have gone (a retired
sample, a deleted vote) are removed. Aggregations of one project are serialised with a
PostgreSQL advisory lock, so two jobs never interleave their writes.

On PostgreSQL a run first computes, in one query, a digest of everything the labels are made
from (:func:`_votes_state`); when it equals the one stored with the snapshots by the last run,
nothing is read or written but the snapshots' time. Votes are read as one value per column (see
core.db.read_int_columns), labels written by one binary COPY into a temporary table and one
INSERT / UPDATE (:func:`_copy_labels`; the columns' SQL is in ``_LABEL_SQL``), and the
dashboard's vote counts (counted in SQL) and label counts (made from the labels just written,
aggregation.label_counts) are stored for it (aggregation.services.dashboard).

The figures layout of AgreementSnapshot is documented in :mod:`aggregation.agreement`.

Graded and pointwise projects: the rule reads each vote's derived pairwise choice, as for a
pairwise project; each label also gets its median grade or mean scores and soft label
(:mod:`aggregation.scale_figures`), and a vote's grade or scores are part of its digest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    FilteredRelation,
    IntegerField,
    OuterRef,
    Q,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation import audit
from annotation.models import (
    Choice,
    Criterion,
    LabelScale,
    PanelLabel,
    Project,
    ProjectMember,
    RoutingPolicy,
    Sample,
    SampleStatus,
    Slot,
    Split,
    Vote,
)
from annotation.splits import split_label
from core.db import (
    JsonText,
    insert_rows,
    read_int_columns,
    temp_int_table,
    update_rows,
    without_jit,
)
from core.jobs import job_create, job_enqueue
from core.models import Job
from core.text import counted

from .. import agreement, label_counts, rules, scale_figures
from ..models import AgreementSnapshot, CriterionLabel
from .dashboard import dashboard_labels_refresh, dashboard_snapshot_refresh
from .ordinal_agreement import ordinal_snapshot_figures
from .review import review_figures_ensure, review_figures_refresh

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

    The holder's slot is a LEFT JOIN on (sample, annotator), unique among slots, so PostgreSQL
    hashes the slots once instead of probing them for every vote.
    """
    any_slot = Slot.objects.filter(sample=OuterRef("sample_id"))
    holder = FilteredRelation("sample__slots", condition=Q(sample__slots__annotator=F("annotator")))
    return (
        Vote.objects.annotate(holder_slot=holder)
        .filter(
            sample__project=project,
            sample__split=split,
            sample__is_seed=False,
            sample__status=SampleStatus.ACTIVE,
            round=Vote.FORMAL_ROUND,
            criterion_id__in=[c.pk for c in criteria],
        )
        .filter(Q(holder_slot__isnull=False) | ~Exists(any_slot))
        .order_by()
    )


def _load_votes(queryset: Any, scale: str = LabelScale.PAIRWISE) -> dict[str, np.ndarray]:
    """The votes as arrays (one value per column on PostgreSQL, see core.db.read_int_columns).

    Graded and pointwise projects also read each vote's grade or scores (``_scale_columns``).
    """
    coded = queryset.annotate(
        code=Case(
            *(When(choice=choice, then=Value(code)) for choice, code in CODES.items()),
            default=Value(-1),
            output_field=IntegerField(),
        ),
        **_scale_columns(scale),
    )
    columns = read_int_columns(
        coded,
        ["id", "sample_id", "criterion_id", "annotator_id", "code", *_scale_columns(scale)],
    )
    if (columns["code"] < 0).any():
        raise ValueError("a formal vote has a choice outside A, B and tie")
    return {
        "id": columns["id"],
        "sample": columns["sample_id"],
        "crit": columns["criterion_id"],
        "ann": columns["annotator_id"],
        "code": columns["code"].astype(np.int8),
        **{name: columns[name] for name in _scale_columns(scale)},
    }


#: The per-vote values a scale adds, read with NULL as scale_figures.MISSING.
_SCALE_FIELDS = {
    LabelScale.GRADED: ("grade",),
    LabelScale.POINTWISE: ("score_a", "score_b"),
}


def _scale_columns(scale: str) -> dict[str, Any]:
    """``{"v_grade": Coalesce(grade, MISSING), ...}`` for the scale (nothing for pairwise)."""
    return {
        f"v_{name}": Coalesce(name, Value(scale_figures.MISSING))
        for name in _SCALE_FIELDS.get(scale, ())
    }


def _scale_key(votes: dict[str, np.ndarray]) -> np.ndarray:
    """Per vote, its grade or scores as one small number (0 for pairwise) for the digest."""
    if "v_grade" in votes:
        return votes["v_grade"] + 100
    if "v_score_a" in votes:
        return (votes["v_score_a"] + 100) * 256 + votes["v_score_b"] + 100
    return np.zeros(len(votes["id"]), np.int64)


def _scale_figures(
    votes: dict[str, np.ndarray], item: np.ndarray, n_items: int
) -> scale_figures.ScaleFigures | None:
    """Median grade / mean scores and soft labels of every item (None for pairwise)."""
    if "v_grade" in votes:
        return scale_figures.graded_figures(item, votes["v_grade"], n_items)
    if "v_score_a" in votes:
        return scale_figures.pointwise_figures(
            item, votes["v_score_a"], votes["v_score_b"], n_items
        )
    return None


_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a well-spread 64-bit hash of each value (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


@dataclass
class _Items:
    """The (sample, criterion) items of one split's votes, with their labels and digests."""

    keys: np.ndarray  # sample_id * n_criteria + criterion position, sorted
    sample: np.ndarray
    crit_id: np.ndarray
    counts: np.ndarray  # (n, 3): A, B, tie
    outcome: np.ndarray
    preference: np.ndarray
    digest: np.ndarray  # int64: the votes (ids, choices, grades/scores) and k
    item: np.ndarray  # per vote, its item
    _ids_sorted: np.ndarray
    _bounds: np.ndarray
    provenance: np.ndarray | None = None  # rules.PROV_* codes; None: all human
    scaled: scale_figures.ScaleFigures | None = None  # graded / pointwise projects

    def arrays(self) -> label_counts.LabelArrays:
        """The items' labels as arrays (as written: ``_write_labels`` makes the table equal)."""
        return label_counts.LabelArrays(
            self.sample, self.crit_id, self.outcome, self.preference, self.provenance
        )

    def vote_ids_json(self, i: int) -> str:
        """The ids of item ``i``'s votes as JSON text, ascending."""
        return json.dumps(self._ids_sorted[self._bounds[i] : self._bounds[i + 1]].tolist())

    def values(self, i: int, job_id: int | None, now: Any) -> tuple:
        """Item ``i``'s label in the order of ``_COLUMNS``."""
        a, b, t = self.counts[i].tolist()
        return (
            int(self.sample[i]),
            int(self.crit_id[i]),
            rules.OUTCOMES[self.outcome[i]],
            rules.PREFERENCES[self.preference[i]],
            a,
            b,
            t,
            JsonText(self.vote_ids_json(i)),
            int(self.digest[i]),
            rules.PROVENANCES[self.provenance[i] if self.provenance is not None else 0],
            job_id,
            now,
            *(self.scaled.row(i) if self.scaled is not None else (None, None, None, None)),
        )


def _criterion_positions(criteria: list[Criterion], crit_ids: np.ndarray) -> np.ndarray:
    """The position of each criterion id in ``criteria``; -1 for ids not among them."""
    ids = np.array([c.pk for c in criteria], dtype=np.int64)
    order = np.argsort(ids)
    at = np.searchsorted(ids[order], crit_ids)
    at = np.minimum(at, len(ids) - 1)
    found = ids[order][at] == crit_ids
    return np.where(found, order[at], -1)


def _label_items(votes: dict[str, np.ndarray], criteria: list[Criterion], k: int) -> _Items:
    """The label of every (sample, criterion) with votes, by the protocol's rule (vectorised)."""
    n_crit = len(criteria)
    crit_pos = _criterion_positions(criteria, votes["crit"])
    keys = votes["sample"] * n_crit + crit_pos
    item_keys, item = np.unique(keys, return_inverse=True)
    n_items = len(item_keys)
    counts = np.bincount(item * 3 + votes["code"], minlength=n_items * 3).reshape(n_items, 3)
    outcome, preference = rules.classify(counts[:, 0], counts[:, 1], counts[:, 2], k=k)
    order = np.lexsort((votes["id"], item))
    sizes = np.bincount(item, minlength=n_items)
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    # A graded or pointwise vote's value is in the digest: a changed grade with the same
    # derived choice still rewrites the label's median and soft label.
    vote_hash = _mix((votes["id"] * 4 + votes["code"]) ^ (_scale_key(votes) << 40))[order]
    with np.errstate(over="ignore"):
        sums = np.add.reduceat(vote_hash, bounds[:-1]) if n_items else np.zeros(0, np.uint64)
        digest = _mix(sums + np.uint64(k)).view(np.int64)
    crit_ids = np.array([c.pk for c in criteria], dtype=np.int64)
    return _Items(
        keys=item_keys,
        sample=item_keys // n_crit,
        crit_id=crit_ids[item_keys % n_crit],
        counts=counts,
        outcome=outcome,
        preference=preference,
        digest=digest,
        item=item,
        _ids_sorted=votes["id"][order],
        _bounds=bounds,
        scaled=_scale_figures(votes, item, n_items),
    )


@dataclass
class _Policy:
    """What early stopping and routing change for one split's items (nothing when both off)."""

    on: bool
    settings: dict[str, Any]
    audited: np.ndarray  # per item: its sample is in the audit share
    early_stop: np.ndarray  # per item: early stopping applies
    panel: np.ndarray  # per item: the routable panel choice (rules.PANEL_*) where routing applies

    def digest_key(self, items: _Items) -> dict[str, Any]:
        """The settings and a hash of the per-item flags, for the agreement inputs' digest."""
        with np.errstate(over="ignore"):
            flags = _mix(items.keys * 8 + self._extra()).sum(dtype=np.uint64)
        return {**self.settings, "flags": int(flags)}

    def _extra(self) -> np.ndarray:
        return self.early_stop.astype(np.int64) + (self.panel.astype(np.int64) + 1) * 2


def policy_settings(project: Project) -> dict[str, Any]:
    """The project's early stopping and routing settings as they go into figures and manifests."""
    return {
        "early_stopping": bool(project.early_stopping),
        "routing_policy": str(project.routing_policy),
        "audit_share": float(project.audit_share),
        "audit_seed": int(project.audit_seed),
    }


def _policy(project: Project, split: str, criteria: list[Criterion], items: _Items) -> _Policy:
    """Per item: audit share, early stopping and the routable panel choice (one query each)."""
    n = len(items.keys)
    settings = policy_settings(project)
    routing_on = project.routing_policy == RoutingPolicy.PANEL_VERIFIER
    on = settings["early_stopping"] or routing_on
    none = np.full(n, rules.PANEL_NONE, np.int8)
    if not on:
        return _Policy(False, settings, np.zeros(n, bool), np.zeros(n, bool), none)
    samples = np.unique(items.sample)
    external: dict[int, str] = {}
    for start in range(0, len(samples), 10_000):
        chunk = samples[start : start + 10_000].tolist()
        external.update(Sample.objects.filter(pk__in=chunk).values_list("pk", "external_id"))
    in_audit = audit.audit_mask(
        project.audit_seed, (external[int(s)] for s in samples), settings["audit_share"]
    )
    audited = in_audit[np.searchsorted(samples, items.sample)] if n else np.zeros(0, bool)
    early_stop = np.full(n, settings["early_stopping"]) & ~audited
    panel = none.copy()
    if routing_on and n:
        rows = list(
            PanelLabel.objects.filter(
                sample__project=project, sample__split=split, routable=True
            ).values_list("sample_id", "criterion_id", "choice")
        )
        if rows:
            sample_ids = np.array([r[0] for r in rows], np.int64)
            position = _criterion_positions(criteria, np.array([r[1] for r in rows], np.int64))
            side = np.array([rules.PANEL_A if r[2] == Choice.A else rules.PANEL_B for r in rows])
            keys = sample_ids * len(criteria) + position
            at = np.minimum(np.searchsorted(items.keys, keys), n - 1)
            found = (position >= 0) & (items.keys[at] == keys)
            panel[at[found]] = side[found]
            panel[audited] = rules.PANEL_NONE  # the audit share always gets the full protocol
    return _Policy(True, settings, audited, early_stop, panel)


def _apply_policy(items: _Items, policy: _Policy, k: int) -> None:
    """Outcome, preference and provenance under the policy; the digest covers what changed it.

    An item the policy leaves alone (both off, or an audited sample) keeps its full-protocol
    label and digest, so switching the policy rewrites only the labels it can change.
    """
    if not policy.on:
        items.provenance = np.zeros(len(items.keys), np.int8)
        return
    items.outcome, items.preference, items.provenance = rules.classify_assisted(
        items.counts[:, 0],
        items.counts[:, 1],
        items.counts[:, 2],
        k=k,
        early_stop=policy.early_stop,
        panel=policy.panel,
    )
    extra = policy._extra()
    with np.errstate(over="ignore"):
        mixed = _mix(items.digest.view(np.uint64) ^ _mix(extra)).view(np.int64)
    items.digest = np.where(extra == 0, items.digest, mixed)


def _audit_figures(
    votes: dict[str, np.ndarray],
    items: _Items,
    policy: _Policy,
    criteria: list[Criterion],
    k: int,
    names: dict[int, str],
    options: dict[str, Any],
) -> dict[str, Any]:
    """The agreement figures of the audit share's items alone (for Fleiss' κ and α)."""
    keep = policy.audited[items.item]
    if not keep.any():
        none = agreement.undefined("no audit item")
        return {"fleiss": none, "alpha": none, "per_criterion": {}, "items": 0, "samples": 0}
    sub = {name: column[keep] for name, column in votes.items()}
    return _agreement(sub, _label_items(sub, criteria, k), criteria, k, names, **options)


def _inputs_digest(
    votes: dict[str, np.ndarray], criteria: list[Criterion], k: int, names: dict, options: dict
) -> str:
    """What the split's agreement figures are computed from; equal digests, equal figures."""
    with np.errstate(over="ignore"):
        key = votes["id"] * 4 + votes["code"]
        if "v_grade" in votes or "v_score_a" in votes:
            # A revised grade or score that keeps the A/B choice changes the ordinal figures.
            key = key * 65536 + _scale_key(votes)
        total = int(_mix(key).sum(dtype=np.uint64))
    raters = sorted((int(pk), names.get(int(pk), "")) for pk in np.unique(votes["ann"]))
    text = json.dumps(
        {
            "votes": total,
            "n": len(votes["id"]),
            "k": k,
            "criteria": [(c.pk, c.key) for c in criteria],
            "raters": raters,
            "options": options,
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _rater_names(votes: dict[str, np.ndarray]) -> dict[int, str]:
    ids = np.unique(votes["ann"]).tolist()
    return dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))


def _agreement(
    votes: dict[str, np.ndarray],
    items: _Items,
    criteria: list[Criterion],
    k: int,
    names: dict[int, str],
    **options: Any,
) -> dict[str, Any]:
    ids = np.unique(votes["ann"])
    # Raters in username order, so the pairwise matrix reads alphabetically.
    by_name = sorted(range(len(ids)), key=lambda i: names[int(ids[i])])
    rank = np.empty(len(ids), np.int64)
    rank[by_name] = np.arange(len(ids))
    rater = rank[np.searchsorted(ids, votes["ann"])]
    n_items = len(items.keys)
    matrix = np.full((len(ids), n_items), agreement.MISSING, dtype=np.int8)
    matrix[rater, items.item] = votes["code"]
    return agreement.agreement_figures(
        matrix,
        clusters=items.sample,
        groups=items.keys % len(criteria),
        group_names=[c.key for c in criteria],
        rater_names=[names[int(ids[i])] for i in by_name],
        m=k,
        **options,
    )


def _write_labels(
    *,
    project: Project,
    split: str,
    criteria: list[Criterion],
    items: _Items,
    job: Job | None,
    now: Any,
) -> dict[str, int]:
    """Make the stored labels of the split equal ``items``; call inside a transaction.

    Stored labels are matched to items by (sample, criterion) and compared by vote digest, so
    an unchanged item costs no write and no JSON; only new, changed and stale labels are
    written (COPY on PostgreSQL, see core.db).
    """
    stored = read_int_columns(
        CriterionLabel.objects.filter(
            sample__project=project, sample__split=split, sample__is_seed=False
        ).order_by(),
        ["id", "sample_id", "criterion_id", "vote_digest"],
    )
    position = _criterion_positions(criteria, stored["criterion_id"])
    stored_keys = stored["sample_id"] * len(criteria) + position
    at = np.minimum(np.searchsorted(items.keys, stored_keys), max(len(items.keys) - 1, 0))
    matched = (
        (position >= 0) & (items.keys[at] == stored_keys)
        if len(items.keys)
        else np.zeros(len(stored_keys), bool)
    )
    stale = stored["id"][~matched].tolist()
    changed_at = matched.copy()
    changed_at[matched] = items.digest[at[matched]] != stored["vote_digest"][matched]
    changed_pk = stored["id"][changed_at]
    changed_item = at[changed_at]
    has_label = np.zeros(len(items.keys), bool)
    has_label[at[matched]] = True
    created = np.flatnonzero(~has_label)
    for start in range(0, len(stale), 5000):
        CriterionLabel.objects.filter(pk__in=stale[start : start + 5000]).delete()
    job_id = job.pk if job else None
    if connection.vendor == "postgresql" and items.scaled is None:
        # Pairwise labels are all integers: the fast path. Graded and pointwise labels carry
        # floats and a JSON soft label and take the row-by-row COPY below.
        _copy_labels(items, changed_pk, changed_item, created, job_id, now)
    else:
        update_rows(
            CriterionLabel,
            _COLUMNS[2:],
            (
                (pk, items.values(i, job_id, now)[2:])
                for pk, i in zip(changed_pk.tolist(), changed_item.tolist(), strict=True)
            ),
        )
        insert_rows(
            CriterionLabel, _COLUMNS, (items.values(i, job_id, now) for i in created.tolist())
        )
    return {
        "created": len(created),
        "updated": len(changed_pk),
        "deleted": len(stale),
        "unchanged": len(items.keys) - len(created) - len(changed_pk),
    }


# How each label column is computed from the temporary table of _copy_labels (PostgreSQL).
_LABEL_SQL = {
    "sample_id": "u.sample_id",
    "criterion_id": "u.criterion_id",
    "outcome": "(%(outcomes)s::text[])[u.outcome + 1]",
    "preference": "(%(preferences)s::text[])[u.preference + 2]",
    "votes_a": "u.votes_a",
    "votes_b": "u.votes_b",
    "votes_tie": "u.votes_tie",
    "vote_ids": "to_jsonb(u.vote_ids)",
    "vote_digest": "u.vote_digest",
    "provenance": "(%(provenances)s::text[])[u.provenance + 1]",
    "job_id": "%(job)s",
    "computed_at": "%(now)s",
}


def _copy_labels(
    items: _Items,
    changed_pk: np.ndarray,
    changed_item: np.ndarray,
    created: np.ndarray,
    job_id: int | None,
    now: Any,
) -> None:
    """Write labels from arrays: one binary COPY into a temporary table, one UPDATE, one INSERT."""
    rows = np.concatenate([changed_item, created]).astype(np.int64)
    if not len(rows):
        return
    pk = np.concatenate([changed_pk, np.zeros(len(created), np.int64)])
    temp_int_table(
        "aggregation_label_rows",
        {
            "pk": pk,
            "sample_id": items.sample[rows],
            "criterion_id": items.crit_id[rows],
            "outcome": items.outcome[rows].astype(np.int64),
            "preference": items.preference[rows].astype(np.int64),
            "votes_a": items.counts[rows, 0],
            "votes_b": items.counts[rows, 1],
            "votes_tie": items.counts[rows, 2],
            "vote_digest": items.digest[rows],
            "provenance": (
                items.provenance[rows].astype(np.int64)
                if items.provenance is not None
                else np.zeros(len(rows), np.int64)
            ),
        },
        {"vote_ids": (items._ids_sorted, items._bounds[rows], items._bounds[rows + 1])},
    )
    table = connection.ops.quote_name(CriterionLabel._meta.db_table)
    columns = {CriterionLabel._meta.get_field(f).column: sql for f, sql in _LABEL_SQL.items()}
    params = {
        "outcomes": list(rules.OUTCOMES),
        "preferences": [rules.PREFERENCES[c] for c in sorted(rules.PREFERENCES)],
        "provenances": list(rules.PROVENANCES),
        "job": job_id,
        "now": now,
    }
    with connection.cursor() as cursor:
        if len(changed_pk):
            assignments = ", ".join(f"{c} = {sql}" for c, sql in list(columns.items())[2:])
            cursor.execute(
                f"UPDATE {table} SET {assignments} FROM aggregation_label_rows u "
                f"WHERE {table}.id = u.pk AND u.pk <> 0",
                params,
            )
        if len(created):
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) "
                f"SELECT {', '.join(columns.values())} FROM aggregation_label_rows u "
                f"WHERE u.pk = 0",
                params,
            )


_COLUMNS = (
    "sample_id",
    "criterion_id",
    "outcome",
    "preference",
    "votes_a",
    "votes_b",
    "votes_tie",
    "vote_ids",
    "vote_digest",
    "provenance",
    "job_id",
    "computed_at",
    "median_grade",
    "mean_score_a",
    "mean_score_b",
    "soft_label",
)


def _votes_state(project: Project, k: int, criteria: dict[str, list], options: dict) -> str:
    """A digest of everything labels and figures are made from, computed in SQL in one query.

    Counts, hash sums and latest changes of the project's formal votes, samples, slots and
    members' usernames and the judge panel's labels, plus k, the label scale, the early
    stopping and routing settings, the criteria and the options: any change to an input changes
    it, and it costs one pass over the project's rows without sending any of them.
    """
    if connection.vendor != "postgresql":
        return ""
    tables = {
        "vote": Vote._meta.db_table,
        "sample": Sample._meta.db_table,
        "slot": Slot._meta.db_table,
        "member": ProjectMember._meta.db_table,
        "user": get_user_model()._meta.db_table,
        "panel": PanelLabel._meta.db_table,
    }
    sql = """
        SELECT
          (SELECT concat_ws(':', count(*), sum(hashint8(v.id) # hashtext(
                              concat_ws(':', v.choice, v.grade, v.score_a, v.score_b))),
                            max(v.updated_at))
             FROM {vote} v JOIN {sample} s ON s.id = v.sample_id
            WHERE s.project_id = %(p)s AND v.round = 0),
          (SELECT concat_ws(':', count(*),
                            sum(hashtext(concat_ws(':', s.id, s.split, s.status, s.is_seed))),
                            max(s.updated_at))
             FROM {sample} s WHERE s.project_id = %(p)s),
          (SELECT concat_ws(':', count(*),
                            sum(hashint8(l.sample_id) # hashint8(coalesce(l.annotator_id, 0))))
             FROM {slot} l JOIN {sample} s ON s.id = l.sample_id WHERE s.project_id = %(p)s),
          (SELECT concat_ws(':', count(*), sum(hashtext(concat_ws(':', u.id, u.username))))
             FROM {member} m JOIN {user} u ON u.id = m.user_id WHERE m.project_id = %(p)s),
          (SELECT concat_ws(':', count(*),
                            sum(hashtext(concat_ws(':', pl.sample_id, pl.criterion_id,
                                                   pl.choice, pl.routable))),
                            max(pl.created_at))
             FROM {panel} pl JOIN {sample} s ON s.id = pl.sample_id
            WHERE s.project_id = %(p)s)
    """.format(**{key: connection.ops.quote_name(t) for key, t in tables.items()})
    with connection.cursor() as cursor:
        cursor.execute(sql, {"p": project.pk})
        row = cursor.fetchone()
    text = json.dumps(
        {
            "rows": [str(v) for v in row],
            "k": k,
            "scale": project.label_scale,
            "policy": policy_settings(project),
            "criteria": {s: [(c.pk, c.key) for c in cs] for s, cs in criteria.items()},
            "options": options,
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _labels_state(project: Project) -> str:
    """The project's stored labels in brief (count and digest sum), to see them left as written."""
    if connection.vendor != "postgresql":
        return ""
    row = CriterionLabel.objects.filter(sample__project=project).aggregate(
        n=Count("id"), digest=Sum("vote_digest")
    )
    return f"{row['n']}:{row['digest']}"


def _unchanged_run(
    snapshots: dict[str, AgreementSnapshot], job: Job | None, progress: Progress
) -> dict[str, Any]:
    """Nothing changed since the last run: keep every label and figure, stamp the snapshots."""
    total = sum(snapshot.result["votes"] for snapshot in snapshots.values())
    progress(0, total, "votes unchanged since the last aggregation")
    now = timezone.now()
    # The time says when the split was last aggregated (the revision window locks votes
    # aggregated since their last change).
    AgreementSnapshot.objects.filter(pk__in=[s.pk for s in snapshots.values()]).update(
        job=job, computed_at=now
    )
    out: dict[str, Any] = {"splits": {}}
    for split, snapshot in snapshots.items():
        result = dict(snapshot.result)
        out["splits"][split] = {
            **result,
            "agreement": "unchanged",
            "created": 0,
            "updated": 0,
            "deleted": 0,
            "unchanged": result["labels"],
        }
    progress(total, total, "done")
    return out


def _aggregate_split(
    *,
    project: Project,
    split: str,
    criteria: list[Criterion],
    votes: dict[str, np.ndarray],
    k: int,
    options: dict[str, Any],
    snapshot: AgreementSnapshot | None,
    job: Job | None,
    progress: Progress,
    written: dict[str, label_counts.LabelArrays],
) -> dict[str, Any]:
    """Labels and agreement figures of one split from its votes; returns the split's summary.

    The split's labels, as written, go into ``written`` as arrays.
    """
    label = split_label(split)
    progress(f"{label}: labels and agreement")
    items = _label_items(votes, criteria, k)
    policy = _policy(project, split, criteria, items)
    _apply_policy(items, policy, k)
    names = _rater_names(votes)
    scope = {"policy": policy.digest_key(items)} if policy.on else {}
    inputs = _inputs_digest(votes, criteria, k, names, {**options, **scope})
    unchanged = snapshot is not None and snapshot.figures.get("inputs_digest") == inputs
    now = timezone.now()
    figures = None
    if not unchanged:
        figures = _agreement(votes, items, criteria, k, names, **options)
        if policy.on:
            figures = agreement.audit_scoped(
                figures, _audit_figures(votes, items, policy, criteria, k, names, options)
            )
            figures["policy"] = policy.settings
        ordinal = ordinal_snapshot_figures(scale=project.label_scale, votes=votes, **options)
        if ordinal is not None:
            figures["ordinal"] = ordinal
        figures = {
            "split": split,
            **figures,
            "computed_at": now.isoformat(),
            "inputs_digest": inputs,
        }
    progress(f"{label}: writing labels")
    summary = _split_summary(votes, items)
    with transaction.atomic():
        writes = _write_labels(
            project=project, split=split, criteria=criteria, items=items, job=job, now=now
        )
        # The review queue's figures move with the labels, in the same transaction.
        review_figures_refresh(project=project, split=split, labels=items.arrays())
        if figures is not None:
            AgreementSnapshot.objects.update_or_create(
                project=project,
                split=split,
                defaults={
                    "figures": figures,
                    "job": job,
                    "computed_at": now,
                    "result": summary,
                    "inputs_state": "",
                },
            )
        else:
            # The figures stand; the time says when the split was last aggregated (the
            # revision window locks votes aggregated since their last change).
            AgreementSnapshot.objects.filter(pk=snapshot.pk).update(
                job=job, computed_at=now, result=summary, inputs_state=""
            )
    written[split] = items.arrays()
    return {**summary, "agreement": "unchanged" if unchanged else "computed", **writes}


def _split_summary(votes: dict[str, np.ndarray], items: _Items) -> dict[str, Any]:
    """Label counts by outcome and the samples kept, as the job's result reports them."""
    unique_samples, position = np.unique(items.sample, return_inverse=True)
    n_samples = len(unique_samples)
    kept_samples = int(rules.samples_kept(position, items.outcome, n_samples).sum())
    by_outcome = np.bincount(items.outcome, minlength=len(rules.OUTCOMES))
    return {
        "votes": len(votes["id"]),
        "labels": len(items.keys),
        "outcomes": {o: int(n) for o, n in zip(rules.OUTCOMES, by_outcome, strict=True)},
        "provenance": _provenance_counts(items),
        "kept": int(by_outcome[list(rules.KEPT)].sum()),
        "samples": n_samples,
        "samples_kept": kept_samples,
    }


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
    updated / deleted / unchanged, kept samples) plus a one-line ``summary``. When nothing the
    labels are made from changed since the last run (see :func:`_votes_state`), no vote is read.
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
    options = {"min_overlap": min_overlap, "n_boot": n_boot, "seed": seed}
    with _project_lock(project), without_jit():
        state = _votes_state(project, k, criteria_by_split, options)
        snapshots = {
            snapshot.split: snapshot
            for snapshot in AgreementSnapshot.objects.filter(project=project, split__in=splits)
        }
        current = f"{state}:{_labels_state(project)}" if state else ""
        if (
            current
            and splits
            and all(s in snapshots and snapshots[s].inputs_state == current for s in splits)
        ):
            out = _unchanged_run({s: snapshots[s] for s in splits}, job, progress)
        else:
            written: dict[str, label_counts.LabelArrays] = {}
            out = _aggregate_splits(
                project, splits, criteria_by_split, k, options, snapshots, job, progress, written
            )
            if state:
                AgreementSnapshot.objects.filter(project=project, split__in=splits).update(
                    inputs_state=f"{state}:{_labels_state(project)}"
                )
            # Every split's labels were just written from these arrays: count them here,
            # unless seed labels (never written here) count or a split was left out.
            whole = set(written) == set(Split.values) and not project.export_includes_seeds
            figures = label_counts.label_figures(written, False) if whole else None
            dashboard_labels_refresh(project=project, figures=figures)
        review_figures_ensure(project=project)
    parts = [
        f"{split_label(s)}: {r['kept']:,} of {counted(r['labels'], 'label')} kept, "
        f"{r['samples_kept']:,} of {counted(r['samples'], 'sample')}"
        for s, r in out["splits"].items()
    ]
    out["summary"] = "; ".join(parts) if parts else "No criteria to aggregate."
    return out


def _provenance_counts(items: _Items) -> dict[str, int]:
    """Labels per provenance (every provenance named, zeros included)."""
    codes = items.provenance if items.provenance is not None else np.zeros(0, np.int8)
    counts = np.bincount(codes, minlength=len(rules.PROVENANCES))
    return {p: int(n) for p, n in zip(rules.PROVENANCES, counts, strict=True)}


def _aggregate_splits(
    project: Project,
    splits: list[str],
    criteria_by_split: dict[str, list[Criterion]],
    k: int,
    options: dict[str, Any],
    snapshots: dict[str, AgreementSnapshot],
    job: Job | None,
    progress: Progress,
    written: dict[str, label_counts.LabelArrays],
) -> dict[str, Any]:
    """Store the dashboard's vote figures, read every split's votes, then label each split.

    ``written`` receives each split's labels as arrays, as they now stand in the table.
    """
    dashboard_snapshot_refresh(project=project)
    votes_by_split = {
        s: _load_votes(_formal_votes(project, s, criteria_by_split[s]), project.label_scale)
        for s in splits
    }
    total = sum(len(v["id"]) for v in votes_by_split.values())
    progress(0, total, "reading votes")
    done = 0
    out: dict[str, Any] = {"splits": {}}
    for s in splits:
        votes = votes_by_split[s]
        done += len(votes["id"])
        progress(done, total, f"{split_label(s)}: read {counted(len(votes['id']), 'vote')}")
        out["splits"][s] = _aggregate_split(
            project=project,
            split=s,
            criteria=criteria_by_split[s],
            votes=votes,
            k=k,
            options=options,
            snapshot=snapshots.get(s),
            job=job,
            progress=lambda message, done=done: progress(done, total, message),
            written=written,
        )
    progress(total, total, "done")
    return out


def aggregation_start(*, project: Project, split: str | None = None, created_by: Any) -> Job:
    """Create an aggregation Job and enqueue its task once the transaction commits."""
    from ..tasks import aggregate_project

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
