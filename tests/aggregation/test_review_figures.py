"""The review queue's stored counts stay equal to a live count through every path moving them."""

from __future__ import annotations

import itertools
import threading

import pytest
from django.db import connection, transaction
from django.db.models import BooleanField, F
from django.db.models.expressions import RawSQL
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from aggregation.models import (
    CriterionLabel,
    Outcome,
    Provenance,
    ReviewQueueCell,
    ReviewQueueFigures,
    SampleReview,
)
from aggregation.selectors.review_queue import (
    KINDS,
    PROVENANCE_CHOICES,
    QueueFilters,
    _count_within,
    review_counts,
    review_neighbours,
    review_queue,
)
from aggregation.services.aggregate import project_aggregate
from aggregation.services.review import (
    review_figures_refresh,
    sample_mark_reviewed,
    sample_unmark_reviewed,
)
from annotation.models import Criterion, ProblemReport, Sample, SampleStatus, Split, Vote
from annotation.services.problem_reports import problem_report_close
from tests.aggregation.labels import label
from tests.conftest import make_sample

from .votes import cast_all, criteria_of

pytestmark = pytest.mark.django_db


def live(project, split: str = "", **filters) -> dict[str, int]:
    """The queue counted row by row, as every page did before the stored figures."""
    queue = review_queue(project=project, filters=QueueFilters(split=split, **filters))
    total = queue.count()
    reviewed = queue.filter(review__isnull=False).count()
    return {"total": total, "reviewed": reviewed, "left": total - reviewed}


def counts(project, split: str = "", **filters) -> dict[str, int]:
    figures = review_counts(project=project, filters=QueueFilters(split=split, **filters))
    return {k: figures[k] for k in ("total", "reviewed", "left")}


def filter_mixes(project, split: str):
    """Every filter alone and combined, with a criterion holding labels or none."""
    labelled = CriterionLabel.objects.filter(sample__project=project).values("criterion_id")
    criteria = [None]
    if not split:
        criteria += list(
            Criterion.objects.filter(pk__in=labelled).order_by("id").values_list("id", flat=True)
        )[:2]
    kinds = ["", *KINDS]
    provenances = ["", *(value for value, _ in PROVENANCE_CHOICES)]
    for criterion, kind, provenance, disagreements in itertools.product(
        criteria, kinds, provenances, (False, True)
    ):
        yield {
            "criterion": criterion,
            "kind": kind,
            "provenance": provenance,
            "disagreements": disagreements,
        }
    yield {"flagged": True}
    yield {"flagged": True, "kind": "unanimous", "disagreements": True}


def assert_stored_equals_live(project, mixes: bool = False) -> None:
    project.refresh_from_db()
    for split in ("", *Split.values):
        assert counts(project, split) == live(project, split), split
        for filters in filter_mixes(project, split) if mixes else ():
            assert counts(project, split, **filters) == live(project, split, **filters), (
                split,
                filters,
            )


@pytest.fixture
def voted(project, lead, annotators):
    """Three open-ended samples kept, one dropped, and one reasoning sample kept, aggregated."""
    c = criteria_of(project)
    r = criteria_of(project, "reasoning")
    trio = annotators[:3]
    samples = {name: make_sample(project, name) for name in ("s1", "s2", "s3", "dropped")}
    cast_all(samples["s1"], c[0], trio, "AAA")
    cast_all(samples["s2"], c[0], trio, "BBB")
    cast_all(samples["s3"], c[0], trio, "BBt")
    cast_all(samples["dropped"], c[0], trio, "ABt")
    samples["r1"] = make_sample(project, "r1", split="reasoning")
    cast_all(samples["r1"], r[0], trio, "AAA")
    project_aggregate(project=project, n_boot=10)
    return {"c": c, "r": r, "trio": trio, **samples}


