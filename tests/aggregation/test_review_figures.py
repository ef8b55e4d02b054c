"""The review queue's stored counts stay equal to a live count through every path moving them."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from aggregation.models import ReviewQueueFigures, SampleReview
from aggregation.selectors.review_queue import QueueFilters, review_counts, review_queue
from aggregation.services.aggregate import project_aggregate
from aggregation.services.review import sample_mark_reviewed, sample_unmark_reviewed
from annotation.models import ProblemReport, Sample, SampleStatus, Split, Vote
from annotation.services.problem_reports import problem_report_close
from tests.aggregation.labels import label
from tests.conftest import make_sample

from .votes import cast_all, criteria_of

pytestmark = pytest.mark.django_db


def live(project, split: str = "") -> dict[str, int]:
    """The queue counted row by row, as every page did before the stored figures."""
    queue = review_queue(project=project, filters=QueueFilters(split=split))
    total = queue.count()
    reviewed = queue.filter(review__isnull=False).count()
    return {"total": total, "reviewed": reviewed, "left": total - reviewed}


def counts(project, split: str = "") -> dict[str, int]:
    figures = review_counts(project=project, filters=QueueFilters(split=split))
    return {k: figures[k] for k in ("total", "reviewed", "left")}


def assert_stored_equals_live(project) -> None:
    project.refresh_from_db()
    for split in ("", *Split.values):
        assert counts(project, split) == live(project, split), split


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


def test_unfiltered_counts_read_the_stored_figures(project, voted):
    ReviewQueueFigures.objects.filter(project=project, split="open_ended").update(total=90)
    assert counts(project)["total"] == 91  # the stored row, not a count of the queue
    with CaptureQueriesContext(connection) as ctx:
        review_counts(project=project, filters=QueueFilters())
    assert len(ctx.captured_queries) == 2
    # Another filter counts live.
    assert review_counts(project=project, filters=QueueFilters(kind="unanimous"))["total"] == 3


def test_the_default_page_does_not_count_the_queue(client, project, lead, voted):
    ReviewQueueFigures.objects.filter(project=project, split="open_ended").update(
        total=1000, reviewed=400
    )
    client.force_login(lead)
    response = client.get(reverse("review-queue", args=[project.slug]))
    assert response.status_code == 200
    counts = response.context["counts"]
    assert (counts["total"], counts["reviewed"], counts["left"]) == (1001, 400, 601)
    assert response.context["pages"] == 21  # 1,001 samples at 50 a page
    # A filter other than the split counts the queue itself.
    response = client.get(reverse("review-queue", args=[project.slug]) + "?kind=unanimous")
    assert response.context["counts"]["total"] == 3


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
    connection.vendor != "postgresql", reason="this race runs on PostgreSQL (set DATABASE_URL)"
)


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
        assert_stored_equals_live(project)
