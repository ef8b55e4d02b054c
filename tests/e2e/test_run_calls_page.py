"""The call inspector in a real browser: from the scorecard's Runs table to a runner run's calls,
a call's output and thinking opened, the parse method filter, and the page on a phone (the table
scrolls in its box, the page does not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.services.projects import project_create
from core.permissions import LEAD_GROUP
from judging.models import JudgeRun
from judging.runner.run import judge_run_execute
from tests.conftest import make_user
from tests.e2e.conftest import SCREENSHOT_DIR, login
from tests.judging.fake_openai import FakeOpenAI, default_answer
from tests.judging.runner_data import judge_config, runner_version

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DESKTOP, PHONE = (1440, 900), (390, 844)
# What sticks out on the right of the screen outside a box that scrolls (the table's wrapper, the
# navigation bar): the page would have to scroll sideways to show it.
STICKING_OUT = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > innerWidth + 1)
  .filter(e => { for (let a = e.parentElement; a; a = a.parentElement) {
    if (getComputedStyle(a).overflowX !== 'visible') return false; } return true; })
  .slice(0, 5).map(e => e.tagName + '.' + e.className)"""
SCROLLER = """() => { const e = document.querySelector('.table-scroll');
  return {scroll: e.scrollWidth, client: e.clientWidth,
          right: e.getBoundingClientRect().right}; }"""


def answer(text: str) -> str:
    """Rows of image p2 ramble past the token budget; the others are answered plainly."""
    if "image p2" in text:
        return "Let me look at the image closely. " * 400 + default_answer(text)
    return default_answer(text)


@pytest.fixture
def runner_run(db) -> JudgeRun:
    project = project_create(name="Calls study", slug="calls-study")
    version = runner_version(project, image_size=(64, 64))
    lead = make_user("lena", LEAD_GROUP)
    with FakeOpenAI(provider="vllm-thinking", thinking_tokens=600, answer=answer) as server:
        config = judge_config(
            server.url, api_style="vllm", orders="both", max_tokens=1200, retry_max_tokens=None
        )
        judge_run_execute(version=version, config=config, by=lead)
    return JudgeRun.objects.get(version=version)


def shot(page, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


@pytest.fixture
def shots(tmp_path) -> Path:
    folder = Path(SCREENSHOT_DIR) if SCREENSHOT_DIR else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_calls_of_a_run_on_a_desktop(new_page, runner_run, shots):
    page = new_page(DESKTOP)
    login(page, "lena")
    page.goto("/projects/calls-study/versions/1/leaderboard/fake-judge/")
    # The Runs table links the calls of a runner run.
    page.locator("table.runs").scroll_into_view_if_needed()
    shot(page, shots, "scorecard-runs-1440")
    page.click(".runs >> text=Calls")
    page.wait_for_selector("#calls-title")
    assert page.url.endswith(f"/judge-runs/{runner_run.pk}/calls/")
    assert page.locator("tbody.call-row").count() == 6
    assert page.locator("tr.call").count() == 12
    assert page.locator("tr.call[data-method=truncated]").count() == 4
    # A call's texts open in place: the thinking, cut to 2,000 characters with the cut said.
    first = page.locator("tr.call-out details").first
    assert not first.locator("pre.thinking").is_visible()
    first.locator("summary").click()
    thinking = first.locator("pre.thinking")
    assert thinking.is_visible() and "(400 more characters)" in thinking.inner_text()
    assert "is better" in first.locator("pre.call-text").first.inner_text()
    shot(page, shots, "run-calls-1440")
    # Nothing is cut off: the table fits its card on a desktop.
    box = page.evaluate(SCROLLER)
    assert box["scroll"] <= box["client"] and box["right"] <= DESKTOP[0]
    assert page.evaluate(STICKING_OUT) == []
    # The parse method filter lists its counts and narrows the rows.
    options = page.locator("select[name=method] option").all_inner_texts()
    assert options == [
        "Any (6)",
        "Direct (4)",
        "Verifier (0)",
        "Unparsed (0)",
        "Truncated (2)",
        "Failed (0)",
    ]
    page.select_option("select[name=method]", "truncated")
    page.click("text=Filter")
    page.wait_for_url("**method=truncated**")
    rows = page.locator("tbody.call-row").evaluate_all("rs => rs.map(r => r.dataset.question)")
    assert rows == ["p2__completeness", "p2__hallucination"]
    assert page.locator("select[name=method]").input_value() == "truncated"
    shot(page, shots, "run-calls-truncated-1440")


def test_the_calls_page_on_a_phone(new_page, runner_run, shots):
    page = new_page(PHONE)
    login(page, "lena")
    page.goto(f"/projects/calls-study/versions/1/judge-runs/{runner_run.pk}/calls/")
    page.wait_for_selector("#calls-title")
    # The wide table scrolls sideways in its box; the page itself does not.
    box = page.evaluate(SCROLLER)
    assert box["scroll"] > box["client"], box
    assert box["right"] <= PHONE[0]
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE[0], (width, page.evaluate(STICKING_OUT))
    assert page.evaluate(STICKING_OUT) == []
    # The filters stack within the screen.
    for selector in ("select[name=method]", "select[name=criterion]", "input[name=q]"):
        field = page.locator(selector).bounding_box()
        assert field is not None and field["x"] >= 0 and field["x"] + field["width"] <= PHONE[0]
    shot(page, shots, "run-calls-390")
    # An opened call's texts stay within the screen, also once the table is scrolled sideways.
    details = page.locator("tr.call-out details").first
    details.locator("summary").click()
    text = details.locator("pre.thinking")
    frame = page.locator(".table-scroll").bounding_box()
    assert frame is not None
    for scrolled in (0, 400):
        page.evaluate(f"document.querySelector('.table-scroll').scrollLeft = {scrolled}")
        box = text.bounding_box()
        assert box is not None, scrolled
        assert frame["x"] <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"]
        assert "(400 more characters)" in text.inner_text()
    shot(page, shots, "run-calls-390-open")
