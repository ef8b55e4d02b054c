"""Every main screen fits a phone (390 px wide) and a desktop without sideways scrolling.

The demo's data (a project with votes, aggregation, calibration) fills the pages, so the wide
tables, charts and filter bars are all there; a table may scroll inside its card, the page may not.
"""

from __future__ import annotations

import pytest

from annotation.demo.build import ANNOTATORS, LEAD, PASSWORD, SLUG, demo_build
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
ANNOTATOR_PAGES = ["/", f"/projects/{SLUG}/", f"/projects/{SLUG}/label/"]
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
