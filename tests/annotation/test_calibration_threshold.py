"""Mark calibrated: the agreement beside the project's threshold, and a confirmation below it."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import ProjectMember, ReferenceLabel, Vote
from annotation.selectors.calibration import below_threshold
from tests.annotation.test_calibration_views import url, vote_all

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("agree", "compared", "threshold", "below"),
    [(4, 5, 80, False), (3, 5, 80, True), (0, 0, 80, True), (0, 0, 0, True), (1, 1, 100, False)],
)
def test_below_threshold(agree, compared, threshold, below):
    assert below_threshold(agree=agree, compared=compared, threshold=threshold) is below


@pytest.fixture
def referenced(project, seeds, criteria):
    """Reference A on every seed item (15 items: 2 open-ended seeds x 5, 1 reasoning x 5)."""
    for sample in seeds:
        for criterion in criteria[sample.split]:
            ReferenceLabel.objects.create(sample=sample, criterion=criterion, preference="A")


def member_card(body: str, member: ProjectMember) -> str:
    found = re.search(rf'<li class="card member[^"]*" id="member-{member.pk}">.*?</li>', body, re.S)
    assert found, "no card for the member"
    return found[0]


def mark(client, project, member, **data):
    return client.post(reverse("calibration-mark", args=[project.slug, member.pk]), data)


def test_below_the_threshold_the_lead_must_confirm(
    client, project, lead, annotators, seeds, criteria, referenced
):
    member = ProjectMember.objects.get(project=project, user=annotators[0])
    vote_all(member, seeds, criteria, "A")
    # 6 of 15 agree with the reference: 40%.
    Vote.objects.filter(annotator=member.user).exclude(
        pk__in=list(Vote.objects.filter(annotator=member.user).values_list("pk", flat=True)[:6])
    ).update(choice="B")
    client.force_login(lead)
    card = member_card(client.get(url(project)).content.decode(), member)
    assert "agrees with the reference on <strong>40%</strong> (6/15)" in card
    assert "threshold 80%: below" in card
    assert 'name="confirm" value="1" required' in card
    response = mark(client, project, member, next=url(project))
    assert response.status_code == 302
    member.refresh_from_db()
    assert member.calibrated_at is None
    page = client.get(response.url).content.decode()
    assert (
        "ann1 agrees with the reference on 40% (6 of 15 items), below the project&#x27;s "
        "threshold of 80%. Tick the confirmation to mark them calibrated anyway."
    ) in page
    mark(client, project, member, confirm="1")
    member.refresh_from_db()
    assert member.calibrated_at is not None and member.calibrated_by == lead


def test_at_or_above_the_threshold_one_click_marks(
    client, project, lead, annotators, seeds, criteria, referenced
):
    project.calibration_threshold = 60
    project.save()
    member = ProjectMember.objects.get(project=project, user=annotators[0])
    vote_all(member, seeds, criteria, "A")
    Vote.objects.filter(
        pk__in=list(Vote.objects.filter(annotator=member.user).values_list("pk", flat=True)[:6])
    ).update(choice="B")  # 9 of 15 agree: exactly 60%
    client.force_login(lead)
    card = member_card(client.get(url(project)).content.decode(), member)
    assert "threshold 60%" in card and "below" not in card
    assert 'name="confirm"' not in card
    mark(client, project, member)
    member.refresh_from_db()
    assert member.calibrated_at is not None


def test_the_threshold_is_a_project_setting(client, project, lead):
    client.force_login(lead)
    settings_url = reverse("project-settings", args=[project.slug])
    assert "Calibration threshold" in client.get(settings_url).content.decode()
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
        "calibration_threshold": 75,
    }
    assert client.post(settings_url, data).status_code == 302
    project.refresh_from_db()
    assert project.calibration_threshold == 75
    data["calibration_threshold"] = 101
    body = client.post(settings_url, data).content.decode()
    assert "Ensure this value is less than or equal to 100." in body


# --- One seed sample per page, filtered in place ---------------------------------------------


def shown_samples(body: str) -> list[str]:
    return re.findall(r'<section class="card disc-sample" id="sample-(\d+)">', body)


def test_one_seed_sample_per_page_with_a_pager(client, project, lead, annotators, seeds, criteria):
    vote_all(ProjectMember.objects.get(project=project, user=annotators[0]), seeds, criteria)
    client.force_login(lead)
    first = client.get(url(project)).content.decode()
    assert shown_samples(first) == [str(seeds[0].pk)]
    assert "Seed sample <strong>1</strong> of 3" in first
    assert 'href="?page=2"' in first and "← Previous" not in first
    # The jump list names every seed sample of the (filtered) list.
    for sample in seeds:
        assert f">{sample.external_id}</a>" in first
    second = client.get(url(project, page=2)).content.decode()
    assert shown_samples(second) == [str(seeds[1].pk)]
    assert 'href="?page=1"' in second and 'href="?page=3"' in second
    # Out of range goes to the last page; a malformed number to the first.
    assert shown_samples(client.get(url(project, page=99)).content.decode()) == [str(seeds[2].pk)]
    assert shown_samples(client.get(url(project, page="x")).content.decode()) == [str(seeds[0].pk)]


def test_filters_swap_the_results_in_place_and_keep_them_in_the_pager(
    client, project, lead, annotators, seeds, criteria
):
    vote_all(ProjectMember.objects.get(project=project, user=annotators[0]), seeds, criteria)
    client.force_login(lead)
    response = client.get(
        url(project, split="open_ended"),
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="disc-results",
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="disc-results"')
    assert "<h1>" not in body and "Annotators</h2>" not in body
    assert "10 items shown in 2 seed samples" in body
    assert 'href="?split=open_ended&amp;page=2"' in body
    assert shown_samples(body) == [str(seeds[0].pk)]
    full = client.get(url(project)).content.decode()
    assert 'hx-get="/projects/test-project/calibration/" hx-trigger="change, submit"' in full


def test_annotators_see_peers_only_by_pseudonym_on_every_page(
    client, project, annotators, seeds, criteria
):
    for user in annotators[:3]:
        vote_all(ProjectMember.objects.get(project=project, user=user), seeds, criteria)
    client.force_login(annotators[1])
    for page in (1, 2, 3):
        body = client.get(url(project, page=page)).content.decode()
        assert '<td class="voter">you' in body
        assert '<td class="voter">annotator_01' in body
        assert '<td class="voter">ann1' not in body and '<td class="voter">ann3' not in body
