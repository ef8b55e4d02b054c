"""The calibration discussion names peers by pseudonym to annotators, by username to the lead."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Criterion, ProjectMember, Vote
from annotation.pseudonyms import project_pseudonyms
from annotation.services.projects import member_add
from core.permissions import ANNOTATOR_GROUP
from tests.conftest import make_sample, make_user

pytestmark = pytest.mark.django_db

# Joined in this order; the usernames' alphabetical order is the reverse.
USERNAMES = ("zora-kessler", "yusuf-almeida", "xenia-varga")


@pytest.fixture
def trio(project):
    users = [make_user(name, ANNOTATOR_GROUP) for name in USERNAMES]
    for user in users:
        member_add(project=project, user=user)
    seed = make_sample(project, "seed-1", is_seed=True)
    criterion = Criterion.objects.filter(project=project, split="open_ended").first()
    for n, user in enumerate(users, start=1):
        Vote.objects.create(
            sample=seed,
            criterion=criterion,
            annotator=user,
            round=1,
            choice="A",
            rationale=f"Rationale number {n} about the lamps.",
        )
    # Everyone has finished the seed round (one seed item per criterion of the split).
    for other in Criterion.objects.filter(project=project, split="open_ended").exclude(
        pk=criterion.pk
    ):
        for user in users:
            Vote.objects.create(
                sample=seed, criterion=other, annotator=user, round=1, choice="B", rationale="ok"
            )
    return users


def page(client, project, user) -> str:
    client.force_login(user)
    response = client.get(reverse("calibration", args=[project.slug]))
    assert response.status_code == 200
    return response.content.decode()


def test_pseudonyms_follow_membership_order(project, trio):
    pseudonyms = project_pseudonyms(project=project)
    assert [pseudonyms.name(u.pk) for u in trio] == ["annotator_01", "annotator_02", "annotator_03"]


def test_annotator_sees_peers_by_pseudonym_and_themself_as_you(client, project, trio):
    body = page(client, project, trio[1])
    for peer in (trio[0], trio[2]):
        assert peer.username not in body
    assert "annotator_01" in body and "annotator_03" in body
    assert "annotator_02" not in body  # their own name is "you"
    assert '<td class="voter">you' in body and "<strong>you</strong>" in body
    # The peers' rationales are part of the discussion, under their pseudonyms.
    assert "Rationale number 1 about the lamps." in body
    # Listed in pseudonym order, not in the usernames' (reverse) order.
    assert body.index("<strong>annotator_01</strong>") < body.index("<strong>you</strong>")
    assert body.index("<strong>you</strong>") < body.index("<strong>annotator_03</strong>")


def test_pseudonyms_are_stable_for_every_viewer(client, project, trio):
    first = page(client, project, trio[0])
    third = page(client, project, trio[2])
    assert "<strong>annotator_02</strong>" in first and "<strong>annotator_02</strong>" in third


def test_a_removed_member_keeps_their_pseudonym_place(client, project, trio):
    ProjectMember.objects.filter(project=project, user=trio[0]).update(is_active=False)
    body = page(client, project, trio[2])
    assert "<strong>annotator_02</strong>" in body and "annotator_01" not in body
    assert USERNAMES[1] not in body


def test_lead_sees_usernames(client, project, trio, lead):
    body = page(client, project, lead)
    for name in USERNAMES:
        assert name in body
    assert "annotator_0" not in body
    assert "<strong>you</strong>" not in body
