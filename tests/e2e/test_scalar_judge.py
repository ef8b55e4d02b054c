"""A reward model's scores uploaded with a tie margin, and its scorecard, in Chromium.

The version (with its contested split) is built from labels written to the database; the lead
uploads the scores file through the page and reads the tie-margin curve and the contested
rows at a desktop and a phone width.
"""

from __future__ import annotations

import json
import random

import pytest

from aggregation.models import DatasetRow
from aggregation.services.versions import version_build
from core.permissions import LEAD_GROUP
from tests.aggregation.export_data import criteria, label_with_votes, sample_with_image
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scored_version(project, annotators):
    lead = make_user("lead-e2e", LEAD_GROUP)
    rng = random.Random(5)
    oe = criteria(project, "open_ended")
    trio = annotators[:3]
    for i in range(12):
        sample = sample_with_image(project, f"s{i:02d}")
        for j, criterion in enumerate(oe):
            pattern = "AAA" if (i + j) % 5 else ("ABt" if i % 2 else "BBt")
            label_with_votes(sample, criterion, trio, pattern)
    version = version_build(project=project, by=lead, include_contested=True)
    lines = []
    for qid, pref in DatasetRow.objects.filter(version=version).values_list(
        "question_id", "preference"
    ):
        right = rng.random() < 0.75
        gap = round(rng.uniform(0.05, 2.0), 3)
        a_wins = (pref == "model_a") == right
        lines.append(
            {"question_id": qid, "score_a": gap if a_wins else 0, "score_b": 0 if a_wins else gap}
        )
    contested = version.manifest["counts"]["contested"]["rows"]
    for i in range(12):
        for j, criterion in enumerate(oe):
            if not (i + j) % 5 and i % 2:
                lines.append(
                    {
                        "prompt_id": f"s{i:02d}",
                        "criterion": criterion.key,
                        "score_a": 1,
                        "score_b": 0,
                    }
                )
    path = project.slug + "-scores.jsonl"
    return project, version, "\n".join(json.dumps(line) for line in lines), path, contested


@pytest.mark.parametrize("viewport", [(1440, 900), (390, 844)])
def test_lead_uploads_scores_with_a_margin_and_reads_the_curve(
    scored_version, new_page, tmp_path, viewport
):
    project, version, body, name, contested = scored_version
    file = tmp_path / name
    file.write_text(body)
    page = new_page(viewport)
    login(page, "lead-e2e")
    page.goto(f"/projects/{project.slug}/versions/{version.number}/predictions/upload/")
    page.fill("input[name=judge]", "reward-model-7b")
    page.fill("input[name=tie_margin]", "0.5")
    page.set_input_files("input[name=file]", str(file))
    page.locator("form:has(input[name=file]) button[type=submit]").click()
    page.get_by_text("Stored run 1 of reward-model-7b").wait_for()
    page.goto(
        f"/projects/{project.slug}/versions/{version.number}/leaderboard/reward-model-7b/"
        "?split=open_ended"
    )
    section = page.locator("section.tie-margin")
    assert "δ = 0.5" in section.inner_text()
    assert section.locator("svg polyline").count() == 3  # accuracy, PAcc, ties
    chosen = section.locator("tr.vote-row td").first.inner_text()
    assert chosen == "0.5"
    contested_text = page.locator("section.contested").inner_text()
    assert f"The {contested} rows of this split" in contested_text
    first_row = page.locator("section.contested tbody tr").first.inner_text()
    assert first_row.split() == ["A", "(model_a)", "100.00%", str(contested)]
    # The page itself never scrolls sideways; wide tables scroll in their own box.
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport[0]
    section.scroll_into_view_if_needed()
    screenshot(page, f"scalar-judge-{viewport[0]}")