def test_aggregation_stores_the_figures_of_every_split(project, voted):
    rows = {
        r.split: (r.total, r.reviewed, r.counted)
        for r in ReviewQueueFigures.objects.filter(project=project)
    }
    assert rows == {"open_ended": (3, 0, True), "reasoning": (1, 0, True)}
    assert counts(project) == {"total": 4, "reviewed": 0, "left": 4}
    assert counts(project, "reasoning") == {"total": 1, "reviewed": 0, "left": 1}
    assert_stored_equals_live(project)


def test_counts_read_the_stored_cells(project, voted):
    ReviewQueueCell.objects.filter(
        project=project, split="open_ended", criterion__isnull=True, kinds=1, reviewed=False
    ).update(n=F("n") + 30)
    assert counts(project)["total"] == 34  # the stored cells, not a count of the queue
    for filters in (QueueFilters(), QueueFilters(kind="unanimous", disagreements=True)):
        with CaptureQueriesContext(connection) as ctx:
            review_counts(project=project, filters=filters)
        assert len(ctx.captured_queries) == 3
    # Flagged samples are counted live, from their reports.
    assert review_counts(project=project, filters=QueueFilters(flagged=True))["total"] == 0


def test_the_default_page_does_not_count_the_queue(client, project, lead, voted):
    # The open-ended cells say 1,000 samples more, 400 of them reviewed: all unanimous.
    any_sample = ReviewQueueCell.objects.filter(project=project, criterion__isnull=True)
    any_sample.filter(split="open_ended", kinds=1, reviewed=False).update(n=F("n") + 600)
    ReviewQueueCell.objects.create(
        project=project,
        split="open_ended",
        kinds=1,
        provenances=1,
        disagreement=False,
        reviewed=True,
        n=400,
    )
    client.force_login(lead)
    response = client.get(reverse("review-queue", args=[project.slug]))
    assert response.status_code == 200
    counts = response.context["counts"]
    assert (counts["total"], counts["reviewed"], counts["left"]) == (1004, 400, 604)
    assert response.context["pages"] == 21  # 1,004 samples at 50 a page
    # A filter reads the cells too: all but s3 (kept with a tie) are unanimous.
    response = client.get(reverse("review-queue", args=[project.slug]) + "?kind=unanimous")
    assert response.context["counts"]["total"] == 1003


def test_reviews_and_unreviews_move_the_reviewed_figure(project, lead, voted):
    sample_mark_reviewed(sample=voted["s1"], by=lead)
    sample_mark_reviewed(sample=voted["s1"], by=lead)  # again: still one reviewed sample
    sample_mark_reviewed(sample=voted["r1"], by=lead)
    sample_mark_reviewed(sample=voted["dropped"], by=lead)  # not in the queue
    assert counts(project) == {"total": 4, "reviewed": 2, "left": 2}
    assert_stored_equals_live(project)
    sample_unmark_reviewed(sample=voted["s1"], by=lead)
    sample_unmark_reviewed(sample=voted["s1"], by=lead)  # not reviewed any more: no move
    sample_unmark_reviewed(sample=voted["dropped"], by=lead)
    assert counts(project) == {"total": 4, "reviewed": 1, "left": 3}
    assert_stored_equals_live(project)
    assert ReviewQueueFigures.objects.get(project=project, split="open_ended").reviewed == 0


