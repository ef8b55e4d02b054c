"""Every main screen fits a phone (390 px wide) and a desktop without sideways scrolling.

The demo's data (a project with votes, aggregation, calibration) fills the pages, so the wide
tables, charts and filter bars are all there; a table may scroll inside its card, the page may not.
"""

from __future__ import annotations

import pytest

from demo.build import ANNOTATORS, LEAD, PASSWORD, SLUG, demo_build
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LEAD_PAGES = [
    "/",
    f"/projects/{SLUG}/",
    f"/projects/{SLUG}/dashboard/",
    f"/projects/{SLUG}/review/",
    f"/projects/{SLUG}/samples/",
    f"/projects/{SLUG}/reports/",
    "/projects/new/",
    f"/projects/{SLUG}/calibration/",
    f"/projects/{SLUG}/members/",
    f"/projects/{SLUG}/settings/",
    f"/projects/{SLUG}/import/",
    f"/projects/{SLUG}/versions/",
    "/tokens/",
]
ANNOTATOR_PAGES = [
    "/",
    f"/projects/{SLUG}/",
    f"/projects/{SLUG}/label/",
    f"/projects/{SLUG}/calibration/",
    f"/projects/{SLUG}/guidelines/",
]
# What sticks out on the right, outside a table (which scrolls in its own box).
OVERFLOW = """() => [...document.querySelectorAll('body *')]
  .filter(e => !e.closest('table') && e.getBoundingClientRect().right > window.innerWidth + 1)
  .slice(0, 5).map(e => e.tagName + '.' + e.className)"""


@pytest.fixture
def demo(db):
    return demo_build()


@pytest.mark.parametrize("viewport", [(390, 844), (1440, 900)], ids=["phone", "desktop"])
def test_pages_fit_the_screen_for_lead_and_annotator(demo, new_page, viewport):
    for user, pages in ((LEAD, LEAD_PAGES), (ANNOTATORS[1], ANNOTATOR_PAGES)):
        page = new_page(viewport)
        login(page, user, PASSWORD)
        for path in pages:
            response = page.goto(path)
            assert response is not None and response.status == 200, (user, path)
            page.wait_for_load_state("networkidle")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= viewport[0], (user, path, width, page.evaluate(OVERFLOW))
            name = path.strip("/").replace("/", "-") or "home"
            screenshot(page, f"fit-{user}-{name}-{viewport[0]}")


BOX = """(selector) => { const e = document.querySelector(selector); if (!e) return null;
  const r = e.getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width,
          height: r.height}; }"""


def _box(page, selector: str) -> dict:
    box = page.evaluate(BOX, selector)
    assert box is not None, f"{selector} is not on the page"
    return box


def test_labeling_on_a_phone_keeps_the_criterion_and_controls_in_reach(demo, new_page):
    width, height = 390, 844
    page = new_page((width, height))
    login(page, ANNOTATORS[1], PASSWORD)
    page.goto(f"/projects/{SLUG}/label/")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    logout = _box(page, ".who button")
    assert logout["left"] >= 0 and logout["right"] <= width  # the user menu is on screen
    criterion = _box(page, ".criterion-bar .criterion-name")
    assert criterion["bottom"] <= height / 2  # the criterion is at the top, not after the content
    assert page.locator(".criterion-bar .criterion-name").inner_text()
    # The answer is pinned to the bottom edge, on the first screen and further down.
    for scroll in (0, 1500):
        page.evaluate("(y) => window.scrollTo(0, y)", scroll)
        for selector in (".choice-a", ".choice-b", "button.submit", "#rationale"):
            box = _box(page, selector)
            assert box["top"] >= 0 and box["bottom"] <= height, (scroll, selector, box)
            assert box["right"] <= width, (selector, box)
    # The skip and report panels open on screen, not beyond its right edge.
    for panel in (".skip", ".report"):
        page.click(f"{panel} summary")
        box = _box(page, f"{panel} .report-panel")
        assert box["left"] >= 0 and box["right"] <= width, (panel, box)
        assert page.evaluate("document.documentElement.scrollWidth") <= width, panel
        page.click(f"{panel} summary")
    # The criterion's description is one tap away at the top.
    page.evaluate("() => window.scrollTo(0, 0)")
    page.click(".criterion-more summary")
    assert page.locator(".criterion-more .criterion-text").is_visible()
    screenshot(page, "label-phone")


def test_labeling_on_a_desktop_gives_the_image_and_responses_room(demo, new_page):
    page = new_page((1440, 900))
    login(page, ANNOTATORS[1], PASSWORD)
    page.goto(f"/projects/{SLUG}/label/")
    page.wait_for_load_state("networkidle")
    for side in (".response-a", ".response-b"):
        assert _box(page, side)["height"] > 368, side
    image, caption = _box(page, ".prompt-image img"), _box(page, ".prompt-image figcaption")
    assert image["width"] >= 400
    assert caption["top"] >= image["bottom"]  # the enlarge link never covers the image's x-axis
    # The question panel resizes from the keyboard, and the size is kept for the next item.
    handle = page.locator(".pane-handle")
    assert handle.get_attribute("aria-valuenow") == "34"
    before = _box(page, "#prompt")["width"]
    handle.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert handle.get_attribute("aria-valuenow") == "43"
    assert _box(page, "#prompt")["width"] > before + 100
    assert _box(page, ".prompt-image img")["width"] > image["width"]
    page.reload()
    page.wait_for_load_state("networkidle")
    assert page.locator(".pane-handle").get_attribute("aria-valuenow") == "43"
    page.locator(".pane-handle").focus()
    page.keyboard.press("Home")
    assert page.locator(".pane-handle").get_attribute("aria-valuenow") == "34"
    screenshot(page, "label-desktop")
