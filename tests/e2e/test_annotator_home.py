"""The annotator's home in a browser: progress, the search over their votes, revise, not sure."""

from __future__ import annotations

import pytest

from annotation.models import Vote
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP
from tests.annotation.work_data import calibrate, make_formal, vote_next
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def study(db):
    project = project_create(name="Home study", slug="home-study")
    project.guidelines = "Read **both** responses to the end before you choose."
    project.save()
    lead = make_user("lead", LEAD_GROUP)
    annotator = make_user("alice", ANNOTATOR_GROUP)
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    make_formal(project, 2)
    vote_next(project, annotator, rationale="Left counts the lamps, right guesses.")
    vote_next(project, annotator, rationale="Right is more complete on the sign.")
    return project, annotator


@pytest.mark.parametrize("viewport", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_search_then_revise_a_vote_marked_not_sure(study, new_page, viewport):
    project, annotator = study
    page = new_page(viewport)
    login(page, "alice")
    page.goto("/")
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport[0]
    assert "2 votes, the latest change first." in page.locator("#history").inner_text()
    page.fill("#h-q", "lamps")
    page.click(".history-search button[type=submit]")
    page.wait_for_url(lambda url: "q=lamps" in url)
    rows = page.locator(".history tbody tr")
    assert rows.count() == 1 and "Left counts the lamps" in rows.first.inner_text()
    screenshot(page, f"home-search-{viewport[0]}")
    rows.first.locator("a", has_text="Revise").click()
    page.wait_for_selector("text=revising your vote")
    assert page.locator("#rationale").input_value() == "Left counts the lamps, right guesses."
    page.check('input[name="unsure"]')
    page.click("button.submit")
    page.wait_for_function("() => !document.body.textContent.includes('revising your vote')")
    vote = Vote.objects.get(annotator=annotator, rationale__startswith="Left counts")
    assert vote.unsure is True
    page.goto("/")
    first = page.locator(".history tbody tr").first
    assert "not sure" in first.inner_text() and "Left counts the lamps" in first.inner_text()
    page.click("text=Guidelines")
    page.wait_for_url(lambda url: url.endswith(f"/projects/{project.slug}/guidelines/"))
    assert page.locator(".guidelines strong").inner_text() == "both"
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport[0]
    screenshot(page, f"guidelines-{viewport[0]}")
