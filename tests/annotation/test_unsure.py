"""The "not sure" flag: stored with the vote, kept on revisits, shown in review, exported."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Vote
from annotation.pseudonyms import Pseudonyms
from annotation.services.projects import member_add
from tests.annotation.test_labeling_views import HTMX, current_ids, label_url, submit
from tests.annotation.work_data import calibrate, make_formal

pytestmark = pytest.mark.django_db


@pytest.fixture
def formal_member(project, annotator, lead):
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    return annotator


def test_not_sure_is_stored_and_shown_again_on_revisit(client, project, formal_member):
    make_formal(project, 1)
    client.force_login(formal_member)
    page = client.get(label_url(project))
    assert 'name="unsure" value="1" >' in page.content.decode()  # unticked by default
    ids = current_ids(page)
    submit(client, project, ids, htmx=True, unsure="1")
    vote = Vote.objects.get(annotator=formal_member)
    assert vote.unsure is True
    revisit = client.get(reverse("label-item", args=[project.slug, *ids]), **HTMX)
    assert 'name="unsure" value="1" checked>' in revisit.content.decode()
    # Revising without the tick clears it; the rest of the vote is unchanged.
    submit(client, project, ids, htmx=True)
    vote.refresh_from_db()
    assert vote.unsure is False and vote.choice == "A"


def test_a_refused_vote_keeps_the_tick(client, project, formal_member):
    make_formal(project, 1)
    client.force_login(formal_member)
    ids = current_ids(client.get(label_url(project)))
    response = submit(client, project, ids, htmx=True, rationale="short", unsure="1")
    assert response.status_code == 422
    assert 'name="unsure" value="1" checked>' in response.content.decode()
    assert not Vote.objects.exists()


def test_review_shows_the_flag_to_the_lead(client, project, formal_member, lead):
    samples = make_formal(project, 1)
    client.force_login(formal_member)
    ids = current_ids(client.get(label_url(project)))
    submit(client, project, ids, htmx=True, unsure="1")
    client.force_login(lead)
    body = client.get(reverse("review-item", args=[project.slug, samples[0].pk])).content.decode()
    assert 'title="The annotator marked this answer as not sure">not sure</span>' in body


def test_votes_export_records_carry_the_flag():
    records = [
        {"id": 1, "annotator_id": 5, "choice": "A", "rationale": "r", "unsure": True},
        {"id": 2, "annotator_id": 6, "choice": "B", "rationale": "s", "unsure": False},
    ]
    assert [v["unsure"] for v in Pseudonyms().votes(records)] == [True, False]
