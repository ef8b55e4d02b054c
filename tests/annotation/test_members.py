"""The lead's membership page: listing, add, remove, reassign; refused to everyone else."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import ProjectMember, Slot, Vote
from annotation.services import assignment, work
from annotation.services.projects import member_add
from tests.conftest import make_sample, make_user

from .work_data import calibrate, make_formal, vote_next

pytestmark = pytest.mark.django_db


@pytest.fixture
def busy(project, annotators, lead):
    """Two calibrated annotators with work in progress, one still calibrating."""
    project.batch_size = 2
    project.save()
    make_sample(project, "seed-1", is_seed=True)
    make_formal(project, 4)
    for user in annotators[:2]:
        calibrate(project, user, lead)
    vote_next(project, annotators[0])
    work.work_next(project=project, annotator=annotators[1])
    return annotators


def url(project, name="members", *args):
    return reverse(name, args=[project.slug, *args])


def test_lead_sees_members_with_state_and_counts(client, project, lead, busy):
    client.force_login(lead)
    response = client.get(url(project))
    assert response.status_code == 200
    rows = {r.member.user.username: r for r in response.context["rows"]}
    assert rows["ann1"].state == "calibrated"
    assert (rows["ann1"].assigned, rows["ann1"].done, rows["ann1"].votes) == (2, 0, 1)
    assert len(rows["ann1"].open_slots) == 2
    assert rows["ann3"].state == "calibrating"
    assert (
        rows["ann3"].seed_total
        == rows["ann3"].member.project.criteria.filter(split="open_ended").count()
    )
    body = response.content.decode()
    assert "f-000000" in body and "calibrating" in body and "awaiting review" not in body
    assert response.context["n_open"] == 4


def test_lead_adds_an_existing_user(client, project, lead, busy):
    newcomer = make_user("newcomer")
    client.force_login(lead)
    assert newcomer in client.get(url(project)).context["addable"]
    response = client.post(url(project, "member-add"), {"user_id": newcomer.pk})
    assert response.status_code == 302
    member = ProjectMember.objects.get(project=project, user=newcomer)
    assert member.is_active and not member.is_calibrated
    assert newcomer.groups.filter(name="annotator").exists()
    assert newcomer not in client.get(url(project)).context["addable"]


def test_lead_removes_an_annotator_votes_kept(client, project, lead, busy):
    member = ProjectMember.objects.get(project=project, user=busy[0])
    client.force_login(lead)
    response = client.post(url(project, "member-remove", member.pk), follow=True)
    assert "2 unfinished slots released, votes kept" in response.content.decode()
    member.refresh_from_db()
    assert not member.is_active
    assert not Slot.objects.filter(annotator=busy[0]).exists()
    assert Vote.objects.filter(annotator=busy[0]).count() == 1


def test_lead_reassigns_a_slot_to_someone_and_back_to_open(client, project, lead, busy):
    calibrate(project, busy[2], lead)
    slot = Slot.objects.filter(annotator=busy[1]).first()
    client.force_login(lead)
    client.post(url(project, "slot-reassign", slot.pk), {"to": busy[2].pk})
    slot.refresh_from_db()
    assert slot.annotator == busy[2]
    client.post(url(project, "slot-reassign", slot.pk), {"to": ""})
    slot.refresh_from_db()
    assert slot.annotator is None
    # a target that already labels the sample is refused with a message
    mine = Slot.objects.get(annotator=busy[1])
    assert Slot.objects.filter(sample=mine.sample, annotator=busy[0]).exists()
    response = client.post(url(project, "slot-reassign", mine.pk), {"to": busy[0].pk}, follow=True)
    assert "already" in response.content.decode()
    mine.refresh_from_db()
    assert mine.annotator == busy[1]


def test_reassign_to_a_non_member_is_refused(client, project, lead, busy):
    stranger = make_user("stranger")
    slot = Slot.objects.filter(annotator=busy[1]).first()
    client.force_login(lead)
    response = client.post(url(project, "slot-reassign", slot.pk), {"to": stranger.pk}, follow=True)
    assert "not an active annotator" in response.content.decode()
    slot.refresh_from_db()
    assert slot.annotator == busy[1]


def test_slot_of_another_project_is_not_found(client, project, lead, busy):
    from annotation.services.projects import project_create

    other = project_create(name="Other", slug="other")
    slot = Slot.objects.filter(annotator=busy[1]).first()
    client.force_login(lead)
    assert client.post(url(other, "slot-reassign", slot.pk), {"to": ""}).status_code == 404


@pytest.mark.parametrize("who", ["annotator", "outsider"])
def test_non_leads_are_refused(client, project, busy, who, outsider):
    user = busy[0] if who == "annotator" else outsider
    member = ProjectMember.objects.get(project=project, user=busy[1])
    slot = Slot.objects.filter(annotator=busy[1]).first()
    client.force_login(user)
    assert client.get(url(project)).status_code == 403
    assert client.post(url(project, "member-add"), {"user_id": user.pk}).status_code == 403
    assert client.post(url(project, "member-remove", member.pk)).status_code == 403
    assert client.post(url(project, "slot-reassign", slot.pk), {"to": ""}).status_code == 403
    member.refresh_from_db()
    slot.refresh_from_db()
    assert member.is_active and slot.annotator == busy[1]
    assert not ProjectMember.objects.filter(project=project, user=outsider).exists()


def test_anonymous_goes_to_login(client, project, busy):
    response = client.get(url(project))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    member = ProjectMember.objects.get(project=project, user=busy[1])
    assert client.post(url(project, "member-remove", member.pk)).status_code == 302
    assert ProjectMember.objects.get(pk=member.pk).is_active


def test_get_only_and_post_only(client, project, lead, busy):
    client.force_login(lead)
    assert client.post(url(project)).status_code == 405
    assert client.get(url(project, "member-add")).status_code == 405


def test_member_add_for_removed_member_reactivates(client, project, lead, busy):
    member = ProjectMember.objects.get(project=project, user=busy[0])
    assignment.member_remove(project=project, member=member, by=lead)
    client.force_login(lead)
    client.post(url(project, "member-add"), {"user_id": busy[0].pk})
    member.refresh_from_db()
    assert member.is_active
    assert member_add  # the page uses the shared membership service
