"""The lead's critical path in a real browser: aggregate, review, build a version, score a judge.

The starting data (a project, its samples and the formal votes of three annotators) is written to
the database; every later step goes through the pages, with a real Celery worker running the jobs.
"""

from __future__ import annotations

import json
import re

import pytest

from aggregation.models import (
    CriterionLabel,
    DatasetRow,
    DatasetVersion,
    ReviewDecision,
    SampleReview,
)
from annotation.models import Criterion, Vote
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP
from judging.models import Scorecard
from tests.conftest import make_sample, make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

CHOICES = {"A": "A", "B": "B", "t": "tie"}

# Votes per sample: one string per criterion (in criterion order), one letter per annotator
# (t = tie). Open-ended: 5 labels kept, 7 dropped (o4 loses every criterion); reasoning: 3 kept,
# 1 dropped.
VOTES = {
    "o1": ("open_ended", ["AAA", "BBt", "ABt"]),  # kept A, kept B (a conflict), split
    "o2": ("open_ended", ["AAt", "ttB", "BBB"]),  # kept A, too many ties, kept B
    "o3": ("open_ended", ["ABB", "AAA", "AA"]),  # split, kept A, missing vote
    "o4": ("open_ended", ["ABA", "ttt", "tAB"]),  # every criterion dropped
    "r1": ("reasoning", ["AAA", "BBB"]),
    "r2": ("reasoning", ["AtB", "BBt"]),  # split, kept B
}
KEPT = {"open_ended": 5, "reasoning": 3}
DROPPED = {"open_ended": 7, "reasoning": 1}

QUESTIONS = {
    "o1": "Which bar in the chart is the tallest, and by how much does it exceed the second?",
    "o2": "Describe the trend of the blue line between 2015 and 2020.",
    "o3": "How many people in the photo are wearing hats?",
    "o4": "What does the sign above the door say?",
    "r1": r"The triangle has legs $3$ and $4$. What is the length of the hypotenuse?",
    "r2": r"A square has a diagonal of $\sqrt{8}$. What is its area?",
}


@pytest.fixture
def study(db):
    """Three criteria per open-ended sample, two per reasoning one, and every formal vote."""
    project = project_create(name="Chart study", slug="charts")
    keep = {"open_ended": 3, "reasoning": 2}
    criteria = {}
    for split, n in keep.items():
        ordered = list(Criterion.objects.filter(project=project, split=split).order_by("order"))
        Criterion.objects.filter(pk__in=[c.pk for c in ordered[n:]]).delete()
        criteria[split] = ordered[:n]
    lead = make_user("lena", LEAD_GROUP)
    trio = [make_user(name, ANNOTATOR_GROUP) for name in ("ann1", "ann2", "ann3")]
    for user in trio:
        member_add(project=project, user=user)
    samples = {}
    for external_id, (split, rows) in VOTES.items():
        sample = make_sample(
            project,
            external_id,
            split=split,
            question=QUESTIONS[external_id],
            response_a=f"Response A to {external_id}: the answer, with the steps that lead to it.",
            response_b=f"Response B to {external_id}: a shorter answer without the steps.",
        )
        samples[external_id] = sample
        for criterion, letters in zip(criteria[split], rows, strict=True):
            for user, letter in zip(trio, letters, strict=False):
                Vote.objects.create(
                    sample=sample,
                    criterion=criterion,
                    annotator=user,
                    choice=CHOICES[letter],
                    rationale=f"{user.username}: on {criterion.name.lower()} response "
                    f"{CHOICES[letter]} reads the image more closely.",
                    seconds=25.0,
                )
    return {"project": project, "lead": lead, "trio": trio, "criteria": criteria, "s": samples}


def _number(text: str) -> int:
    return int(re.sub(r"[^0-9]", "", text))


