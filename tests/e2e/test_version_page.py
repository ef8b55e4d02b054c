"""A version's page in Chromium: the changes since the last version, notes, the dataset card."""

from __future__ import annotations

import pytest

from aggregation.models import CriterionLabel
from aggregation.services.versions import version_build
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP
from tests.aggregation.export_data import small_dataset
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_versions(db):
    """v1, then one label flipped and one discarded from the data, and v2."""
    project = project_create(name="Chart study", slug="charts")
    lead = make_user("lead-e2e", LEAD_GROUP)
    annotators = [make_user(f"ann{i}", ANNOTATOR_GROUP) for i in range(1, 7)]
    for user in annotators:
        member_add(project=project, user=user)
    data = small_dataset(project, annotators)
    version_build(project=project, by=lead)
    labels = data["labels"]
    CriterionLabel.objects.filter(pk=labels["p2_0"].pk).update(preference="A")
    CriterionLabel.objects.filter(pk=labels["r1_0"].pk).update(
        outcome="dropped_split", preference=""
    )
    version_build(project=project, by=lead)
    return project


def test_lead_reads_the_changes_writes_notes_and_downloads_the_card(two_versions, new_page):
    project = two_versions
    page = new_page()
    login(page, "lead-e2e")
    page.goto(f"/projects/{project.slug}/versions/")
    page.get_by_role("link", name="v2", exact=True).click()
    page.wait_for_url("**/versions/2/")
    changes = page.locator("#changes")
    assert "Changes since v1" in changes.locator("h2").inner_text()
    assert "0 rows added, 1 row removed, 1 label changed" in changes.inner_text()
    rows = changes.locator("table.ex-changes tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("td").all_inner_texts()[3:] == [
        "label changed",
        "model_b",
        "model_a",
    ]
    screenshot(page, "version-1440")

    page.fill("#version-notes textarea", "Shared with the **review board** on Friday.")
    page.get_by_role("button", name="Save notes").click()
    page.locator("#version-notes").get_by_text("The notes are saved.").wait_for()
    assert page.locator("#version-notes .md strong").inner_text() == "review board"

    page.get_by_text("Show the card").click()
    card = page.locator(".card-md")
    assert card.locator("h1").inner_text() == "Chart study: dataset version 2"
    assert "review board" in card.inner_text()
    with page.expect_download() as download:
        page.get_by_role("link", name="Download as Markdown").click()
    text = download.value.path().read_text()
    assert download.value.suggested_filename == "charts-v2-dataset-card.md"
    assert text.startswith("# Chart study: dataset version 2")
    assert text.rstrip().endswith("Shared with the **review board** on Friday.")
    screenshot(page, "version-card-1440")


def test_the_version_page_fits_a_phone(two_versions, new_page):
    project = two_versions
    page = new_page(viewport=(390, 844))
    login(page, "lead-e2e")
    page.goto(f"/projects/{project.slug}/versions/2/")
    page.get_by_text("Show the card").click()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.locator("#changes").scroll_into_view_if_needed()
    screenshot(page, "version-390")
    page.locator("#dataset-card").scroll_into_view_if_needed()
    screenshot(page, "version-card-390")
