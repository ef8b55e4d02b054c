"""A refused predictions file in Chromium: every bad line listed, the form still filled."""

from __future__ import annotations

import json

import pytest

from annotation.services.projects import project_create
from core.permissions import LEAD_GROUP
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot
from tests.judging.web_data import make_version, prediction_lines

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_every_bad_line_is_listed_and_the_judge_stays_filled(new_page, tmp_path):
    project = project_create(name="Chart study", slug="charts")
    make_user("lead-e2e", LEAD_GROUP)
    make_version(project)
    lines = prediction_lines()
    lines[2] = {"question_id": "nope__logic", "prediction": "model_a"}
    lines[4] = {"question_id": lines[4]["question_id"]}
    lines.append({"question_id": lines[0]["question_id"], "prediction": "model_a", "run": "x"})
    path = tmp_path / "gpt-4o.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    for viewport, name in (((1440, 900), "upload-errors-1440"), ((390, 844), "upload-errors-390")):
        page = new_page(viewport=viewport)
        login(page, "lead-e2e")
        page.goto(f"/projects/{project.slug}/versions/1/predictions/upload/")
        page.fill("#id_judge", "gpt-4o")
        page.fill("#id_template_hash", "t-2024")
        page.set_input_files("#id_file", str(path))
        page.get_by_role("button", name="Upload and score").click()
        errors = page.locator(".upload-errors")
        errors.wait_for()
        assert "gpt-4o.jsonl was refused: 3 errors. Nothing was stored." in errors.inner_text()
        rows = errors.locator("tbody tr")
        assert [rows.nth(i).locator("td").first.inner_text() for i in range(3)] == [
            "3",
            "5",
            str(len(lines)),
        ]
        assert page.input_value("#id_judge") == "gpt-4o"
        assert page.input_value("#id_template_hash") == "t-2024"
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport[0]
        errors.scroll_into_view_if_needed()
        screenshot(page, name)
