"""Skip for now: a reason is required, the skip is stored, and the item comes back last."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Criterion, Skip, Vote
from annotation.services import voting, work, work_types
from annotation.services.projects import member_add
from tests.annotation.test_labeling_views import HTMX, current_ids, label_url, submit
from tests.annotation.work_data import calibrate, make_formal

pytestmark = pytest.mark.django_db


@pytest.fixture
def formal_member(project, annotator, lead):
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    return annotator


def skip(client, project, ids, reason="Need to check the chart again", htmx=True):
    data = {"sample_id": ids[0], "criterion_id": ids[1], "reason": reason}
    return client.post(reverse("label-skip", args=[project.slug]), data, **(HTMX if htmx else {}))


def test_skip_is_stored_and_the_item_comes_back_after_the_others(client, project, formal_member):
    make_formal(project, 2)
    n_criteria = Criterion.objects.filter(project=project, split="open_ended").count()
    client.force_login(formal_member)
    first = current_ids(client.get(label_url(project)))
    response = skip(client, project, first)
    assert response.status_code == 200
    assert "Skipped for now" in response["HX-Trigger-After-Settle"]
    stored = Skip.objects.get()
    assert (stored.sample_id, stored.criterion_id, stored.annotator_id, stored.round) == (
        *first,
        formal_member.pk,
        0,
    )
    assert stored.reason == "Need to check the chart again"
    served = [current_ids(response)]
    assert served[0] != first
    # Every other item of the batch comes before the skipped one.
    for _ in range(2 * n_criteria - 1):
        response = submit(client, project, served[-1], htmx=True)
        served.append(current_ids(response))
    assert first not in served[:-1]
    assert served[-1] == first
    assert b"skipped earlier" in response.content
    submit(client, project, first, htmx=True)
    assert Vote.objects.filter(annotator=formal_member, round=0).count() == 2 * n_criteria
    assert Skip.objects.count() == 1  # a vote does not remove the record


def test_a_skip_needs_a_reason_and_keeps_the_item(client, project, formal_member):
    make_formal(project, 1)
    client.force_login(formal_member)
    ids = current_ids(client.get(label_url(project)))
    response = skip(client, project, ids, reason="   ")
    assert response.status_code == 422
    body = response.content.decode()
    assert "Say why you skip this item; a few words are enough." in body
    assert current_ids(response) == ids
    assert '<details class="skip" open>' in body
    assert not Skip.objects.exists()


def test_a_too_long_reason_is_refused_naming_the_field(client, project, formal_member):
    make_formal(project, 1)
    client.force_login(formal_member)
    ids = current_ids(client.get(label_url(project)))
    response = skip(client, project, ids, reason="x" * 2001)
    assert response.status_code == 422
    assert "The reason is longer than 2,000 characters (2,001)." in response.content.decode()
    assert not Skip.objects.exists()


def test_malformed_ids_are_a_400_naming_the_field(client, project, formal_member):
    client.force_login(formal_member)
    response = client.post(
        reverse("label-skip", args=[project.slug]), {"sample_id": "x", "criterion_id": "1"}
    )
    assert response.status_code == 400
    assert response.content.decode() == "sample_id: Enter a whole number."


def test_an_answered_item_is_not_skipped(project, formal_member):
    make_formal(project, 1)
    item = work.work_next(project=project, annotator=formal_member)
    voting.vote_submit(
        project=project,
        annotator=formal_member,
        sample_id=item.sample.pk,
        criterion_id=item.criterion.pk,
        shown_choice="A",
        rationale="Long enough rationale.",
        seconds=1,
    )
    with pytest.raises(work_types.VoteRejected) as refused:
        work.item_skip(
            project=project,
            annotator=formal_member,
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            reason="changed my mind",
        )
    assert refused.value.field == "skip"
    assert "already answered" in refused.value.message


def test_an_item_not_held_cannot_be_skipped(client, project, formal_member):
    make_formal(project, 1)
    criterion = Criterion.objects.filter(project=project, split="open_ended").first()
    sample_id = project.samples.get().pk
    client.force_login(formal_member)  # holds no slot yet (nothing claimed)
    response = skip(client, project, (sample_id, criterion.pk))
    assert response.status_code == 422
    assert "This sample is not assigned to you." in response.content.decode()
    assert not Skip.objects.exists()


def test_plain_post_redirects_back_to_the_screen(client, project, formal_member):
    make_formal(project, 1)
    client.force_login(formal_member)
    ids = current_ids(client.get(label_url(project)))
    response = skip(client, project, ids, htmx=False)
    assert response.status_code == 302 and response["Location"] == label_url(project)
    assert current_ids(client.get(label_url(project))) != ids


def test_seed_items_can_be_skipped_in_calibration(client, project, annotator, seeds):
    member_add(project=project, user=annotator)
    client.force_login(annotator)
    first = current_ids(client.get(label_url(project)))
    response = skip(client, project, first)
    assert response.status_code == 200
    assert current_ids(response) != first
    assert Skip.objects.get().round == 1
