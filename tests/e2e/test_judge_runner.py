"""The judge runner in a real browser: add a judge config, run it from the leaderboard with a real
Celery worker against a local OpenAI-compatible server, watch the job card, open the scorecard."""

from __future__ import annotations

import pytest

from annotation.services.projects import project_create
from core.permissions import LEAD_GROUP
from judging.models import JudgeConfig, Scorecard
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.runner_data import runner_version

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PHONE = (390, 844)


def no_sideways_scroll(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(
        "[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right"
        " > window.innerWidth + 1 && !(function clipped(a) { for (; a; a = a.parentElement)"
        " { if (getComputedStyle(a).overflowX !== 'visible') return true; } return false; })"
        "(e.parentElement))"
        ".slice(0, 5).map(e => e.tagName + '.' + e.className)"
    )
    absolute = page.evaluate(
        "[...document.querySelectorAll('body *')].filter(e => getComputedStyle(e).position"
        " === 'absolute' && e.getBoundingClientRect().right > window.innerWidth + 1)"
        ".map(e => e.tagName + '.' + e.className + ':' + e.textContent.slice(0, 30))"
    )
    assert width <= page.viewport_size["width"], f"page is {width}px wide: {wide} {absolute}"


def test_lead_configures_and_runs_a_judge(new_page, celery_worker):
    project = project_create(name="Runner study", slug="runner-study")
    version = runner_version(project)
    make_user("lena", LEAD_GROUP)
    with FakeOpenAI(delay=0.4) as server:
        page = new_page()
        login(page, "lena")
        page.goto("/judges/configs/")
        page.fill("#id_name", "local-vl")
        page.fill("#id_base_url", server.url)
        page.fill("#id_model", "qwen2-vl-7b")
        page.select_option("#id_orders", "both")
        page.fill("#id_concurrency", "2")
        page.click("text=Add the config")
        page.wait_for_selector("text=Saved the judge config “local-vl”.")
        assert page.locator("table.configs tbody tr").count() == 1
        screenshot(page, "runner-configs-1440")

        page.goto(f"/projects/{project.slug}/versions/{version.number}/leaderboard/")
        page.select_option("#id_config", label="local-vl")
        page.fill("#id_judge", "Qwen2-VL local")
        page.click("text=Start the run")
        card = page.locator(".runner-job")
        card.wait_for()
        # Live progress: the card polls the job while the worker makes the calls.
        running = page.locator(".runner-job [data-job-status=running]")
        running.wait_for(timeout=30_000)
        page.wait_for_function(
            "() => /calls\\/s/.test(document.querySelector('.runner-job').innerText)"
        )
        page.wait_for_selector(".runner-job [data-job-status=succeeded]", timeout=60_000)
        # The leaderboard's table reloads with the new judge once the run is scored.
        page.wait_for_selector("table.leaderboard >> text=Qwen2-VL local")
        text = card.inner_text()
        assert "Scored Qwen2-VL local: 12 calls (12 calls made, 0 cache hits)" in text
        assert len(server.requests) == 12
        screenshot(page, "runner-leaderboard-1440")
        page.click("text=Qwen2-VL local · Open-ended scorecard")
        page.wait_for_selector("#runner-figures-title")
        section = page.locator(".runner-figures").inner_text()
        assert "83.33%" in section and "the two orders agree in 5 of 6 rows" in section
        page.locator(".runner-figures").scroll_into_view_if_needed()
        screenshot(page, "runner-scorecard-1440")

        phone = new_page(viewport=PHONE)
        login(phone, "lena")
        for url, name in (
            ("/judges/configs/", "runner-configs-390"),
            (f"/projects/{project.slug}/versions/1/leaderboard/#runner", "runner-leaderboard-390"),
            (
                f"/projects/{project.slug}/versions/1/leaderboard/Qwen2-VL%20local/",
                "runner-scorecard-390",
            ),
        ):
            phone.goto(url)
            if name == "runner-scorecard-390":
                phone.locator(".runner-figures").scroll_into_view_if_needed()
            screenshot(phone, name)
            no_sideways_scroll(phone)
    card = Scorecard.objects.get(judge="Qwen2-VL local")
    assert card.figures["runner"]["config"]["model"] == "qwen2-vl-7b"
    assert JudgeConfig.objects.get().created_by.username == "lena"
