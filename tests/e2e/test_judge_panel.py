"""The judge panel in a real browser: tick two judges, start the panel with a real Celery worker
against local OpenAI-compatible servers, watch the job card, read the counts it wrote."""

from __future__ import annotations

import pytest

from annotation.models import PanelLabel
from annotation.services.projects import project_create
from core.permissions import LEAD_GROUP
from tests.conftest import make_sample, make_user
from tests.e2e.conftest import login, screenshot
from tests.e2e.test_judge_runner import PHONE, no_sideways_scroll
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.runner_data import LONG, SHORT, judge_config

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_lead_runs_the_judge_panel(new_page, celery_worker):
    project = project_create(name="Panel study", slug="panel-study")
    make_sample(project, "s1", response_a=LONG, response_b=SHORT)
    make_sample(project, "s2", response_a=SHORT, response_b=LONG)
    make_sample(project, "s3", response_a=SHORT, response_b="A dog.")
    make_user("lena", LEAD_GROUP)
    with FakeOpenAI(delay=0.2) as one, FakeOpenAI() as two:
        judge_config(one.url, name="judge-one", concurrency=2)
        judge_config(two.url, name="judge-two", model="other-vl")
        judge_config(two.url, name="judge-unused", model="unused-vl")
        page = new_page()
        login(page, "lena")
        page.goto(f"/projects/{project.slug}/")
        page.click("nav >> text=Judge panel")
        page.wait_for_selector("h1:text('Judge panel')")
        assert "No panel has run on this project yet." in page.inner_text("body")
        page.check("label:has-text('judge-one') input")
        page.check("label:has-text('judge-two') input")
        page.click("text=Start the panel")
        page.wait_for_selector(".panel-job [data-job-status=succeeded]", timeout=60_000)
        summary = page.locator("#panel-summary").inner_text()
        assert "15\nitems pre-labeled of 15" in summary
        assert "10\nroutable (67%): 5 A, 5 B" in summary
        assert "by the panel judge-one, judge-two" in page.inner_text("#panel-judges")
        assert "Succeeded" in page.inner_text("#panel-recent")
        assert len(one.answered()) == 30 and len(two.answered()) == 30
        screenshot(page, "panel-1440")
    assert PanelLabel.objects.filter(routable=True).count() == 10
    phone = new_page(PHONE)
    login(phone, "lena")
    phone.goto(f"/projects/{project.slug}/panel/")
    no_sideways_scroll(phone)
    screenshot(phone, "panel-390")
