"""The lead's curation path in a real browser: upload generations, read the funnel and the
reasons, download the decisions, promote; on a desktop and on a phone. A real worker runs the
jobs."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest

from annotation.models import Sample
from annotation.services.projects import project_create
from core.permissions import LEAD_GROUP
from curation.models import CandidatePair
from tests.annotation.import_data import png_bytes
from tests.conftest import make_user
from tests.curation.data import open_prompt, reasoning_prompt
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

RIGHT_WRONG = {"model-a": "12", "model-b": "13", "model-c": "12"}


def _zip(tmp_path):
    prompts = [open_prompt(f"o{i}", source="WildVision") for i in range(4)]
    prompts += [open_prompt(f"v{i}", source="VisIT-Bench") for i in range(2)]
    prompts += [reasoning_prompt(f"r{i}", RIGHT_WRONG) for i in range(4)]
    prompts[0]["responses"][0]["text"] = "A very long description. " * 20
    path = tmp_path / "generations.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("generations.jsonl", "".join(json.dumps(p) + "\n" for p in prompts))
        archive.writestr("images/red.png", png_bytes())
    return path


def _fits(page, width):
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_lead_curates_browses_and_promotes(new_page, celery_worker, tmp_path):
    make_user("lena", LEAD_GROUP)
    project = project_create(name="Curated study", slug="curated")
    page = new_page()
    login(page, "lena")
    page.goto("/projects/curated/")
    page.get_by_role("link", name="Curation").first.click()
    page.wait_for_url("**/projects/curated/curation/")
    assert page.locator("text=No curation run yet").is_visible()
    screenshot(page, "curation-00-empty")

    page.set_input_files("#id_file", str(_zip(tmp_path)))
    page.uncheck("input[name=filters][value=ensemble]")
    page.get_by_role("button", name="Run the curation").click()
    page.locator('#job .job[data-job-status="succeeded"]').wait_for(timeout=60_000)
    # The funnel arrives with the finished job, without a reload.
    table = page.locator(".funnel-table")
    table.wait_for()
    total = table.locator("tr.total td").all_inner_texts()
    pairs = CandidatePair.objects.filter(project=project)
    removed_length = pairs.filter(removed_by="length").count()
    removed_correct = pairs.filter(removed_by="correctness").count()
    kept = pairs.filter(removed_by="").count()
    assert total == ["20", str(removed_length), str(removed_correct), str(kept)]
    assert removed_length == 2 and removed_correct > 0
    assert page.locator("#cur-funnel svg.chart").is_visible()
    screenshot(page, "curation-01-funnel")

    # The reasons of the pairs the correctness filter removed.
    table.locator("tr.total a").nth(1).click()
    page.wait_for_url("**/curation/pairs/?status=correctness")
    assert page.locator("article.pair").count() == removed_correct
    first = page.locator("article.pair").first
    assert "correctness: removed" in first.inner_text()
    assert "by answer extractor" in first.inner_text()
    screenshot(page, "curation-02-pairs")

    # The CSV of every decision.
    page.goto("/projects/curated/curation/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download every decision (CSV)").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert len(rows) == 20 + 8  # a length row per pair, a correctness row per reasoning pair
    assert sum(r["passed"] == "no" for r in rows) == removed_length + removed_correct

    # Promote 4 pairs, 2 of them calibration seeds.
    page.fill("#id_count", "4")
    page.fill("#id_calibration_seeds", "2")
    page.get_by_role("button", name="Promote the kept pairs").click()
    page.locator('#job .job[data-job-status="succeeded"]').wait_for(timeout=60_000)
    page.locator("#cur-counts", has_text="4 promoted").wait_for()
    samples = Sample.objects.filter(project=project)
    assert samples.count() == 4 and samples.filter(is_seed=True).count() == 2
    assert all("curation" in s.metadata for s in samples)


def test_curation_pages_fit_a_phone(new_page, celery_worker, tmp_path):
    from judging.models import JudgeConfig

    make_user("lena", LEAD_GROUP)
    project_create(name="Curated study", slug="curated")
    for name in ("qwen2.5-vl-72b-instruct", "internvl3-78b", "gpt-4o-2024-11-20"):
        JudgeConfig.objects.create(name=name, base_url="http://127.0.0.1:9/v1", model=name)
    desk = new_page()
    login(desk, "lena")
    desk.goto("/projects/curated/curation/")
    desk.set_input_files("#id_file", str(_zip(tmp_path)))
    desk.uncheck("input[name=filters][value=ensemble]")
    desk.get_by_role("button", name="Run the curation").click()
    desk.locator(".funnel-table").wait_for(timeout=60_000)
    phone = new_page(viewport=(390, 844))
    login(phone, "lena")
    phone.goto("/projects/curated/curation/")
    phone.locator(".funnel-table").wait_for()
    _fits(phone, 390)
    screenshot(phone, "curation-03-phone")
    judges = phone.locator("fieldset", has_text="Ensemble judges")
    judges.scroll_into_view_if_needed()
    assert judges.locator("input[type=checkbox]").count() == 3
    assert judges.bounding_box()["width"] <= 390
    screenshot(phone, "curation-06-phone-judges")
    desk.locator("fieldset", has_text="Ensemble judges").scroll_into_view_if_needed()
    screenshot(desk, "curation-07-desk-judges")
    phone.locator("#cur-funnel").scroll_into_view_if_needed()
    screenshot(phone, "curation-04-phone-funnel")
    phone.goto("/projects/curated/curation/pairs/")
    _fits(phone, 390)
    screenshot(phone, "curation-05-phone-pairs")