def test_retire_and_reactivate_before_and_after_reaggregation(project, lead, annotators, voted):
    sample_mark_reviewed(sample=voted["s2"], by=lead)
    report = ProblemReport.objects.create(
        sample=voted["s2"], reporter=annotators[0], kind="unreadable"
    )
    problem_report_close(report=report, outcome=ProblemReport.Outcome.DISCARDED, by=lead)
    assert counts(project) == {"total": 3, "reviewed": 0, "left": 3}
    assert_stored_equals_live(project)
    # Back in the active pool (no page does this yet; the counts read the status live).
    Sample.objects.filter(pk=voted["s2"].pk).update(status=SampleStatus.ACTIVE)
    assert counts(project) == {"total": 4, "reviewed": 1, "left": 3}
    assert_stored_equals_live(project)
    # Retired again, then aggregated: its labels go, and the stored figures with them.
    Sample.objects.filter(pk=voted["s2"].pk).update(status=SampleStatus.RETIRED)
    project_aggregate(project=project, n_boot=10)
    stored = ReviewQueueFigures.objects.get(project=project, split="open_ended")
    assert (stored.total, stored.reviewed) == (2, 0)
    assert counts(project) == {"total": 3, "reviewed": 0, "left": 3}
    assert_stored_equals_live(project)
    Sample.objects.filter(pk=voted["s2"].pk).update(status=SampleStatus.ACTIVE)
    project_aggregate(project=project, n_boot=10)
    assert counts(project) == {"total": 4, "reviewed": 1, "left": 3}
    assert_stored_equals_live(project)


def test_reaggregation_that_changes_the_queue(project, lead, annotators, voted):
    sample_mark_reviewed(sample=voted["s1"], by=lead)
    sample_mark_reviewed(sample=voted["s3"], by=lead)
    c = voted["c"]
    # s1's unanimous label becomes a split (dropped): s1 leaves the queue, reviewed mark kept.
    vote = Vote.objects.filter(sample=voted["s1"], criterion=c[0]).order_by("id").first()
    Vote.objects.filter(pk=vote.pk).update(choice="B")
    # "dropped" becomes unanimous B and joins; a new sample joins.
    Vote.objects.filter(sample=voted["dropped"], criterion=c[0]).update(choice="B")
    new = make_sample(project, "new")
    cast_all(new, c[0], annotators[3:6], "AAt")
    project_aggregate(project=project, n_boot=10)
    assert list(review_queue(project=project).values_list("external_id", flat=True)) == [
        "s2",
        "s3",
        "dropped",
        "r1",
        "new",
    ]
    assert counts(project) == {"total": 5, "reviewed": 1, "left": 4}
    assert_stored_equals_live(project)
    # s1 comes back with its mark; the split is reviewed from then on.
    Vote.objects.filter(pk=vote.pk).update(choice="A")
    project_aggregate(project=project, n_boot=10)
    assert counts(project) == {"total": 6, "reviewed": 2, "left": 4}
    assert_stored_equals_live(project)


def test_seeds_are_added_live_when_the_project_exports_them(project, lead, voted):
    seed = make_sample(project, "seed", is_seed=True)
    label(seed, voted["c"][0])
    SampleReview.objects.create(sample=seed, reviewed_by=lead, reviewed_at=timezone.now())
    assert counts(project)["total"] == 4
    project.export_includes_seeds = True
    project.save()
    assert counts(project) == {"total": 5, "reviewed": 1, "left": 4}
    assert_stored_equals_live(project)
    sample_unmark_reviewed(sample=seed, by=lead)
    assert counts(project) == {"total": 5, "reviewed": 0, "left": 5}
    assert_stored_equals_live(project)


def test_counts_live_until_the_aggregation_counted_every_split(project, lead):
    sample = make_sample(project, "direct")
    label(sample, criteria_of(project)[0])
    sample_mark_reviewed(sample=sample, by=lead)  # leaves an uncounted row behind
    assert ReviewQueueFigures.objects.get(project=project).counted is False
    assert counts(project) == {"total": 1, "reviewed": 1, "left": 0}
    project_aggregate(project=project, n_boot=10)  # no votes: the direct label goes
    assert ReviewQueueFigures.objects.filter(project=project, counted=True).count() == 2
    assert_stored_equals_live(project)


needs_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL (set DATABASE_URL)"
)