def test_lead_aggregates_reviews_builds_and_scores(study, new_page, celery_worker, tmp_path):
    project, criteria = study["project"], study["criteria"]
    oe, rs = criteria["open_ended"], criteria["reasoning"]
    page = new_page()

    # Log in and open the project from the home page.
    login(page, "lena")
    screenshot(page, "lead-01-home")
    page.get_by_role("link", name="Chart study").first.click()
    page.wait_for_url("**/projects/charts/")
    assert page.locator("h1").first.inner_text().strip().startswith("Chart study")
    screenshot(page, "lead-02-project")

    # Dashboard: nothing aggregated yet, then the aggregation job runs on the worker.
    page.get_by_role("link", name="Dashboard").first.click()
    page.wait_for_url("**/projects/charts/dashboard/")
    assert page.locator("text=No aggregation has run yet.").is_visible()
    assert CriterionLabel.objects.filter(sample__project=project).count() == 0
    page.evaluate("window.samePage = true")
    page.get_by_role("button", name="Aggregate all", exact=True).click()
    card = page.locator("#aggregate-job .job")
    card.wait_for()
    page.locator('#aggregate-job .job[data-job-status="succeeded"]').wait_for(timeout=60_000)
    assert "Succeeded" in card.locator(".badge").inner_text()
    screenshot(page, "lead-03-aggregation-done")
    labels = CriterionLabel.objects.filter(sample__project=project)
    assert labels.count() == 16
    for split in ("open_ended", "reasoning"):
        kept = labels.filter(sample__split=split, outcome__startswith="kept").count()
        assert (kept, labels.filter(sample__split=split).count() - kept) == (
            KEPT[split],
            DROPPED[split],
        )
    # The figures redraw themselves when the job ends: no reload.
    results = page.locator("section[aria-labelledby=h-results]")
    kept_row = results.locator("tr", has_text="Kept / dropped labels")
    kept_row.wait_for(timeout=10_000)
    assert page.evaluate("window.samePage === true")  # the page was not reloaded
    assert kept_row.locator("td").all_inner_texts() == ["5 / 7", "3 / 1"]
    samples_row = results.locator("tr", has_text="Samples kept / dropped")
    assert samples_row.locator("td").all_inner_texts() == ["3 / 1", "2 / 0"]
    results.scroll_into_view_if_needed()
    screenshot(page, "lead-04-dashboard-results")

    # Review queue: open o1 and discard its first (kept, A) label by keyboard.
    page.get_by_role("link", name="Review", exact=True).first.click()
    page.wait_for_url("**/projects/charts/review/**")
    screenshot(page, "lead-05-review-queue")
    queue_text = page.locator("main").inner_text()
    for external_id in ("o1", "o2", "o3", "r1", "r2"):
        assert external_id in queue_text
    page.get_by_role("link", name="o1", exact=True).first.click()
    page.wait_for_url(f"**/review/{study['s']['o1'].pk}/**")
    block = page.locator(f"#crit-{oe[0].pk}")
    assert block.locator(".outcome").inner_text() == "Kept: unanimous"
    assert page.locator(f"#crit-{oe[2].pk}").get_attribute("data-reviewable") is None
    page.locator("body").click(position={"x": 5, "y": 5})
    page.wait_for_function(
        "(id) => document.querySelector('#crit-' + id).classList.contains('selected')",
        arg=oe[0].pk,
    )
    page.keyboard.press("d")
    form = block.locator("[data-discard-form]")
    form.wait_for(state="visible")
    page.keyboard.press("1")
    assert form.locator("input[value=inconsistent]").is_checked()
    page.keyboard.press("Enter")
    block.locator(".badge.bad", has_text="discarded").wait_for()
    assert "Rationale contradicts the vote" in block.locator(".badge.bad").inner_text()
    screenshot(page, "lead-06-review-discarded")
    decision = ReviewDecision.objects.get(sample=study["s"]["o1"])
    assert (decision.criterion_id, decision.action, decision.reason) == (
        oe[0].pk,
        "discard",
        "inconsistent",
    )
    assert decision.author.username == "lena"
    # The selection moved on to the next label; "r" marks the sample reviewed and goes next.
    assert not SampleReview.objects.filter(sample=study["s"]["o1"]).exists()
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("r")
    page.wait_for_url(lambda url: f"/review/{study['s']['o1'].pk}/" not in url)
    review = SampleReview.objects.get(sample=study["s"]["o1"])
    assert review.reviewed_by.username == "lena"
    screenshot(page, "lead-07-review-next")

    # The dashboard counts the discarded label out of the export.
    page.get_by_role("link", name="Dashboard").first.click()
    page.wait_for_url("**/projects/charts/dashboard/")
    results = page.locator("section[aria-labelledby=h-results]")
    discarded = results.locator("tr", has_text="Discarded in review").locator("td")
    assert discarded.all_inner_texts() == ["1", "0"]
    exportable = results.locator("tr", has_text="Labels for export").locator("td")
    assert exportable.all_inner_texts() == ["4", "3"]

    # Build a dataset version from the versions page.
    page.get_by_role("link", name="Chart study").first.click()
    page.wait_for_url("**/projects/charts/")
    page.get_by_role("link", name="Dataset versions").first.click()
    page.wait_for_url("**/projects/charts/versions/")
    assert page.locator("text=No version yet.").is_visible()
    page.get_by_role("button", name="Build version", exact=True).click()
    row = page.locator('#versions-table tr[data-version="1"]')
    row.locator(".badge.ok", has_text="Ready").wait_for(timeout=60_000)
    screenshot(page, "lead-08-version-ready")
    version = DatasetVersion.objects.get(project=project, number=1)
    # 8 kept labels, one discarded in review.
    assert version.status == "ready" and version.row_count == 7
    assert _number(row.locator("td.num").first.inner_text()) == 7
    question_ids = set(
        DatasetRow.objects.filter(version=version).values_list("question_id", flat=True)
    )
    assert f"o1__{oe[0].key}" not in question_ids
    expected = {
        f"o1__{oe[1].key}": "model_b",
        f"o2__{oe[0].key}": "model_a",
        f"o2__{oe[2].key}": "model_b",
        f"o3__{oe[1].key}": "model_a",
        f"r1__{rs[0].key}": "model_a",
        f"r1__{rs[1].key}": "model_b",
        f"r2__{rs[1].key}": "model_b",
    }
    assert (
        dict(DatasetRow.objects.filter(version=version).values_list("question_id", "preference"))
        == expected
    )
    row.get_by_role("link", name="v1").click()
    page.wait_for_url("**/versions/1/")
    stats = page.locator(".stat-cards .stat")
    assert _number(stats.nth(0).locator(".value").inner_text()) == 7
    assert _number(stats.nth(1).locator(".value").inner_text()) == 5
    screenshot(page, "lead-09-version-detail")

    # Upload a judge's predictions: every verdict right except o2's last criterion.
    predictions = dict(expected)
    predictions[f"o2__{oe[2].key}"] = "model_a"
    path = tmp_path / "judge.jsonl"
    path.write_text(
        "".join(
            json.dumps({"question_id": q, "prediction": p}) + "\n" for q, p in predictions.items()
        )
    )
    page.get_by_role("link", name="Judge leaderboard").click()
    page.wait_for_url("**/versions/1/leaderboard/**")
    page.get_by_role("link", name="Upload predictions").first.click()
    page.wait_for_url("**/versions/1/predictions/upload/")
    page.fill("#id_judge", "chart-judge-7b")
    page.set_input_files("#id_file", str(path))
    page.get_by_role("button", name="Upload and score").click()
    done = page.locator(".upload-job .job[data-job-status=succeeded]")
    done.wait_for(timeout=60_000)
    done.scroll_into_view_if_needed()
    screenshot(page, "lead-10-upload-scored")
    cards = {c.split: c for c in Scorecard.objects.filter(version=version, judge="chart-judge-7b")}
    assert set(cards) == {"open_ended", "reasoning"}
    # Open-ended prompts o1, o2, o3: o2 has a wrong criterion, so PAcc = 2/3; o2's conflicting
    # pair is not both right (CMR 0). Reasoning: every verdict right.
    assert round(cards["open_ended"].pacc, 2) == 66.67 and cards["open_ended"].cmr == 0.0
    assert cards["reasoning"].pacc == 100.0

    page.locator(".upload-done").get_by_role("link", name="Leaderboard").click()
    page.wait_for_url("**/versions/1/leaderboard/**")
    judge_row = page.locator("tbody tr", has=page.get_by_role("link", name="chart-judge-7b"))
    pacc = judge_row.locator("td.metric").first
    assert pacc.inner_text().split()[0] == "66.67"
    assert page.locator("thead th", has_text="PAcc").count() == 1
    screenshot(page, "lead-11-leaderboard")
    page.get_by_role("link", name="Reasoning", exact=True).click()
    page.wait_for_url("**split=reasoning**")
    judge_row = page.locator("tbody tr", has=page.get_by_role("link", name="chart-judge-7b"))
    assert judge_row.locator("td.metric").first.inner_text().split()[0] == "100.00"
    screenshot(page, "lead-12-leaderboard-reasoning")


def test_annotator_sees_no_lead_links_and_gets_403(study, new_page):
    page = new_page()
    login(page, "ann1")
    page.goto("/projects/charts/")
    screenshot(page, "annotator-project")
    html_links = page.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    for lead_path in ("/dashboard/", "/review/", "/versions/", "/settings/", "/import/"):
        assert not any(href and lead_path in href for href in html_links), lead_path
    nav = page.locator("header nav, nav").first.inner_text()
    for name in ("Dashboard", "Review", "Versions"):
        assert name not in nav
    page.goto("/")
    assert not page.get_by_role("link", name="Dashboard").count()
    for url in (
        "/projects/charts/dashboard/",
        "/projects/charts/review/",
        f"/projects/charts/review/{study['s']['o1'].pk}/",
        "/projects/charts/versions/",
    ):
        response = page.goto(url)
        assert response.status == 403, url
        assert page.locator("h1").inner_text() == "Not allowed"
    screenshot(page, "annotator-403")
