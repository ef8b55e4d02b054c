"""The calibration discussion in a browser: filters swap the results in place, one sample a page."""

from __future__ import annotations

import pytest

from demo.build import ANNOTATORS, LEAD, PASSWORD, SLUG, demo_build
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(db):
    return demo_build()


def test_lead_filters_and_pages_in_place(demo, new_page):
    page = new_page((1440, 900))
    login(page, LEAD, PASSWORD)
    page.goto(f"/projects/{SLUG}/calibration/")
    assert page.locator(".disc-sample").count() == 1
    assert "Seed sample 1 of 20" in page.locator(".disc-pos").inner_text()
    # A marker on the page survives only if the results are swapped in, not the page reloaded.
    page.evaluate("() => { document.body.dataset.marker = 'kept'; }")
    page.select_option("#f-split", "reasoning")
    page.wait_for_function("() => location.search.includes('split=reasoning')")
    page.wait_for_function(
        "() => document.querySelector('.disc-pos').textContent.includes('of 10')"
    )
    assert page.evaluate("() => document.body.dataset.marker") == "kept"
    assert "Reasoning" in page.locator(".disc-sample .meta").inner_text()
    page.click(".disc-pager a[rel=next]")
    page.wait_for_function(
        "() => document.querySelector('.disc-pos').textContent.includes('Seed sample 2 of 10')"
    )
    assert "page=2" in page.url and "split=reasoning" in page.url
    assert page.evaluate("() => document.body.dataset.marker") == "kept"
    screenshot(page, "calibration-filtered")
    # Below the threshold, marking calibrated asks first: the box must be ticked.
    card = page.locator(".member", has_text="ann1")
    assert "threshold 80%: below" in card.inner_text()
    card.locator("button", has_text="Mark calibrated").click()
    assert page.locator(".member", has_text="ann1").locator(".badge.ok").count() == 0


def test_annotator_before_the_end_of_the_seed_round_is_told_when_it_opens(demo, new_page):
    page = new_page((390, 844))
    login(page, ANNOTATORS[0], PASSWORD)  # ann1 has not labeled the seed items yet
    response = page.goto(f"/projects/{SLUG}/calibration/")
    assert response is not None and response.status == 200
    assert "opens when you finish the seed items" in page.locator("h1").inner_text()
    assert "0 of 100" in page.locator(".calibration-closed").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "calibration-closed-phone")
