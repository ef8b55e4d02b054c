"""What the labeling screen says: the Tie button's state, the criterion at the top, progress."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.test import override_settings
from django.urls import reverse
from django.utils.html import escape

from annotation import tiecap
from annotation.models import Criterion, Vote, WorkOrder
from annotation.selectors import work as work_selectors
from annotation.selectors.work import project_pool
from annotation.services.projects import member_add
from tests.annotation.test_labeling_views import HTMX, current_ids, label_url, submit
from tests.annotation.work_data import calibrate, make_formal
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

TIE_INPUT = re.compile(r'<input type="radio" name="choice" value="tie"([^>]*)>')


@pytest.fixture
def formal_member(project, annotator, lead):
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    return annotator


def tie_input(body: str) -> str:
    found = TIE_INPUT.search(body)
    assert found, "no tie button"
    return found[1]


@pytest.mark.parametrize(
    ("ties", "votes", "cap", "wait"),
    [
        (0, 0, "0.1", 10),
        (0, 9, "0.1", 1),
        (0, 10, "0.1", 0),
        (1, 10, "0.1", 10),
        (1, 20, "0.1", 0),
        (0, 0, "0.5", 2),  # 1 tie in 2 votes is 50%, not below it
        (0, 0, "1", 1),
        (3, 3, "1", 1),  # at 100% ties stay strictly below all votes
        (0, 5, "0", None),
    ],
)
def test_votes_until_tie_matches_the_cap_rule(ties, votes, cap, wait):
    got = tiecap.votes_until_tie(ties=ties, votes=votes, cap=cap)
    assert got == wait
    if got is not None:
        assert tiecap.new_tie_allowed(ties=ties, votes=votes + got, cap=cap)
        if got:
            assert not tiecap.new_tie_allowed(ties=ties, votes=votes + got - 1, cap=cap)


def test_tie_button_is_off_with_its_reason_until_a_tie_is_allowed(client, project, formal_member):
    project.batch_size = 5
    project.save()
    make_formal(project, 5)
    client.force_login(formal_member)
    page = client.get(label_url(project))
    body = page.content.decode()
    assert "disabled" in tie_input(body)
    assert (
        "No tie available: ties must stay below 10% of your formal votes. "
        "The next tie is possible after 10 more votes for A or B."
    ) in body
    assert "ties available: <strong>0</strong>" in body
    response = page
    for _ in range(9):
        response = submit(client, project, current_ids(response), htmx=True)
    assert "after 1 more vote for A or B." in response.content.decode()
    response = submit(client, project, current_ids(response), htmx=True)
    body = response.content.decode()
    assert "disabled" not in tie_input(body)
    assert 'id="tie-reason"' not in body
    assert "ties available: <strong>1</strong>" in body


def test_no_ties_project_says_so(client, project, formal_member):
    project.tie_cap = 0
    project.save()
    make_formal(project, 1)
    client.force_login(formal_member)
    body = client.get(label_url(project)).content.decode()
    assert "disabled" in tie_input(body)
    assert "No ties in this project: choose A or B." in body


def test_calibration_items_keep_the_tie_button(client, project, annotator, seeds):
    member_add(project=project, user=annotator)
    client.force_login(annotator)
    body = client.get(label_url(project)).content.decode()
    assert "disabled" not in tie_input(body)


def criterion_bar(body: str) -> str:
    found = re.search(r'<div class="criterion-bar[^"]*".*?</details>', body, re.S)
    assert found, "no criterion bar"
    return found[0]


def test_criterion_is_at_the_top_and_its_change_is_marked(client, project, formal_member):
    """Criterion-major: the batch's samples come back under the next criterion, marked."""
    make_formal(project, 2)
    criteria = list(Criterion.objects.filter(project=project, split="open_ended").order_by("order"))
    client.force_login(formal_member)
    page = client.get(label_url(project))
    bar = criterion_bar(page.content.decode())
    assert escape(criteria[0].name) in bar and "new criterion" not in bar
    second = submit(client, project, current_ids(page), htmx=True)
    bar = criterion_bar(second.content.decode())
    assert 'class="criterion-bar"' in bar  # same criterion: not marked
    assert escape(criteria[0].name) in bar and "new criterion" not in bar
    third = submit(client, project, current_ids(second), htmx=True)
    body = third.content.decode()
    bar = criterion_bar(body)
    assert 'class="criterion-bar changed"' in bar
    assert escape(criteria[1].name) in bar and "new criterion" in bar
    assert "You have seen this sample before: judge it now on this criterion only." in bar
    assert current_ids(third)[0] == current_ids(page)[0]


