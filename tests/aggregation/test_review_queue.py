"""The review queue: which kept samples it holds, its filters, navigation, counts, query count."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from aggregation.models import Outcome, ReviewDecision, SampleReview
from aggregation.selectors.review_queue import (
    QueueFilters,
    review_counts,
    review_neighbours,
    review_page,
    review_queue,
)
from annotation.models import Criterion, ProblemReport
from tests.aggregation.labels import label
from tests.conftest import make_sample


@pytest.fixture
def queue_data(project, lead, annotators):
    oe = list(Criterion.objects.filter(project=project, split="open_ended").order_by("order"))
    rs = list(Criterion.objects.filter(project=project, split="reasoning").order_by("order"))
    unanimous = make_sample(project, "unanimous")  # all kept labels unanimous
    label(unanimous, oe[0])
    label(unanimous, oe[1], preference="B")
    mixed = make_sample(project, "mixed")  # a majority+tie label and a dropped one
    label(mixed, oe[0], Outcome.KEPT_MAJORITY_TIE)
    label(mixed, oe[1], Outcome.DROPPED_SPLIT)
    flagged = make_sample(project, "flagged", split="reasoning")
    label(flagged, rs[0])
    ProblemReport.objects.create(sample=flagged, reporter=annotators[0], kind="unreadable")
    dropped = make_sample(project, "dropped")  # nothing kept: not in the queue
    label(dropped, oe[0], Outcome.DROPPED_TIES)
    seed = make_sample(project, "seed", is_seed=True)  # seeds are not exported by default
    label(seed, oe[0])
    make_sample(project, "unlabelled")
    SampleReview.objects.create(sample=unanimous, reviewed_by=lead, reviewed_at=timezone.now())
    return {"oe": oe, "rs": rs, "unanimous": unanimous, "mixed": mixed, "flagged": flagged}


def ids(project, **filters):
    qs = review_queue(project=project, filters=QueueFilters(**filters))
    return [s.external_id for s in qs]


def test_queue_holds_kept_samples_in_id_order(project, queue_data):
    assert ids(project) == ["unanimous", "mixed", "flagged"]


def test_filters(project, queue_data):
    oe, rs = queue_data["oe"], queue_data["rs"]
    assert ids(project, split="reasoning") == ["flagged"]
    assert ids(project, criterion=oe[1].pk) == ["unanimous"]  # mixed's oe[1] was dropped
    assert ids(project, criterion=rs[0].pk) == ["flagged"]
    assert ids(project, kind="majority_tie") == ["mixed"]
    assert ids(project, kind="unanimous") == ["unanimous", "flagged"]
    assert ids(project, criterion=oe[0].pk, kind="unanimous") == ["unanimous"]
    assert ids(project, disagreements=True) == ["mixed"]
    assert ids(project, flagged=True) == ["flagged"]
    assert ids(project, unreviewed=True) == ["mixed", "flagged"]
    assert ids(project, split="open_ended", unreviewed=True, disagreements=True) == ["mixed"]


def test_seeds_join_the_queue_when_the_project_exports_them(project, queue_data):
    project.export_includes_seeds = True
    project.save()
    assert "seed" in ids(project)


def test_filters_from_the_query_string_ignore_junk(project, queue_data):
    f = QueueFilters.from_query(
        {"split": "nope", "criterion": "1; drop", "kind": "x", "flagged": "1", "unreviewed": "on"}
    )
    assert f == QueueFilters(flagged=True, unreviewed=True)
    assert f.querystring() == "?flagged=1&unreviewed=1"
    assert QueueFilters().querystring() == ""


def test_neighbours_and_counts(project, queue_data):
    u, m, f = queue_data["unanimous"], queue_data["mixed"], queue_data["flagged"]
    assert review_neighbours(project=project, filters=QueueFilters(), sample_id=m.pk) == {
        "prev_id": u.pk,
        "next_id": f.pk,
        "position": 2,
        "position_counted": True,
        "in_queue": True,
        "total": 3,
    }
    # A sample that left the filtered queue still has neighbours, found by id.
    unreviewed = QueueFilters(unreviewed=True)
    nav = review_neighbours(project=project, filters=unreviewed, sample_id=u.pk)
    assert (nav["prev_id"], nav["next_id"], nav["position"]) == (None, m.pk, None)
    assert (nav["in_queue"], nav["total"]) == (False, 2)
    nav = review_neighbours(project=project, filters=unreviewed, sample_id=f.pk)
    assert (nav["prev_id"], nav["next_id"], nav["position"]) == (m.pk, None, 2)
    assert review_counts(project=project) == {
        "total": 3,
        "reviewed": 1,
        "left": 2,
        "share": pytest.approx(1 / 3),
    }
    unreviewed_counts = review_counts(project=project, filters=QueueFilters(unreviewed=True))
    assert (unreviewed_counts["total"], unreviewed_counts["left"]) == (3, 2)
    assert review_counts(project=project, filters=QueueFilters(split="reasoning"))["left"] == 1


def test_page_rows_carry_labels_and_review_state(project, lead, queue_data):
    oe, m = queue_data["oe"], queue_data["mixed"]
    ReviewDecision.objects.create(
        sample=m, criterion=oe[0], action="discard", reason="redundant", author=lead
    )
    page = review_page(project=project, filters=QueueFilters())
    rows = {r["sample"].external_id: r for r in page["rows"]}
    assert rows["unanimous"]["sample"].is_reviewed is True
    assert rows["flagged"]["sample"].n_flags == 1
    mixed = {lab.criterion.key: lab.discarded for lab in rows["mixed"]["labels"]}
    assert mixed == {oe[0].key: True, oe[1].key: False}


def test_queue_page_filters_and_htmx_fragment(client, project, lead, queue_data):
    client.force_login(lead)
    url = reverse("review-queue", args=[project.slug])
    html = client.get(url, {"flagged": "1"}).content.decode()
    assert ">flagged</strong>" in html and ">mixed</strong>" not in html
    assert "0</strong> reviewed" in html and "1</strong> left of 1" in html
    fragment = client.get(
        url, {"split": "open_ended"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="queue-results"
    ).content.decode()
    assert "<html" not in fragment and 'hx-swap-oob="true"' in fragment
    assert ">mixed</strong>" in fragment and ">flagged</strong>" not in fragment
    # Links into items keep the filters.
    assert f"/review/{queue_data['mixed'].pk}/?split=open_ended" in fragment


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_query_count_is_constant(client, project, lead, queue_data):
    client.force_login(lead)
    url = reverse("review-queue", args=[project.slug])
    item = reverse("review-item", args=[project.slug, queue_data["mixed"].pk])
    before, before_item = _queries(client, url), _queries(client, item)
    oe = queue_data["oe"]
    for i in range(15):
        s = make_sample(project, f"more{i}")
        label(s, oe[0])
        label(s, oe[1], Outcome.KEPT_MAJORITY_TIE, "B")
    assert _queries(client, url) == before
    assert _queries(client, item) == before_item


def test_pages_by_id_equal_pages_by_number(client, project, lead, queue_data):
    """Next / previous links carry the id the page starts after (or ends before)."""
    oe = queue_data["oe"]
    for i in range(7):
        label(make_sample(project, f"page{i}"), oe[0])
    counts = review_counts(project=project)
    by_number = [
        [
            r["sample"].pk
            for r in review_page(project=project, filters=QueueFilters(), page=p, per_page=4)[
                "rows"
            ]
        ]
        for p in (1, 2, 3)
    ]
    first = review_page(project=project, filters=QueueFilters(), per_page=4, counts=counts)
    assert first["total"] == 10 and first["pages"] == 3
    second = review_page(
        project=project, filters=QueueFilters(), page=2, per_page=4, after=first["last_id"]
    )
    third = review_page(
        project=project, filters=QueueFilters(), page=3, per_page=4, after=second["last_id"]
    )
    back = review_page(
        project=project, filters=QueueFilters(), page=2, per_page=4, before=third["first_id"]
    )
    ids = [[r["sample"].pk for r in p["rows"]] for p in (first, second, third, back)]
    assert ids == [*by_number, by_number[1]]
    client.force_login(lead)
    url = reverse("review-queue", args=[project.slug])
    html = client.get(url, {"page": 2, "after": first["last_id"]}).content.decode()
    assert f"page=1&amp;before={by_number[1][0]}" not in html  # 50 a page: one page here
    assert "10 samples match" in html