def test_filtered_counts_equal_a_live_count_through_reviews_and_reaggregations(
    project, lead, annotators, voted
):
    """Every filter mix, after marks, provenances, flags, seeds, retirements and re-runs."""
    c, r, trio = voted["c"], voted["r"], voted["trio"]
    more = {}
    for i, choices in enumerate(("AAt", "BBB", "ABt", "AAA", "ttB", "BBt")):
        more[i] = make_sample(project, f"m{i}")
        cast_all(more[i], c[0], trio, choices)
        cast_all(more[i], c[1], trio, choices[::-1])
        cast_all(more[i], c[2 + i % 2], trio, "AAA" if i % 2 else "BBt")
    r2 = make_sample(project, "r2", split="reasoning")
    cast_all(r2, r[0], trio, "AAt")
    cast_all(r2, r[1], trio, "ABt")
    project_aggregate(project=project, n_boot=10)
    assert_stored_equals_live(project, mixes=True)
    # Provenances the job would set with a judge panel, stored as the job stores them.
    CriterionLabel.objects.filter(sample=more[1], criterion=c[0]).update(
        provenance=Provenance.PANEL_HUMAN
    )
    CriterionLabel.objects.filter(sample=more[3], criterion=c[1]).update(
        provenance=Provenance.PANEL_OVERRULED
    )
    CriterionLabel.objects.filter(sample=voted["s3"]).update(provenance=Provenance.PANEL_HUMAN)
    with transaction.atomic():
        for split in Split.values:
            review_figures_refresh(project=project, split=split)
    for sample in (voted["s1"], voted["s3"], more[1], more[3], r2, voted["dropped"]):
        sample_mark_reviewed(sample=sample, by=lead)
    sample_unmark_reviewed(sample=voted["s1"], by=lead)
    ProblemReport.objects.create(sample=more[3], reporter=annotators[0], kind="unreadable")
    ProblemReport.objects.create(sample=voted["s2"], reporter=annotators[1], kind="unreadable")
    assert_stored_equals_live(project, mixes=True)
    # A retired sample, an exported seed, then votes that move samples across cells.
    Sample.objects.filter(pk=more[1].pk).update(status=SampleStatus.RETIRED)
    seed = make_sample(project, "seed", is_seed=True)
    label(seed, c[0], Outcome.KEPT_MAJORITY_TIE)
    project.export_includes_seeds = True
    project.save()
    assert_stored_equals_live(project, mixes=True)
    sample_mark_reviewed(sample=more[1], by=lead)  # retired: counted in the cells, taken off
    Vote.objects.filter(sample=more[2], criterion=c[0]).update(choice="A")
    Vote.objects.filter(sample=voted["s2"], criterion=c[0]).update(choice="tie")
    # The job is the labels' only writer: the provenances set by hand above go back to what it
    # computes (no panel), as it counts the cells from the labels it has just written.
    CriterionLabel.objects.update(provenance=Provenance.HUMAN)
    project_aggregate(project=project, n_boot=10)
    assert_stored_equals_live(project, mixes=True)
    for sample in (more[2], seed, voted["s3"]):
        sample_unmark_reviewed(sample=sample, by=lead)
    sample_mark_reviewed(sample=more[0], by=lead)
    assert_stored_equals_live(project, mixes=True)


def test_item_position_and_neighbours_within_a_filter(project, lead, voted):
    """Keyset next / previous and the position equal the list of the filtered queue's ids."""
    sample_mark_reviewed(sample=voted["s2"], by=lead)
    for filters in (
        QueueFilters(),
        QueueFilters(unreviewed=True),
        QueueFilters(kind="unanimous"),
        QueueFilters(disagreements=True, split="open_ended"),
    ):
        queue = list(review_queue(project=project, filters=filters).values_list("id", flat=True))
        for sample in Sample.objects.filter(project=project).order_by("id"):
            nav = review_neighbours(project=project, filters=filters, sample_id=sample.pk)
            below = [i for i in queue if i < sample.pk]
            above = [i for i in queue if i > sample.pk]
            assert nav["prev_id"] == (below[-1] if below else None)
            assert nav["next_id"] == (above[0] if above else None)
            assert nav["total"] == len(queue)
            if sample.pk in queue:
                assert (nav["position"], nav["in_queue"]) == (queue.index(sample.pk) + 1, True)
            else:
                assert (nav["position"], nav["in_queue"]) == (None, False)


