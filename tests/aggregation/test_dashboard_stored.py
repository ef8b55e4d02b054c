"""The dashboard's stored vote figures plus the votes since equal counting every vote."""

# The hand-built dataset is test_dashboard's ``data`` fixture, imported so that both files
# read the same figures; pytest injects it by name, which ruff takes for a redefinition.
# ruff: noqa: F811

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from aggregation.models import AgreementSnapshot, DashboardSnapshot
from aggregation.selectors.dashboard import dashboard_figures
from aggregation.services.dashboard import dashboard_snapshot_refresh
from annotation.models import Slot, Vote
from tests.aggregation.test_dashboard import data, vote  # noqa: F401
from tests.conftest import make_sample

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the stored figures are PostgreSQL's"
)


def _vote_figures(project):
    """What the dashboard shows from the votes: progress, per annotator, throughput, stale."""
    figures = dashboard_figures(project=project)
    annotators = [
        {k: a[k] for k in ("username", "done", "ties", "votes_today", "assigned")}
        for a in figures.annotators
    ]
    return {
        "splits": figures.splits,
        "totals": figures.totals,
        "annotators": annotators,
        "series": figures.throughput.series,
        "stale": figures.stale_votes,
    }


def _live(project):
    """The same figures counted over every vote (no stored figures)."""
    stored = list(DashboardSnapshot.objects.filter(project=project).values())
    DashboardSnapshot.objects.filter(project=project).delete()
    try:
        return _vote_figures(project)
    finally:
        DashboardSnapshot.objects.bulk_create(DashboardSnapshot(**row) for row in stored)


def test_stored_figures_plus_new_votes_equal_a_full_count(project, data, annotators):
    a1, a2, a3 = data["users"]
    _, s2, s3 = data["samples"]
    crits = data["crits"]
    before = _vote_figures(project)
    snapshot = dashboard_snapshot_refresh(project=project)
    assert snapshot.upto_vote_id == Vote.objects.order_by("-id").values_list("id", flat=True)[0]
    assert _vote_figures(project) == before  # nothing new: the stored figures alone
    # After the figures: s2 gets more votes (one criterion complete), s3 its first votes, a
    # new annotator votes, and a new sample in the other split.
    vote(s2, crits[0], a2, "A")
    vote(s2, crits[0], a3, "tie")
    vote(s3, crits[1], a2, "B")
    Slot.objects.create(sample=s3, index=1, annotator=annotators[5])
    vote(s3, crits[2], annotators[5], "A", seconds=3)
    r2 = make_sample(project, "r2", split="reasoning")
    reasoning = r2.project.criteria.filter(split="reasoning").order_by("order").first()
    vote(r2, reasoning, a1, "tie")
    after = _vote_figures(project)
    assert after == _live(project)
    open_ended = next(s for s in after["splits"] if s["split"] == "open_ended")
    assert open_ended["votes_done"] == 17 + 4
    assert (open_ended["complete"], open_ended["in_progress"], open_ended["untouched"]) == (1, 2, 0)


def test_a_stored_day_is_not_today_any_more(project, data):
    """Figures stored yesterday: their votes count, none of them as today's."""
    dashboard_snapshot_refresh(project=project)
    stored = DashboardSnapshot.objects.get(project=project)
    stored.figures["date"] = (timezone.localdate() - timedelta(days=1)).isoformat()
    stored.save()
    figures = dashboard_figures(project=project)
    open_ended = next(s for s in figures.splits if s["split"] == "open_ended")
    assert open_ended["votes_done"] == 17 and open_ended["votes_today"] == 0


def test_votes_since_the_agreement_are_read_by_id(project, data):
    """Stored before the agreement snapshot: new votes and revisions since it are counted."""
    dashboard_snapshot_refresh(project=project)
    AgreementSnapshot.objects.filter(project=project).update(computed_at=timezone.now())
    assert dashboard_figures(project=project).stale_votes == 0
    a1 = data["users"][0]
    vote(make_sample(project, "late"), data["crits"][0], a1, "B")
    assert dashboard_figures(project=project).stale_votes == 1


