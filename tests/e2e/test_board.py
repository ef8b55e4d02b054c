"""The leaderboard from the project navigation, its export and two judges compared, in Chromium.

The version and the judges' predictions are written to the database; the lead's steps go through
the pages, at a desktop and a phone width.
"""

from __future__ import annotations

import csv
import io
import random
from datetime import UTC, datetime

import pytest

from annotation.models import Criterion
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP
from judging.models import JudgeRun
from judging.services.scoring import judge_run_upload
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot
from tests.judging.web_data import make_version, predictions_file

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

JUDGES = {
    # name: share of rows right
    "Qwen/Qwen2.5-VL-72B-Instruct": 0.8,
    "gpt-4o-2024-11-20": 0.7,
    "llava-onevision-qwen2-7b-ov-hf": 0.55,
}
PROMPTS = 40


@pytest.fixture
def board(db):
    project = project_create(name="Chart study", slug="charts")
    lead = make_user("lead-e2e", LEAD_GROUP)
    member_add(project=project, user=make_user("ann-e2e", ANNOTATOR_GROUP))
    rng = random.Random(7)
    rows = [
        (f"{split[:2]}-{i:03d}", split, key, rng.choice(["model_a", "model_b"]))
        for split in ("open_ended", "reasoning")
        for i in range(PROMPTS)
        for key in Criterion.objects.filter(project=project, split=split)
        .order_by("order")
        .values_list("key", flat=True)
    ]
    version = make_version(project, rows)
    for judge, share in JUDGES.items():
        lines = [
            {
                "question_id": f"{prompt}__{key}",
                "prediction": pref
                if rng.random() < share
                else ("model_b" if pref == "model_a" else "model_a"),
            }
            for prompt, _, key, pref in rows
        ]
        lines[0]["prediction"] = "no verdict"  # an invalid one, noted under the name
        judge_run_upload(
            version=version,
            judge=judge,
            file=predictions_file(lines),
            by=lead,
            template_hash="9f2c" * 16,  # a full SHA-256
        )
    # A two-digit day: the widest date the "Last run" column shows.
    JudgeRun.objects.update(created_at=datetime(2026, 11, 28, 14, 5, tzinfo=UTC))
    return project, version


def _page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_lead_opens_exports_and_compares_on_the_leaderboard(board, new_page):
    project, _ = board
    page = new_page()
    login(page, "lead-e2e")
    page.goto(f"/projects/{project.slug}/")
    page.locator("header nav").get_by_role("link", name="Leaderboard").click()
    page.wait_for_url(f"**/projects/{project.slug}/versions/1/leaderboard/")
    # Every column fits at 1440 px: the "Last run" dates are whole and inside the viewport.
    table = page.locator("table.leaderboard")
    last = page.locator("table.leaderboard tbody td.date").first
    box = last.bounding_box()
    assert box and box["x"] + box["width"] <= 1440
    assert last.inner_text().strip() == "28 Nov 2026"
    scroll = page.locator("#board .table-scroll")
    assert scroll.evaluate("e => e.scrollWidth <= e.clientWidth"), "no scrolling at 1440 px"
    assert table.locator("thead").inner_text().count("Last run") == 1
    screenshot(page, "board-1440")
    # The reasoning split's longer criterion names fit as well.
    page.get_by_role("link", name="Reasoning").click()
    page.wait_for_url("**split=reasoning**")
    box = page.locator("table.leaderboard tbody td.date").first.bounding_box()
    assert box and box["x"] + box["width"] <= 1440
    assert scroll.evaluate("e => e.scrollWidth <= e.clientWidth"), "no scrolling at 1440 px"
    screenshot(page, "board-1440-reasoning")
    page.get_by_role("link", name="Open-ended").click()
    page.wait_for_url("**split=open_ended**")

    with page.expect_download() as download:
        page.get_by_role("link", name="CSV").click()
    table_csv = list(csv.reader(io.StringIO(download.value.path().read_text())))
    assert [r[0] for r in table_csv[1:]] == list(JUDGES)  # best PAcc first, as on the page
    with page.expect_download() as download:
        page.get_by_role("link", name="LaTeX").click()
    tex = download.value.path().read_text()
    assert "Qwen/Qwen2.5-VL-72B-Instruct &" in tex and "\\bottomrule" in tex

    page.get_by_role("link", name="Compare two judges").click()
    page.wait_for_url("**/versions/1/compare/**")
    page.select_option("select[name=a]", "gpt-4o-2024-11-20")
    page.select_option("select[name=b]", "llava-onevision-qwen2-7b-ov-hf")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url("**b=llava**")
    assert page.locator("h2#per-criterion").inner_text() == (
        "gpt-4o-2024-11-20 vs llava-onevision-qwen2-7b-ov-hf"
    )
    footer = page.locator("table.cmp-table tfoot td").all_inner_texts()
    assert footer[0] == str(PROMPTS * 5)  # the open-ended split's rows
    n_differ = int(footer[4])
    assert page.locator("table.cmp-rows tbody tr").count() == min(n_differ, 25)
    screenshot(page, "compare-1440")
    if n_differ > 25:
        page.get_by_role("link", name="Next →").click()
        page.wait_for_url("**page=2**")
        assert page.locator("table.cmp-rows tbody tr").count() == min(n_differ - 25, 25)
    # One criterion's rows, from the table.
    page.locator("table.cmp-table tbody th a").first.click()
    page.wait_for_url("**criterion=**")
    criteria = {c for c in page.locator("table.cmp-rows tbody td code").all_inner_texts()}
    assert len(criteria) <= 1


def test_leaderboard_and_compare_fit_a_phone(board, new_page):
    project, _ = board
    page = new_page(viewport=(390, 844))
    login(page, "lead-e2e")
    page.goto(f"/projects/{project.slug}/leaderboard/")
    page.wait_for_url("**/versions/1/leaderboard/")
    assert _page_width(page) <= 390
    screenshot(page, "board-390")
    page.get_by_role("link", name="Compare two judges").click()
    page.wait_for_url("**/compare/**")
    assert _page_width(page) <= 390
    assert page.locator("button", has_text="Compare").is_visible()
    screenshot(page, "compare-390")


def test_the_leaderboard_link_before_any_version(new_page, db):
    project = project_create(name="New study", slug="new-study")
    make_user("lead-new", LEAD_GROUP)
    for viewport, name in (((1440, 900), "board-none-1440"), ((390, 844), "board-none-390")):
        page = new_page(viewport=viewport)
        login(page, "lead-new")
        page.goto(f"/projects/{project.slug}/leaderboard/")
        assert page.locator("h1").inner_text() == "Judge leaderboard"
        assert "No dataset version is ready yet." in page.locator("main").inner_text()
        page.get_by_role("link", name="Dataset versions").last.click()
        page.wait_for_url(f"**/projects/{project.slug}/versions/")
        page.go_back()
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport[0]
        screenshot(page, name)
