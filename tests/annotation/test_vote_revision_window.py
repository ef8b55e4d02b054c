"""Revising a formal vote on a completed sample: the project's window, the lock and its history."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.html import escape

from aggregation.services.aggregate import project_aggregate
from annotation.models import Choice, RevisionWindow, Slot, Vote, VoteRevision
from annotation.services import voting, work, work_types
from annotation.services.project_settings import project_settings_update
from annotation.services.projects import member_add
from annotation.services.voting import REVISION_LOCKED

from .work_data import GOOD, calibrate, make_formal

pytestmark = pytest.mark.django_db

CHANGED = "On a second look B covers more of the image."
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def user(project, annotator, lead):
    project.batch_size = 1
    project.save()
    make_formal(project, 2)
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    return annotator


def submit(project, user, vote, choice="B", rationale=CHANGED):
    return voting.vote_submit(
        project=project,
        annotator=user,
        sample_id=vote.sample_id,
        criterion_id=vote.criterion_id,
        shown_choice=choice,
        rationale=rationale,
        seconds=2.0,
    )


def complete_one_sample(project, user) -> Vote:
    """Vote "A" on every criterion of the first sample served; return its first vote."""
    first = None
    while True:
        item = work.work_next(project=project, annotator=user)
        if first is not None and item.sample.pk != first.sample_id:
            break
        vote = voting.vote_submit(
            project=project,
            annotator=user,
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            shown_choice="A",
            rationale=GOOD,
            seconds=3.0,
        )
        first = first or vote
        slot = Slot.objects.get(sample_id=item.sample.pk, annotator=user)
        if slot.completed_at is not None:
            break
    assert Slot.objects.get(sample_id=first.sample_id, annotator=user).completed_at is not None
    return first


def test_default_window_is_until_the_next_aggregation(project):
    assert project.vote_revision_window == RevisionWindow.UNTIL_AGGREGATION


def test_revision_before_aggregation_is_recorded_with_who_when_and_what(project, user):
    vote = complete_one_sample(project, user)
    revised = submit(project, user, vote)
    assert revised.pk == vote.pk
    stored = Vote.objects.get(pk=vote.pk)
    assert (stored.choice, stored.rationale) == (Choice.B, CHANGED)
    history = VoteRevision.objects.get(vote=vote)
    assert (history.choice, history.rationale, history.seconds) == (Choice.A, GOOD, 3.0)
    assert history.revised_by == user
    assert history.recorded_at <= history.replaced_at <= stored.updated_at


def test_revision_after_the_samples_aggregation_is_refused(project, user):
    vote = complete_one_sample(project, user)
    project_aggregate(project=project, n_boot=0)
    with pytest.raises(work_types.VoteRejected) as rejected:
        submit(project, user, vote)
    assert rejected.value.field == "vote"
    assert rejected.value.message == REVISION_LOCKED[RevisionWindow.UNTIL_AGGREGATION]
    stored = Vote.objects.get(pk=vote.pk)
    assert (stored.choice, stored.rationale) == (Choice.A, GOOD)
    assert not VoteRevision.objects.exists()
    # Submitting the same answer again is no revision: accepted, nothing written.
    assert submit(project, user, vote, choice="A", rationale=GOOD).pk == vote.pk
    assert not VoteRevision.objects.exists()


def test_a_revision_made_in_time_is_locked_by_the_following_aggregation(project, user):
    vote = complete_one_sample(project, user)
    submit(project, user, vote)
    project_aggregate(project=project, n_boot=0)
    with pytest.raises(work_types.VoteRejected):
        submit(project, user, vote, choice="A", rationale=GOOD)
    assert VoteRevision.objects.filter(vote=vote).count() == 1


def test_votes_of_a_sample_in_progress_stay_revisable_after_aggregation(project, user):
    item = work.work_next(project=project, annotator=user)
    vote = voting.vote_submit(
        project=project,
        annotator=user,
        sample_id=item.sample.pk,
        criterion_id=item.criterion.pk,
        shown_choice="A",
        rationale=GOOD,
        seconds=1.0,
    )
    assert Slot.objects.get(sample=item.sample, annotator=user).completed_at is None
    project_aggregate(project=project, n_boot=0)
    assert submit(project, user, vote).choice == Choice.B


def test_the_leads_setting_changes_the_window(project, user, lead):
    vote = complete_one_sample(project, user)
    project_aggregate(project=project, n_boot=0)
    project_settings_update(project=project, by=lead, vote_revision_window=RevisionWindow.ALWAYS)
    project.refresh_from_db()
    assert submit(project, user, vote).choice == Choice.B
    assert VoteRevision.objects.filter(vote=vote, revised_by=user).count() == 1

    project_settings_update(
        project=project, by=lead, vote_revision_window=RevisionWindow.UNTIL_COMPLETE
    )
    project.refresh_from_db()
    other = complete_one_sample(project, user)  # the second sample, never aggregated
    with pytest.raises(work_types.VoteRejected) as rejected:
        submit(project, user, other)
    assert rejected.value.message == REVISION_LOCKED[RevisionWindow.UNTIL_COMPLETE]


def test_the_settings_page_offers_the_window(client, project, lead):
    client.force_login(lead)
    body = client.get(reverse("project-settings", args=[project.slug])).content.decode()
    assert 'name="vote_revision_window"' in body
    assert escape("Until the sample's next aggregation") in body


@pytest.mark.parametrize("htmx", [True, False])
def test_labeling_screen_says_why_a_locked_vote_was_not_changed(client, project, user, htmx):
    vote = complete_one_sample(project, user)
    project_aggregate(project=project, n_boot=0)
    client.force_login(user)
    back = reverse("label-item", args=[project.slug, vote.sample_id, vote.criterion_id])
    assert client.get(back).status_code == 200
    response = client.post(
        reverse("label", args=[project.slug]),
        {
            "sample_id": vote.sample_id,
            "criterion_id": vote.criterion_id,
            "choice": "B",
            "rationale": CHANGED,
        },
        **(HTMX if htmx else {}),
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert escape(REVISION_LOCKED[RevisionWindow.UNTIL_AGGREGATION]) in body
    assert Vote.objects.get(pk=vote.pk).choice == Choice.A


def test_back_to_a_locked_vote_says_so_before_any_edit(client, project, user):
    vote = complete_one_sample(project, user)
    client.force_login(user)
    item_url = reverse("label-item", args=[project.slug, vote.sample_id, vote.criterion_id])
    message = escape(REVISION_LOCKED[RevisionWindow.UNTIL_AGGREGATION])
    assert message not in client.get(item_url).content.decode()
    project_aggregate(project=project, n_boot=0)
    assert message in client.get(item_url).content.decode()
    back = client.get(reverse("label-back", args=[project.slug]), **HTMX)
    assert back.status_code == 200 and message in back.content.decode()


def test_an_aggregation_that_leaves_the_labels_unchanged_still_locks(project, user, lead):
    vote = complete_one_sample(project, user)
    project_aggregate(project=project, n_boot=0)
    project_settings_update(project=project, by=lead, vote_revision_window=RevisionWindow.ALWAYS)
    project.refresh_from_db()
    # A new rationale, the same choice: the next aggregation writes no label of the sample.
    submit(project, user, vote, choice="A", rationale=CHANGED)
    project_settings_update(
        project=project, by=lead, vote_revision_window=RevisionWindow.UNTIL_AGGREGATION
    )
    project.refresh_from_db()
    summary = project_aggregate(project=project, n_boot=0)
    assert summary["splits"]["open_ended"]["unchanged"] == summary["splits"]["open_ended"]["labels"]
    with pytest.raises(work_types.VoteRejected):
        submit(project, user, vote, choice="A", rationale=GOOD)
