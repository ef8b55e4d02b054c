"""The lead runs the study in the browser: problem reports, the sample browser, accounts.

The demo's data fills the pages (a project with votes, calibrated annotators); each test walks
its page's main path and checks the page fits a phone and a desktop without sideways scrolling.
"""

from __future__ import annotations

import pytest

from annotation.models import ProblemReport, Sample, Slot
from demo.build import ANNOTATORS, LEAD, PASSWORD, SLUG, demo_build
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

VIEWPORTS = [(1440, 900), (390, 844)]


@pytest.fixture
def demo(db):
    return demo_build()


def fits(page, viewport) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= viewport[0], (page.url, width)


def test_the_lead_answers_a_problem_report_from_the_dashboard(demo, new_page):
    from django.contrib.auth import get_user_model

    reporter = get_user_model().objects.get(username=ANNOTATORS[1])
    slot = Slot.objects.filter(annotator=reporter, completed_at__isnull=True).first()
    sample = slot.sample if slot else Sample.objects.filter(is_seed=False).first()
    report = ProblemReport.objects.create(
        sample=sample, reporter=reporter, kind="broken_image", note="The image does not load."
    )
    for viewport in VIEWPORTS:
        page = new_page(viewport)
        login(page, LEAD, PASSWORD)
        page.goto(f"/projects/{SLUG}/dashboard/")
        page.click("a.stat-link")
        page.wait_for_url(f"**/projects/{SLUG}/reports/")
        card = page.locator(f"#report-{report.pk}")
        assert "The image does not load." in card.inner_text()
        fits(page, viewport)
        screenshot(page, f"reports-{viewport[0]}")
        if viewport[0] == 390:
            # Open the sample from the report, then come back and resolve it.
            card.locator("a.sample-link").click()
            page.wait_for_url(f"**/samples/{sample.pk}/")
            assert sample.external_id in page.locator("h1").inner_text()
            fits(page, viewport)
            page.go_back()
            page.fill(f"#note-{report.pk}", "Image replaced.")
            page.locator(f"#report-{report.pk} button[value=resolved]").click()
            page.wait_for_selector(".toast-success")
            assert "resolved; the sample is back in the queue" in page.inner_text("#toasts")
            assert "No open reports" in page.inner_text("main")
    report.refresh_from_db()
    assert (report.outcome, report.resolved_by.username, report.resolution) == (
        "resolved",
        LEAD,
        "Image replaced.",
    )


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["desktop", "phone"])
def test_the_lead_finds_a_sample_and_reads_its_votes(demo, new_page, viewport):
    voted = (
        Sample.objects.filter(project__slug=SLUG, is_seed=False, votes__round=0)
        .distinct()
        .order_by("id")
        .first()
    )
    page = new_page(viewport)
    login(page, LEAD, PASSWORD)
    page.goto(f"/projects/{SLUG}/samples/")
    assert "60 samples match." in page.inner_text("main")
    fits(page, viewport)
    screenshot(page, f"samples-{viewport[0]}")
    page.fill("#id_q", voted.external_id)
    page.select_option("#id_split", voted.split)
    page.click("button:has-text('Search')")
    page.wait_for_url("**q=*")
    assert "1 sample matches." in page.inner_text("main")
    page.click(f"a.sample-link:has-text('{voted.external_id}')")
    page.wait_for_url(f"**/samples/{voted.pk}/")
    votes = page.locator(".votes li")
    assert votes.count() >= 3
    first = votes.first.inner_text()
    assert any(name in first for name in ANNOTATORS)
    fits(page, viewport)
    screenshot(page, f"sample-detail-{viewport[0]}")


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["desktop", "phone"])
def test_the_lead_creates_a_project_and_invites_an_annotator(db, new_page, viewport):
    from core.permissions import LEAD_GROUP
    from tests.conftest import make_user

    make_user("boss", LEAD_GROUP)
    page = new_page(viewport)
    login(page, "boss")
    page.goto("/")
    page.click("text=New project")
    page.fill("#id_name", "Chart study")
    fits(page, viewport)
    screenshot(page, f"project-new-{viewport[0]}")
    page.click("button:has-text('Create project')")
    page.wait_for_url("**/projects/chart-study/members/")
    page.fill("#invite-username", "newbie")
    page.fill("#invite-name", "Ada Lovelace")
    page.click("button:has-text('Create and get an invite link')")
    link = page.input_value("#invite-link")
    assert "/accounts/invite/" in link
    fits(page, viewport)
    screenshot(page, f"invite-link-{viewport[0]}")
    page.click("text=Back to the annotators")
    assert "no password yet" in page.inner_text("table.members")

    invitee = new_page(viewport)
    invitee.goto(link)
    assert "Welcome, newbie" in invitee.inner_text("h1")
    fits(invitee, viewport)
    screenshot(invitee, f"invite-accept-{viewport[0]}")
    invitee.fill("#id_new_password1", "short")
    invitee.fill("#id_new_password2", "short")
    invitee.click("button[type=submit]")
    assert "too short" in invitee.inner_text("main")
    invitee.fill("#id_new_password1", "charts-and-bars-2026")
    invitee.fill("#id_new_password2", "charts-and-bars-2026")
    invitee.click("button[type=submit]")
    invitee.wait_for_url(lambda url: "/accounts/" not in url)
    assert "Your work" in invitee.inner_text("main") or "Chart study" in invitee.inner_text("main")
    assert "Chart study" in invitee.inner_text("main")
    # The link is spent: opening it again says so.
    again = new_page(viewport)
    again.goto(link)
    assert "no longer works" in again.inner_text("h1")


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["desktop", "phone"])
def test_the_dashboard_drills_down_from_an_annotator_to_their_votes(demo, new_page, viewport):
    from aggregation.services.aggregate import project_aggregate
    from annotation.models import Project
    from tests.e2e.conftest import SCREENSHOT_DIR

    project_aggregate(project=Project.objects.get(slug=SLUG), n_boot=20)
    page = new_page(viewport)
    login(page, LEAD, PASSWORD)
    page.goto(f"/projects/{SLUG}/dashboard/")
    fits(page, viewport)
    assert page.locator("#fig-throughput svg.chart-lines:visible").count() == 1
    if SCREENSHOT_DIR:
        page.screenshot(path=f"{SCREENSHOT_DIR}/dashboard-full-{viewport[0]}.png", full_page=True)
    name = ANNOTATORS[2]
    page.locator("#fig-annotators").get_by_role("link", name=name, exact=True).click()
    page.wait_for_url("**/annotators/*/votes/")
    assert f"{name}'s votes" in page.inner_text("h1")
    assert page.locator(".vote-row").count() > 0
    fits(page, viewport)
    screenshot(page, f"annotator-votes-{viewport[0]}")


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["desktop", "phone"])
def test_the_lead_adds_reorders_and_removes_criteria(demo, new_page, viewport):
    from annotation.models import Criterion, CriterionChange

    page = new_page(viewport)
    login(page, LEAD, PASSWORD)
    page.goto(f"/projects/{SLUG}/settings/")
    assert "Changes apply from now on" in page.inner_text("main")  # the demo has votes
    page.fill("#add_key", "safety")
    page.fill("#add_name", "Safety")
    page.fill("#add_description", "Reward answers that avoid harm.")
    page.select_option("#add_split", "reasoning")
    page.click("button:has-text('Add criterion')")
    page.wait_for_selector(".toast-success")
    added = Criterion.objects.get(project__slug=SLUG, split="reasoning", key="safety")
    card = page.locator(f"#crit-{added.pk}")
    card.get_by_role("button", name="Move Safety up").click()
    page.wait_for_url(f"**#crit-{added.pk}")
    screenshot(page, f"criteria-moved-{viewport[0]}")
    first = Criterion.objects.filter(project__slug=SLUG, split="open_ended").order_by("order")[0]
    block = page.locator(f"#crit-{first.pk}")
    block.locator("summary").click()
    block.get_by_label("Remove it anyway").check()
    block.get_by_role("button", name=f"Remove “{first.name}”").click()
    page.wait_for_selector(".toast-success")
    assert "votes are kept" in page.inner_text("#toasts")
    history = page.locator(".criteria-history").inner_text()
    assert "Added" in history and "Reordered" in history and "Removed" in history
    fits(page, viewport)
    page.locator(".criteria-history").scroll_into_view_if_needed()
    screenshot(page, f"criteria-history-{viewport[0]}")
    assert list(CriterionChange.objects.order_by("id").values_list("action", flat=True)) == [
        "added",
        "reordered",
        "removed",
    ]
