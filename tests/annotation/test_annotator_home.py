"""The annotator's home page: progress and time per project, their votes searchable, revise."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import RevisionWindow, Vote
from annotation.services.projects import member_add, project_create
from annotation.templatetags.annotation_tags import duration
from tests.annotation.work_data import calibrate, make_formal, vote_next
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def formal_member(project, annotator, lead):
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    return annotator


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (59.4, "59 s"), (60, "1 min"), (3599, "59 min"), (3600, "1 h 00 min"),
     (7500, "2 h 05 min"), (None, "0 s")],
)  # fmt: skip
def test_duration(seconds, text):
    assert duration(seconds) == text


def stat(body: str, name: str) -> str:
    found = re.search(rf"<dt>{name}</dt><dd>([^<]*)</dd>", body)
    assert found, name
    return found[1]


def test_votes_today_and_time_spent_come_from_the_stored_votes(client, project, formal_member):
    make_formal(project, 2)
    for _ in range(3):
        vote_next(project, formal_member)
    Vote.objects.filter(annotator=formal_member).update(seconds=40)
    # One vote was cast two days ago: in the totals, not today.
    old = Vote.objects.filter(annotator=formal_member).order_by("pk").first()
    Vote.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=2))
    client.force_login(formal_member)
    body = client.get("/").content.decode()
    assert stat(body, "Votes today") == "2"
    assert stat(body, "Time today") == "1 min"
    assert stat(body, "Votes in all") == "3"
    assert stat(body, "Time in all") == "2 min"
    # Progress over the whole assignment (the only calibrated annotator: every sample).
    assert 'aria-valuemax="10" aria-valuenow="3"' in body


def test_history_lists_own_votes_searchable_with_revise_links(client, project, formal_member, lead):
    make_formal(project, 2)
    first, _ = vote_next(project, formal_member, rationale="Left names the red lamp clearly.")
    vote_next(project, formal_member, rationale="Right one is more complete overall.")
    # Somebody else's vote never shows.
    other = make_user("peer")
    member_add(project=project, user=other)
    calibrate(project, other, lead)
    vote_next(project, other, rationale="Peer thinks the red lamp matters.")
    client.force_login(formal_member)
    body = client.get("/").content.decode()
    assert "2 votes, the latest change first." in body
    assert "Peer thinks" not in body
    revise = reverse("label-item", args=[project.slug, first.sample.pk, first.criterion.pk])
    assert f'href="{revise}">Revise</a>' in body
    found = client.get("/", {"q": "red lamp"}).content.decode()
    assert "1 vote matching “red lamp”" in found
    assert "Left names the red lamp clearly." in found and "Right one" not in found
    by_id = client.get("/", {"q": first.sample.external_id}).content.decode()
    assert "Left names the red lamp clearly." in by_id
    none = client.get("/", {"q": "zebra"}).content.decode()
    assert "None of your votes matches this search." in none


def test_a_locked_vote_has_no_revise_link(client, project, formal_member):
    project.vote_revision_window = RevisionWindow.UNTIL_COMPLETE
    project.save()
    make_formal(project, 1)
    n = project.criteria.filter(split="open_ended").count()
    for _ in range(n):  # completes the sample's slot
        vote_next(project, formal_member)
    client.force_login(formal_member)
    body = client.get("/").content.decode()
    assert "Revise</a>" not in body
    assert body.count(">Locked: the revision window has closed.</span>") == n


def test_history_pages_by_twenty(client, project, formal_member):
    project.batch_size = 5
    project.save()
    make_formal(project, 5)
    for _ in range(25):
        vote_next(project, formal_member)
    client.force_login(formal_member)
    first = client.get("/").content.decode()
    assert first.count('<td class="when">') == 20
    assert "Page 1 of 2" in first and 'href="?page=2#history"' in first
    second = client.get("/", {"page": 2}).content.decode()
    assert second.count('<td class="when">') == 5


def test_discussion_button_says_when_it_opens(client, project, annotator, seeds):
    member_add(project=project, user=annotator)
    client.force_login(annotator)
    body = client.get("/").content.decode()
    calibration = reverse("calibration", args=[project.slug])
    assert f'href="{calibration}"' not in body.split("<h2>Your votes</h2>")[0].split("<main")[1]
    assert "The calibration discussion opens once you have labeled every seed item: 15 to go." in (
        body
    )


def test_guidelines_page_renders_the_projects_text(client, project, annotator, lead, outsider):
    project.guidelines = "Read **both** responses first.\nThen decide.\n\n$x^2$ stays math."
    project.save()
    member_add(project=project, user=annotator)
    url = reverse("guidelines", args=[project.slug])
    client.force_login(annotator)
    body = client.get(url).content.decode()
    assert "<strong>both</strong>" in body
    assert "Then decide." in body and "<br" in body  # line breaks kept
    assert "Completeness &amp; Coverage" in body  # every criterion's description below
    client.force_login(outsider)
    assert client.get(url).status_code == 403


def test_guidelines_are_edited_in_the_settings(client, project, lead):
    client.force_login(lead)
    other = project_create(name="Empty", slug="empty")
    assert (
        "has not written guidelines"
        in client.get(reverse("guidelines", args=[other.slug])).content.decode()
    )
    data = {
        "name": project.name,
        "description": "",
        "annotators_per_sample": 3,
        "tie_cap": "0.1",
        "rationale_min_chars": 15,
        "lease_minutes": 120,
        "batch_size": 10,
        "work_order": project.work_order,
        "vote_revision_window": project.vote_revision_window,
        "calibration_threshold": 80,
        "guidelines": "# Our rules\n\nJudge one criterion at a time.",
    }
    assert client.post(reverse("project-settings", args=[project.slug]), data).status_code == 302
    body = client.get(reverse("guidelines", args=[project.slug])).content.decode()
    assert "Judge one criterion at a time." in body
