"""Storing the dashboard's vote figures (DashboardSnapshot), done by the aggregation job."""

from __future__ import annotations

from typing import Any

from django.db import OperationalError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from annotation.models import Project, Vote

from ..models import DashboardSnapshot
from ..selectors.dashboard import label_figures_compute, vote_figures_compute


def _last_committed_vote_id() -> int:
    """The largest vote id such that every vote with an id up to it has committed.

    A vote's id is taken when it is inserted, so a transaction still open can hold a smaller
    id than one already visible. A SHARE lock on the vote table, in a transaction of its own,
    waits for those transactions (and holds new votes back for as long as it takes to read the
    largest id). Inside a caller's transaction (the lock would last as long as it), or when the
    lock cannot be had within 0.2 s (votes queue behind a waiting lock), the largest visible id
    is used.
    """
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return Vote.objects.aggregate(m=Max("id"))["m"] or 0
    table = connection.ops.quote_name(Vote._meta.db_table)
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '200ms'")
            cursor.execute(f"LOCK TABLE {table} IN SHARE MODE")
            cursor.execute(f"SELECT coalesce(max(id), 0) FROM {table}")
            return int(cursor.fetchone()[0])
    except OperationalError:
        return Vote.objects.aggregate(m=Max("id"))["m"] or 0


def dashboard_snapshot_refresh(*, project: Project) -> DashboardSnapshot | None:
    """Count the project's votes once and store the figures; None except on PostgreSQL.

    Call before the aggregation stamps its agreement snapshots: every vote stored here was
    then cast before them, which lets the dashboard count "votes since" by id.
    """
    if connection.vendor != "postgresql":
        return None
    upto = _last_committed_vote_id()
    now = timezone.now()  # every vote up to ``upto`` was cast by now
    figures = vote_figures_compute(project, upto)
    snapshot, _ = DashboardSnapshot.objects.update_or_create(
        project=project, defaults={"upto_vote_id": upto, "figures": figures, "computed_at": now}
    )
    return snapshot


def dashboard_labels_refresh(*, project: Project, figures: dict[str, Any] | None = None) -> None:
    """Store the label counts of the results table, after the aggregation wrote the labels.

    ``figures``: the counts made from the labels just written (aggregation.label_counts);
    without them the label table is counted.
    """
    if connection.vendor != "postgresql":
        return
    if figures is None:
        figures = label_figures_compute(project)
    snapshot = DashboardSnapshot.objects.filter(project=project).first()
    if snapshot is None:
        return
    snapshot.figures = {**snapshot.figures, "labels": figures}
    snapshot.save(update_fields=["figures"])