def test_the_aggregation_stores_the_figures(project, data):
    from aggregation.services.aggregate import project_aggregate

    project_aggregate(project=project, n_boot=0)
    stored = DashboardSnapshot.objects.get(project=project)
    assert stored.upto_vote_id == Vote.objects.order_by("-id").values_list("id", flat=True)[0]
    assert stored.figures["completion"]["open_ended"] == {"5": 1, "0": 1}
    with CaptureQueriesContext(connection) as ctx:
        dashboard_figures(project=project)
    assert len(ctx.captured_queries) <= 18


def test_results_read_the_label_counts_stored_by_the_aggregation(project, data):
    from aggregation.services.aggregate import project_aggregate

    project_aggregate(project=project, n_boot=0)
    stored = DashboardSnapshot.objects.get(project=project).figures["labels"]
    assert stored["include_seeds"] is False and stored["rows"]
    with_stored = dashboard_figures(project=project).results
    DashboardSnapshot.objects.filter(project=project).delete()
    assert with_stored == dashboard_figures(project=project).results


def _sorted_rows(figures):
    return sorted(figures["rows"], key=lambda r: sorted(r.items()))


@pytest.mark.parametrize("include_seeds", [False, True])
def test_label_counts_stored_from_the_written_labels_equal_counting_the_table(
    project, data, annotators, include_seeds
):
    """Made from the arrays the job wrote (or counted, when seeds count): the same figures.

    A retired sample's labels and a non-holder's vote are in the data; a second run after a
    changed vote stores the figures of the labels as they then stand.
    """
    from aggregation.selectors.dashboard import label_figures_compute
    from aggregation.services.aggregate import project_aggregate

    project.export_includes_seeds = include_seeds
    project.save(update_fields=["export_includes_seeds"])
    project_aggregate(project=project, n_boot=0)
    retired = Vote.objects.filter(sample__project=project).first().sample
    retired.status = "retired"
    retired.save(update_fields=["status"])
    changed = Vote.objects.filter(sample__project=project, round=0).exclude(sample=retired)
    changed = changed.exclude(choice="A").first()
    changed.choice = "A"
    changed.save(update_fields=["choice"])
    project_aggregate(project=project, n_boot=0)
    stored = DashboardSnapshot.objects.get(project=project).figures["labels"]
    counted = label_figures_compute(project)
    assert stored["per_sample"] == counted["per_sample"] and counted["per_sample"]
    assert _sorted_rows(stored) == _sorted_rows(counted) and counted["rows"]
    assert stored["include_seeds"] is include_seeds


@pytest.mark.django_db(transaction=True)
def test_the_last_vote_id_is_read_under_a_share_lock_of_its_own(project, annotators):
    """Outside any transaction: the lock is taken and released, votes go on afterwards."""
    from aggregation.services.dashboard import _last_committed_vote_id

    criterion = project.criteria.filter(split="open_ended").first()
    first = vote(make_sample(project, "a"), criterion, annotators[0])
    assert not connection.in_atomic_block
    assert _last_committed_vote_id() == first.pk
    second = vote(make_sample(project, "b"), criterion, annotators[0])
    assert _last_committed_vote_id() == second.pk


def test_a_revised_vote_counts_as_stale_once(project, data, lead):
    """A vote revised after the agreement snapshot: found through its revisions, once."""
    from annotation.models import VoteRevision

    dashboard_snapshot_refresh(project=project)
    AgreementSnapshot.objects.filter(project=project).update(computed_at=timezone.now())
    old = Vote.objects.filter(sample__project=project, round=0).first()
    for _ in range(2):
        VoteRevision.objects.create(
            vote=old, choice="A", rationale="before", recorded_at=timezone.now()
        )
    assert dashboard_figures(project=project).stale_votes == 1
