"""The figures of the lead's dashboard: progress, results and agreement of one project.

Every figure comes from a fixed number of aggregate queries, whatever the number of samples or
votes: per-sample figures (complete samples, criterion conflicts) are grouped inside the
database in a derived table, and only the per-split / per-annotator totals reach Python.
Seed samples are calibration material: progress counts formal work only (round 0, non-seed);
results follow the project's ``export_includes_seeds`` setting, like the export.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, time
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from aggregation.selectors.review import labels_with_review_state
from annotation import tiecap
from annotation.models import (
    Choice,
    Criterion,
    ProblemReport,
    Project,
    ProjectMember,
    Sample,
    SampleStatus,
    Skip,
    Slot,
    Split,
    Vote,
)
from annotation.services.routing import policy_on

from ..models import (
    AgreementSnapshot,
    CriterionLabel,
    DashboardSnapshot,
    Outcome,
    ReviewDecision,
)
from .activity import Throughput, throughput, throughput_counts, votes_since
from .savings import saved_per_split

STATISTICS = (
    ("cohen", "Cohen's κ (mean pairwise)"),
    ("fleiss", "Fleiss' κ"),
    ("alpha", "Krippendorff's α"),
)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _start_of_today() -> datetime:
    today = timezone.localdate()
    return timezone.make_aware(datetime.combine(today, time.min))


def _fetch(sql: str, params: list[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _id_bounds(upto: int | None, after: int | None = None) -> tuple[str, list[int]]:
    """SQL (on ``v.id``) and parameters keeping the votes with ``after < id <= upto``."""
    clause, params = "", []
    if after is not None:
        clause += " AND v.id > %s"
        params.append(after)
    if upto is not None:
        clause += " AND v.id <= %s"
        params.append(upto)
    return clause, params


def _sample_completion(project: Project, upto: int | None = None) -> dict[str, dict[int, int]]:
    """Per split, {number of criteria with the full k formal votes: number of samples with
    formal votes}, from one pass over the votes' unique index.

    The per-(sample, criterion) counts need no vote column outside ``vote_unique`` (sample,
    criterion, annotator, round), so PostgreSQL reads them from that index in sample order,
    merge-joins the samples and streams the grouping without a hash table or a sort.
    """
    vote_t, sample_t = Vote._meta.db_table, Sample._meta.db_table
    bounds, bound_params = _id_bounds(upto)
    # The split rides along as MIN(s.split) (one value per sample) so that no second join
    # to the samples is needed once the votes are grouped.
    sql = f"""
        SELECT split, full_n, COUNT(*) FROM (
            SELECT per_crit.sample_id, MIN(per_crit.split) AS split,
                   SUM(CASE WHEN per_crit.n >= %s THEN 1 ELSE 0 END) AS full_n
            FROM (
                SELECT v.sample_id, v.criterion_id, MIN(s.split) AS split, COUNT(*) AS n
                FROM {vote_t} v JOIN {sample_t} s ON s.id = v.sample_id
                WHERE v.round = %s AND s.project_id = %s AND s.is_seed = %s AND s.status = %s
                      {bounds}
                GROUP BY v.sample_id, v.criterion_id
            ) per_crit
            GROUP BY per_crit.sample_id
        ) per_sample
        GROUP BY split, full_n
    """
    params = [
        project.annotators_per_sample,
        Vote.FORMAL_ROUND,
        project.pk,
        False,
        SampleStatus.ACTIVE,
        *bound_params,
    ]
    out: dict[str, dict[int, int]] = {}
    for split, full_n, n in _fetch(sql, params):
        out.setdefault(split, {})[int(full_n)] = int(n)
    return out


def _label_sample_figures(project: Project) -> dict[str, dict[str, int]]:
    """Per split: samples with labels, kept samples, samples with a criterion conflict."""
    label_t, sample_t = CriterionLabel._meta.db_table, Sample._meta.db_table
    kept = list(Outcome.kept())
    seed_clause = "" if project.export_includes_seeds else "AND s.is_seed = %s"
    sql = f"""
        SELECT split, COUNT(*),
               SUM(CASE WHEN n_a + n_b > 0 THEN 1 ELSE 0 END),
               SUM(CASE WHEN n_a > 0 AND n_b > 0 THEN 1 ELSE 0 END)
        FROM (
            SELECT l.sample_id, s.split,
                   SUM(CASE WHEN l.outcome IN (%s, %s) AND l.preference = %s THEN 1 ELSE 0 END)
                       AS n_a,
                   SUM(CASE WHEN l.outcome IN (%s, %s) AND l.preference = %s THEN 1 ELSE 0 END)
                       AS n_b
            FROM {label_t} l JOIN {sample_t} s ON s.id = l.sample_id
            WHERE s.project_id = %s AND s.status = %s {seed_clause}
            GROUP BY l.sample_id, s.split
        ) per_sample
        GROUP BY split
    """
    params: list[Any] = [*kept, Choice.A, *kept, Choice.B, project.pk, SampleStatus.ACTIVE]
    if not project.export_includes_seeds:
        params.append(False)
    return {
        split: {"labelled": int(n), "kept": int(k or 0), "conflict": int(c or 0)}
        for split, n, k, c in _fetch(sql, params)
    }


@dataclass
class Dashboard:
    splits: list[dict[str, Any]]
    totals: dict[str, Any]
    annotators: list[dict[str, Any]]
    results: list[dict[str, Any]]
    agreement: list[dict[str, Any]]
    tie_cap: float
    computed_at: datetime | None
    # The oldest snapshot's time: votes cast or revised after it are not in every figure yet.
    oldest_computed_at: datetime | None = None
    stale_votes: int = 0
    throughput: Throughput | None = None


_VOTE_COUNTS = ("done", "ties", "today")


def _per_annotator_pg(
    project: Project, today: datetime, upto: int | None = None, after: int | None = None
) -> dict[int, dict[str, Any]]:
    """The PostgreSQL form of ``_per_annotator``: grouped by annotator id alone, so the sort
    that PERCENTILE_CONT needs carries no username, which is joined to the nine-odd rows after.
    ``upto`` / ``after`` keep the votes of that id range."""
    vote_t, sample_t = Vote._meta.db_table, Sample._meta.db_table
    user_t = Vote._meta.get_field("annotator").related_model._meta.db_table
    columns, params = [], []
    for value, _ in Split.choices:
        columns += [
            f"COUNT(*) FILTER (WHERE s.split = %s) AS done_{value}",
            f"COUNT(*) FILTER (WHERE s.split = %s AND v.choice = %s) AS ties_{value}",
            f"COUNT(*) FILTER (WHERE s.split = %s AND v.created_at >= %s) AS today_{value}",
        ]
        params += [value, value, Choice.TIE, value, today]
    bounds, bound_params = _id_bounds(upto, after)
    sql = f"""
        SELECT u.username, per_annotator.* FROM (
            SELECT v.annotator_id, {", ".join(columns)},
                   PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY v.seconds) AS median
            FROM {vote_t} v JOIN {sample_t} s ON s.id = v.sample_id
            WHERE s.project_id = %s AND s.is_seed = %s AND s.status = %s AND v.round = %s
                  {bounds}
            GROUP BY v.annotator_id
        ) per_annotator JOIN {user_t} u ON u.id = per_annotator.annotator_id
    """
    params += [project.pk, False, SampleStatus.ACTIVE, Vote.FORMAL_ROUND, *bound_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [col[0] for col in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    out = {}
    for row in rows:
        row["annotator__username"] = row.pop("username")
        out[row["annotator_id"]] = row
    return out


def _per_annotator(project: Project, votes: Any, today: datetime) -> dict[int, dict[str, Any]]:
    """Formal vote, tie and today counts per split and the median seconds per vote, per
    annotator, in one grouped pass over the votes (the split totals are their sums)."""
    if connection.vendor == "postgresql":
        rows = _per_annotator_pg(project, today)
    else:
        counts: dict[str, Any] = {}
        for value, _ in Split.choices:
            in_split = Q(sample__split=value)
            counts[f"done_{value}"] = Count("id", filter=in_split)
            counts[f"ties_{value}"] = Count("id", filter=in_split & Q(choice=Choice.TIE))
            counts[f"today_{value}"] = Count("id", filter=in_split & Q(created_at__gte=today))
        rows = {
            r["annotator_id"]: r
            for r in votes.values("annotator_id", "annotator__username")
            .annotate(**counts)
            .order_by()
        }
        seconds: dict[int, list[float]] = {}
        for annotator_id, value in votes.values_list("annotator_id", "seconds").iterator():
            seconds.setdefault(annotator_id, []).append(value)
        for annotator_id, row in rows.items():
            row["median"] = statistics.median(seconds[annotator_id])
    return _with_totals(rows)


def _with_totals(rows: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Add each annotator's counts over all splits (``done``, ``ties``, ``today``)."""
    for row in rows.values():
        for key in _VOTE_COUNTS:
            row[key] = sum(row[f"{key}_{value}"] for value, _ in Split.choices)
    return rows