def test_sample_major_marks_every_criterion_change(client, project, formal_member):
    project.work_order = WorkOrder.SAMPLE_MAJOR
    project.save()
    make_formal(project, 1)
    client.force_login(formal_member)
    page = client.get(label_url(project), **HTMX)
    nxt = submit(client, project, current_ids(page), htmx=True)
    assert current_ids(nxt)[0] == current_ids(page)[0]
    assert "new criterion" in criterion_bar(nxt.content.decode())


PROGRESS = re.compile(r'aria-valuemax="(\d+)" aria-valuenow="(\d+)"')


def progress(response) -> tuple[int, int]:
    found = PROGRESS.search(response.content.decode())
    assert found, "no progress bar"
    return int(found[2]), int(found[1])


def test_progress_covers_the_whole_assignment_across_batch_claims(
    client, project, formal_member, lead
):
    """8 samples x 3 annotators over 4 calibrated people: a share of 6 samples, 30 votes."""
    for name in ("peer1", "peer2", "peer3"):
        other = make_user(name)
        member_add(project=project, user=other)
        calibrate(project, other, lead)
    project.batch_size = 2
    project.save()
    make_formal(project, 8)
    client.force_login(formal_member)
    response = client.get(label_url(project))
    seen = [progress(response)]
    for _ in range(24):  # crosses the claims of the 2nd and 3rd batches (after 10 and 20 votes)
        response = submit(client, project, current_ids(response), htmx=True)
        seen.append(progress(response))
    assert seen == [(i, 30) for i in range(25)]
    assert "votes of your whole assignment" in response.content.decode()


def test_project_size_is_counted_once_a_minute(project, lead, django_assert_num_queries):
    make_formal(project, 3)
    make_formal(project, 2, prefix="r", split="reasoning")
    peer = make_user("peer")
    member_add(project=project, user=peer)
    calibrate(project, peer, lead)
    with django_assert_num_queries(1):
        assert project_pool(project) == {"open_ended": 3, "reasoning": 2, "calibrated": 1}
    make_formal(project, 4, prefix="late")
    with django_assert_num_queries(0):  # cached: the submit path does not count samples
        assert project_pool(project)["open_ended"] == 3
    cache.clear()
    assert project_pool(project)["open_ended"] == 7


def test_project_size_is_kept_in_the_process_in_front_of_a_shared_cache(
    project, django_assert_num_queries, monkeypatch
):
    """A cache outside the process (dummy here: it keeps nothing) is not asked on every request."""
    monkeypatch.setattr(work_selectors, "_pool_memo", {})
    make_formal(project, 3)
    with override_settings(
        CACHES={"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    ):
        with django_assert_num_queries(1):
            assert project_pool(project)["open_ended"] == 3
        make_formal(project, 4, prefix="late")
        with django_assert_num_queries(0):  # the process's memo, not the cache
            assert project_pool(project)["open_ended"] == 3
        monkeypatch.setattr(work_selectors, "POOL_MEMO_SECONDS", 0.0)
        work_selectors._pool_memo.clear()
        with django_assert_num_queries(1):
            assert project_pool(project)["open_ended"] == 7
        with django_assert_num_queries(1):  # expired at once: counted again
            assert project_pool(project)["open_ended"] == 7


def test_keeping_a_tie_already_cast_is_never_blocked(client, project, formal_member):
    make_formal(project, 1)
    client.force_login(formal_member)
    ids = current_ids(client.get(label_url(project)))
    # A tie cast while the cap allowed it (made directly: the cap allows none at the first vote).
    Vote.objects.create(
        sample_id=ids[0],
        criterion_id=ids[1],
        annotator=formal_member,
        choice="tie",
        rationale="Both equally complete here.",
    )
    body = client.get(reverse("label-item", args=[project.slug, *ids])).content.decode()
    assert "ties available: <strong>0</strong>" in body
    assert "disabled" not in tie_input(body)
    assert re.search(r'name="choice" value="tie"\s*checked', body)