@needs_postgres
def test_a_position_over_its_budget_is_given_up(client, project, lead, voted):
    # A count that sleeps a fifth of a second per sample: well past the budget.
    slow = Sample.objects.filter(RawSQL("pg_sleep(0.2) IS NOT NULL", [], BooleanField()))
    assert _count_within(slow, 50) is None
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")  # the budget ended with the count
        assert cursor.fetchone()[0] == "0"
    assert _count_within(Sample.objects.filter(project=project), 5000) == 5
    client.force_login(lead)
    url = reverse("review-item", args=[project.slug, voted["s2"].pk])
    assert "2 of 4" in client.get(url).content.decode()
    html = client.get(url + "?split=open_ended&position=1").content.decode()
    assert "2 of 3" in html


def test_a_position_given_up_offers_to_count_it(rf, project, lead, voted):
    # The page as it is when the budget ran out (the selector's side is tested above).
    from django.template.loader import render_to_string

    from aggregation.views.review import ITEM_TEMPLATE, _item_context

    filters = QueueFilters.from_query({"split": "open_ended"})
    context = _item_context(project, voted["s2"].pk, filters)
    assert (context["nav"]["position"], context["nav"]["total"]) == (2, 3)
    context["nav"] = {**context["nav"], "position": None, "position_counted": False}
    request = rf.get("/")
    request.user = lead
    html = render_to_string(ITEM_TEMPLATE, context, request=request)
    assert "one of 3 (" in html and "2 of 3" not in html
    href = reverse("review-item", args=[project.slug, voted["s2"].pk])
    assert f'href="{href}?split=open_ended&amp;position=1">count its position</a>' in html


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_marks_racing_each_other_and_an_aggregation(project, lead, annotators):
    """Tabs marking and unmarking the same samples while the aggregation rewrites the labels."""
    c = criteria_of(project)
    samples = [make_sample(project, f"s{i}") for i in range(12)]
    for i, sample in enumerate(samples):
        cast_all(sample, c[0], annotators[:3], "AAA" if i % 3 else "ABt")
    project_aggregate(project=project, n_boot=5)
    moved = [s for i, s in enumerate(samples) if i % 3 == 0 or i % 4 == 0]
    errors: list[BaseException] = []

    def marker(barrier: threading.Barrier, seed: int) -> None:
        try:
            barrier.wait()
            for step in range(24):
                sample = samples[(seed * 5 + step) % len(samples)]
                if (seed + step) % 3:
                    sample_mark_reviewed(sample=sample, by=lead)
                else:
                    sample_unmark_reviewed(sample=sample, by=lead)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    def aggregator(barrier: threading.Barrier) -> None:
        try:
            barrier.wait()
            project_aggregate(project=project, n_boot=5)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    # Each round's run moves 6 samples in or out of the queue while the marks go on.
    for round_, choices in enumerate(("BBB", "ABt", "BBB", "ABt")):
        for sample in moved:
            for vote, choice in zip(
                Vote.objects.filter(sample=sample, criterion=c[0]).order_by("id"),
                choices,
                strict=True,
            ):
                Vote.objects.filter(pk=vote.pk).update(choice="tie" if choice == "t" else choice)
        barrier = threading.Barrier(7)
        threads = [threading.Thread(target=marker, args=(barrier, i)) for i in range(6)]
        threads.append(threading.Thread(target=aggregator, args=(barrier,)))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        assert live(project)["total"] == (12 if choices == "BBB" else 6), round_
        assert_stored_equals_live(project, mixes=round_ == 3)