def _split_votes(per_annotator: dict[int, dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per split: formal votes, ties and votes cast today, summed over the annotators."""
    return {
        value: {
            key: sum(r[f"{key}_{value}"] for r in per_annotator.values()) for key in _VOTE_COUNTS
        }
        for value, _ in Split.choices
    }


def _criteria_per_split(criteria: list[Criterion]) -> dict[str, int]:
    """The number of criteria of each split."""
    n_crit: dict[str, int] = {}
    for c in criteria:
        n_crit[c.split] = n_crit.get(c.split, 0) + 1
    return n_crit


def _formal_votes(project: Project) -> Any:
    """The project's formal votes: round 0 on active, non-seed samples."""
    return Vote.objects.filter(
        sample__project=project,
        sample__is_seed=False,
        sample__status=SampleStatus.ACTIVE,
        round=Vote.FORMAL_ROUND,
    )


def _policy_progress(project: Project) -> tuple[dict[str, int], dict[str, int]]:
    """Per split: the formal samples with no open slot, and the votes saved by the labels."""
    open_slot = Slot.objects.filter(sample=OuterRef("pk"), completed_at__isnull=True)
    settled = dict(
        Sample.objects.filter(project=project, is_seed=False, status=SampleStatus.ACTIVE)
        .exclude(Exists(open_slot))
        .values("split")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("split", "n")
    )
    return settled, saved_per_split(project=project)


def split_progress(
    project: Project,
    n_crit: dict[str, int],
    split_votes: dict[str, dict[str, int]],
    completion: dict[str, dict[int, int]] | None = None,
) -> list[dict[str, Any]]:
    """Per split with samples or criteria: samples complete, in progress, untouched; votes."""
    k = project.annotators_per_sample
    formal_samples = Sample.objects.filter(
        project=project, is_seed=False, status=SampleStatus.ACTIVE
    )
    sample_counts = dict(
        formal_samples.values("split").annotate(n=Count("id")).order_by().values_list("split", "n")
    )
    if completion is None:
        completion = _sample_completion(project)
    policy = _policy_progress(project) if policy_on(project) else None
    splits: list[dict[str, Any]] = []
    for value, label in Split.choices:
        total = sample_counts.get(value, 0)
        if not total and not n_crit.get(value):
            continue
        v = split_votes[value]
        full = completion.get(value, {})
        touched = sum(full.values())
        needed_criteria = n_crit.get(value, 0)
        complete = sum(
            n for full_n, n in full.items() if needed_criteria and full_n >= needed_criteria
        )
        needed = total * n_crit.get(value, 0) * k
        if policy is not None:
            # Under early stopping or routing a sample is complete when no slot is left open,
            # and the votes the last aggregation found unneeded are not counted as needed.
            complete = min(policy[0].get(value, 0), touched)
            needed = max(needed - policy[1].get(value, 0), v["done"])
        splits.append(
            {
                "split": value,
                "label": label,
                "criteria": n_crit.get(value, 0),
                "samples": total,
                "complete": complete,
                "in_progress": touched - complete,
                "untouched": total - touched,
                "votes_done": v["done"],
                "votes_needed": needed,
                "votes_share": _share(v["done"], needed),
                "ties": v["ties"],
                "tie_rate": _share(v["ties"], v["done"]),
                "votes_today": v["today"],
            }
        )
    return splits


def progress_totals(splits: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-split progress summed over the splits, with its shares."""
    totals: dict[str, Any] = {
        key: sum(s[key] for s in splits)
        for key in (
            "samples",
            "complete",
            "in_progress",
            "untouched",
            "votes_done",
            "votes_needed",
            "ties",
            "votes_today",
        )
    }
    totals["votes_share"] = _share(totals["votes_done"], totals["votes_needed"])
    totals["complete_share"] = _share(totals["complete"], totals["samples"])
    totals["in_progress_share"] = _share(totals["in_progress"], totals["samples"])
    totals["tie_rate"] = _share(totals["ties"], totals["votes_done"])
    return totals


def _assigned_votes(project: Project, n_crit: dict[str, int]) -> dict[int, int]:
    """Per annotator: the formal votes their slots ask for (slots times the split's criteria)."""
    assigned: dict[int, int] = {}
    slot_rows = (
        Slot.objects.filter(
            sample__project=project,
            sample__is_seed=False,
            sample__status=SampleStatus.ACTIVE,
            annotator__isnull=False,
        )
        .values("annotator_id", "sample__split")
        .annotate(n=Count("id"))
        .order_by()
    )
    for r in slot_rows:
        assigned[r["annotator_id"]] = assigned.get(r["annotator_id"], 0) + r["n"] * n_crit.get(
            r["sample__split"], 0
        )
    return assigned


def _flags(project: Project) -> dict[int, int]:
    """Per reporter: the number of problem reports on the project's samples."""
    return dict(
        ProblemReport.objects.filter(sample__project=project)
        .values("reporter_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("reporter_id", "n")
    )


def _skips(project: Project) -> dict[int, int]:
    """Per annotator: how many times they skipped a formal item (annotation.models.Skip)."""
    return dict(
        Skip.objects.filter(sample__project=project, round=0)
        .values("annotator_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("annotator_id", "n")
    )


def _annotator_agreement(
    username: str, snapshots: dict[str, AgreementSnapshot]
) -> list[dict[str, Any]]:
    """Per split with a snapshot: the annotator's Cohen's κ against the others (a raw stat)."""
    agreement = []
    for value, label in Split.choices:
        snap = snapshots.get(value)
        if snap is None:
            continue
        per = (snap.figures.get("per_annotator") or {}).get(username)
        agreement.append(
            {
                "split": value,
                "label": label,
                "cohen_vs_others": (per or {}).get("cohen_vs_others")
                or {"value": None, "undefined_reason": "no shared items in this split"},
                "items": (per or {}).get("items"),
            }
        )
    return agreement


def annotator_figures(
    project: Project,
    per_annotator: dict[int, dict[str, Any]],
    n_crit: dict[str, int],
    snapshots: dict[str, AgreementSnapshot],
) -> list[dict[str, Any]]:
    """Every active member, plus anyone who voted or holds a slot, by username."""
    members = {
        m.user_id: m.user.username
        for m in ProjectMember.objects.filter(project=project, is_active=True).select_related(
            "user"
        )
    }
    assigned = _assigned_votes(project, n_crit)
    flags = _flags(project)
    skips = _skips(project)
    names = dict(members)
    for uid, r in per_annotator.items():
        names.setdefault(uid, r["annotator__username"])
    annotators = []
    for uid, username in sorted(names.items(), key=lambda item: item[1]):
        r = per_annotator.get(uid, {"done": 0, "ties": 0, "today": 0})
        tie_rate = _share(r["ties"], r["done"])
        annotators.append(
            {
                "id": uid,
                "username": username,
                "is_member": uid in members,
                "assigned": assigned.get(uid, 0),
                "done": r["done"],
                "progress": _share(r["done"], assigned.get(uid, 0)),
                "ties": r["ties"],
                "tie_rate": tie_rate,
                "tie_cap_used": tiecap.share_of_cap(
                    ties=r["ties"], votes=r["done"], cap=project.tie_cap
                ),
                "over_cap": tiecap.at_cap(ties=r["ties"], votes=r["done"], cap=project.tie_cap),
                "median_seconds": r.get("median"),
                "flags": flags.get(uid, 0),
                "skips": skips.get(uid, 0),
                "votes_today": r["today"],
                "agreement": _annotator_agreement(username, snapshots),
            }
        )
    return annotators


def vote_figures_compute(project: Project, upto: int) -> dict[str, Any]:
    """The figures counted over every formal vote with id <= ``upto`` (PostgreSQL), as JSON.

    What DashboardSnapshot stores: per annotator the vote, tie and today counts per split and
    the median seconds; per split the samples by number of complete criteria; the votes per day
    of the throughput window. The dashboard adds the votes since (:func:`_vote_figures`).
    """
    rows = _per_annotator_pg(project, _start_of_today(), upto=upto)
    return {
        "date": timezone.localdate().isoformat(),
        "annotators": {str(uid): row for uid, row in rows.items()},
        "completion": {
            split: {str(full): n for full, n in counts.items()}
            for split, counts in _sample_completion(project, upto=upto).items()
        },
        "days": throughput_counts(project=project, upto=upto),
    }


def _completion_since(project: Project, after: int) -> list[tuple[str, bool, int, int, int]]:
    """The samples voted on since vote ``after``: per (split, had votes before, complete
    criteria before, complete criteria now), how many; read for those samples alone."""
    vote_t, sample_t = Vote._meta.db_table, Sample._meta.db_table
    k = project.annotators_per_sample
    sql = f"""
        SELECT split, has_old, full_old, full_new, COUNT(*) FROM (
            SELECT per_crit.sample_id, MIN(per_crit.split) AS split,
                   SUM(per_crit.n_old) > 0 AS has_old,
                   SUM(CASE WHEN per_crit.n_old >= %s THEN 1 ELSE 0 END) AS full_old,
                   SUM(CASE WHEN per_crit.n >= %s THEN 1 ELSE 0 END) AS full_new
            FROM (
                SELECT v.sample_id, v.criterion_id, MIN(s.split) AS split, COUNT(*) AS n,
                       COUNT(*) FILTER (WHERE v.id <= %s) AS n_old
                FROM {vote_t} v JOIN {sample_t} s ON s.id = v.sample_id
                WHERE v.round = %s AND s.project_id = %s AND s.is_seed = %s AND s.status = %s
                  AND v.sample_id IN (
                      SELECT n.sample_id FROM {vote_t} n WHERE n.id > %s AND n.round = %s
                  )
                GROUP BY v.sample_id, v.criterion_id
            ) per_crit
            GROUP BY per_crit.sample_id
        ) per_sample
        GROUP BY split, has_old, full_old, full_new
    """
    params = [k, k, after, Vote.FORMAL_ROUND, project.pk, False, SampleStatus.ACTIVE]
    params += [after, Vote.FORMAL_ROUND]
    return _fetch(sql, params)


def _merge_annotators(
    stored: dict[str, Any], since: dict[int, dict[str, Any]]
) -> dict[int, dict[str, Any]]:
    """Stored per-annotator counts plus the votes since; "today" only if stored today."""
    same_day = stored.get("date") == timezone.localdate().isoformat()
    rows: dict[int, dict[str, Any]] = {}
    for uid, row in stored.get("annotators", {}).items():
        row = dict(row)
        if not same_day:
            for value, _ in Split.choices:
                row[f"today_{value}"] = 0
        rows[int(uid)] = row
    for uid, new in since.items():
        row = rows.get(uid)
        if row is None:
            rows[uid] = dict(new)
            continue
        for value, _ in Split.choices:
            for key in _VOTE_COUNTS:
                row[f"{key}_{value}"] += new[f"{key}_{value}"]
        row["annotator__username"] = new["annotator__username"]
    return _with_totals(rows)


def _merge_completion(
    stored: dict[str, Any], since: list[tuple[str, bool, int, int, int]]
) -> dict[str, dict[int, int]]:
    """Stored samples by complete criteria, with the samples voted on since moved over."""
    out = {
        split: {int(full): n for full, n in counts.items()}
        for split, counts in stored.get("completion", {}).items()
    }
    for split, has_old, full_old, full_new, n in since:
        counts = out.setdefault(split, {})
        if has_old:
            counts[int(full_old)] = counts.get(int(full_old), 0) - int(n)
        counts[int(full_new)] = counts.get(int(full_new), 0) + int(n)
    return out


@dataclass
class _VoteFigures:
    per_annotator: dict[int, dict[str, Any]]
    completion: dict[str, dict[int, int]] | None
    throughput: Throughput
    upto: int | None = None  # the last vote id of the stored figures (None: nothing stored)
    stored_at: datetime | None = None  # when that id was the last one


def _vote_figures(project: Project) -> _VoteFigures:
    """The vote counts: stored figures plus the votes since, or every vote when none is stored.

    Votes deleted, revised or moved out (a retired sample) after the stored figures show from
    the next aggregation, which stores them again.
    """
    stored = None
    if connection.vendor == "postgresql":
        stored = DashboardSnapshot.objects.filter(project=project).first()
    if stored is None:
        per_annotator = _per_annotator(project, _formal_votes(project), _start_of_today())
        return _VoteFigures(per_annotator, None, throughput(project=project))
    upto = stored.upto_vote_id
    since = _per_annotator_pg(project, _start_of_today(), after=upto)
    return _VoteFigures(
        per_annotator=_merge_annotators(stored.figures, since),
        completion=_merge_completion(stored.figures, _completion_since(project, upto)),
        throughput=throughput(project=project, base=stored.figures.get("days"), after=upto),
        upto=upto,
        stored_at=stored.computed_at,
    )


def _stale_votes(project: Project, oldest: datetime | None, votes: _VoteFigures) -> int:
    """Votes cast or revised since the oldest agreement snapshot (0 when there is none)."""
    if oldest is None:
        return 0
    # The stored figures' votes were all cast before ``oldest`` when stored before it.
    known = votes.stored_at is not None and votes.stored_at <= oldest
    return votes_since(project=project, since=oldest, after_id=votes.upto if known else None)


def dashboard_figures(*, project: Project) -> Dashboard:
    """Every number the dashboard shows, in a constant number of queries.

    On PostgreSQL the vote counts come from the figures the aggregation stored
    (DashboardSnapshot) plus the votes cast since, read by primary-key range.
    """
    criteria = list(Criterion.objects.filter(project=project).order_by("split", "order", "key"))
    n_crit = _criteria_per_split(criteria)
    votes = _vote_figures(project)
    per_annotator = votes.per_annotator
    splits = split_progress(project, n_crit, _split_votes(per_annotator), votes.completion)
    snapshots = {
        s.split: s for s in AgreementSnapshot.objects.filter(project=project).order_by("split")
    }
    annotators = annotator_figures(project, per_annotator, n_crit, snapshots)
    results = label_results(project, criteria)
    agreement_rows = []
    computed_at = oldest = None
    for value, label in Split.choices:
        snap = snapshots.get(value)
        if snap is None:
            continue
        computed_at = max(computed_at, snap.computed_at) if computed_at else snap.computed_at
        oldest = min(oldest, snap.computed_at) if oldest else snap.computed_at
        agreement_rows.append(agreement_row(value, label, snap.figures, criteria))
    return Dashboard(
        splits=splits,
        totals=progress_totals(splits),
        annotators=annotators,
        results=results,
        agreement=agreement_rows,
        tie_cap=float(project.tie_cap),
        computed_at=computed_at,
        oldest_computed_at=oldest,
        stale_votes=_stale_votes(project, oldest, votes),
        throughput=votes.throughput,
    )


def _labels(project: Project) -> Any:
    labels = CriterionLabel.objects.filter(
        sample__project=project, sample__status=SampleStatus.ACTIVE
    )
    if not project.export_includes_seeds:
        labels = labels.filter(sample__is_seed=False)
    return labels


def label_figures_compute(project: Project) -> dict[str, Any]:
    """The label counts the results table is made of, as JSON (what DashboardSnapshot stores).

    Labels change only when the aggregation writes them, so it stores these after each run.
    """
    rows = (
        _labels(project)
        .values("sample__split", "criterion_id", "outcome", "preference")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {
        "include_seeds": project.export_includes_seeds,
        "rows": list(rows),
        "per_sample": _label_sample_figures(project),
    }


def _label_figures(project: Project) -> dict[str, Any]:
    """The stored label counts when they were stored for the project's seed setting, else now."""
    if connection.vendor == "postgresql":
        stored = (
            DashboardSnapshot.objects.filter(project=project)
            .values_list("figures__labels", flat=True)
            .first()
        )
        if stored and stored.get("include_seeds") == project.export_includes_seeds:
            return stored
    return label_figures_compute(project)


def label_results(project: Project, criteria: list[Criterion]) -> list[dict[str, Any]]:
    """Per split with labels: outcomes, kept and exportable labels, conflicts, A/B balance."""
    stored = _label_figures(project)
    # One grouped pass gives both the outcomes per split and the A/B balance per criterion.
    by_outcome: dict[str, dict[str, int]] = {}
    balance: dict[int, dict[str, int]] = {}
    kept_outcomes = {o.value for o in Outcome.kept()}
    for r in stored["rows"]:
        split_outcomes = by_outcome.setdefault(r["sample__split"], {})
        split_outcomes[r["outcome"]] = split_outcomes.get(r["outcome"], 0) + r["n"]
        if r["outcome"] in kept_outcomes and r["preference"] in (Choice.A, Choice.B):
            side = balance.setdefault(r["criterion_id"], {"a": 0, "b": 0})
            side["a" if r["preference"] == Choice.A else "b"] += r["n"]
    # Exportable = kept minus what review discarded. Only labels of reviewed samples can be
    # discarded, so the latest-decision subqueries run for those alone, not for every label.
    reviewed = labels_with_review_state(project=project).filter(
        outcome__in=Outcome.kept(),
        sample__status=SampleStatus.ACTIVE,
        sample_id__in=ReviewDecision.objects.filter(sample__project=project).values("sample_id"),
    )
    if not project.export_includes_seeds:
        reviewed = reviewed.filter(sample__is_seed=False)
    discarded = dict(
        reviewed.filter(
            Q(label_action=ReviewDecision.Action.DISCARD)
            | Q(sample_action=ReviewDecision.Action.DISCARD)
        )
        .order_by()
        .values("sample__split")
        .annotate(n=Count("id"))
        .values_list("sample__split", "n")
    )
    per_sample = stored["per_sample"]
    out = []
    for value, label in Split.choices:
        outcomes = by_outcome.get(value, {})
        if not outcomes:
            continue
        total = sum(outcomes.values())
        kept = sum(outcomes.get(o, 0) for o in Outcome.kept())
        samples = per_sample.get(value, {"labelled": 0, "kept": 0, "conflict": 0})
        rows = []
        for c in criteria:
            if c.split != value:
                continue
            b = balance.get(c.pk, {"a": 0, "b": 0})
            rows.append(
                {
                    "criterion": c,
                    "a": b["a"],
                    "b": b["b"],
                    "share_a": _share(b["a"], b["a"] + b["b"]),
                }
            )
        out.append(
            {
                "split": value,
                "label": label,
                "labels": total,
                "kept": kept,
                "dropped": total - kept,
                "outcomes": [
                    {
                        "outcome": o,
                        "label": o.label,
                        "n": outcomes.get(o.value, 0),
                        "share": _share(outcomes.get(o.value, 0), total),
                    }
                    for o in Outcome
                ],
                "exportable": kept - discarded.get(value, 0),
                "discarded_in_review": discarded.get(value, 0),
                "samples_labelled": samples["labelled"],
                "samples_kept": samples["kept"],
                "samples_dropped": samples["labelled"] - samples["kept"],
                "samples_conflict": samples["conflict"],
                "conflict_share": _share(samples["conflict"], samples["kept"]),
                "balance": rows,
            }
        )
    return out


ORDINAL_STATISTICS = (
    ("cohen_linear", "Cohen's κ, linear weights (mean pairwise)"),
    ("cohen_quadratic", "Cohen's κ, quadratic weights (mean pairwise)"),
    ("alpha_ordinal", "Krippendorff's α, ordinal"),
    ("alpha_interval", "Krippendorff's α, interval"),
    ("ac1", "Gwet's AC1"),
    ("ac2_linear", "Gwet's AC2, linear weights"),
    ("ac2_quadratic", "Gwet's AC2, quadratic weights"),
    ("ac2_ordinal", "Gwet's AC2, ordinal weights"),
)
ORDINAL_SUBJECTS = (
    ("grades", "Grades (−2 … +2)"),
    ("scores", "Each response's score (1–5)"),
    ("differences", "Score difference A − B (−4 … +4)"),
)


def ordinal_rows(ordinal: dict[str, Any]) -> list[dict[str, Any]]:
    """A graded or pointwise split's ordinal statistics, one entry per thing rated."""
    out = []
    for key, label in ORDINAL_SUBJECTS:
        figures = ordinal.get(key)
        if not figures:
            continue
        stats = []
        for name, title in ORDINAL_STATISTICS:
            stat = figures.get(name) or {}
            stats.append(
                {
                    "key": name,
                    "title": title,
                    "value": stat.get("value"),
                    "ci": stat.get("ci"),
                    "reason": stat.get("undefined_reason") or "",
                }
            )
        out.append({"key": key, "label": label, "items": figures.get("items"), "stats": stats})
    return out


def agreement_row(
    split: str, label: str, figures: dict[str, Any], criteria: list[Criterion]
) -> dict[str, Any]:
    """One split's agreement snapshot: the raw statistics, per criterion in the project's order."""
    names = {c.key: c.name for c in criteria if c.split == split}
    per_criterion = figures.get("per_criterion") or {}
    order = [key for key in names if key in per_criterion] + [
        key for key in per_criterion if key not in names
    ]
    rows = []
    for key in order:
        figs = per_criterion[key] or {}
        rows.append(
            {
                "key": key,
                "name": names.get(key, key),
                "items": figs.get("items"),
                "raw": {name: figs.get(name) for name, _ in STATISTICS},
            }
        )
    pairwise = figures.get("pairwise") or {}
    cohen = figures.get("cohen") or {}
    return {
        "split": split,
        "label": label,
        "items": figures.get("items"),
        "raw_overall": {name: figures.get(name) for name, _ in STATISTICS},
        "cohen_detail": {
            "pairs_used": cohen.get("pairs_used"),
            "pairs_skipped": cohen.get("pairs_skipped"),
            "min_overlap": cohen.get("min_overlap"),
            "smallest_overlap": cohen.get("smallest_overlap"),
            "weighted_value": cohen.get("weighted_value"),
        },
        "per_criterion": rows,
        "ordinal": ordinal_rows(figures.get("ordinal") or {}),
        "pairwise": {
            "annotators": list(pairwise.get("annotators") or []),
            "kappa": list(pairwise.get("kappa") or []),
            "overlap": list(pairwise.get("overlap") or []),
        },
        "computed_at": figures.get("computed_at"),
        "scope": figures.get("fleiss_alpha_scope"),
    }
