"""The graded and pointwise labeling screens in Chromium: keys on a desktop, taps on a phone.

Each screen must fit its viewport without sideways scrolling, and the vote it sends is stored in
canonical A/B terms whatever order the responses were shown in.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from aggregation.services.aggregate import project_aggregate
from annotation.models import Criterion, Sample, Slot, Vote
from annotation.services import voting, work
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP
from tests.annotation.work_data import calibrate, make_formal
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

RATIONALE = "Response A reads the chart correctly; B misreads the axis."
DESKTOP, PHONE = (1440, 900), (390, 844)


def _setup(scale: str):
    lead = make_user("lead-e2e")
    project = project_create(name=f"{scale} screen", slug=f"{scale}-screen", label_scale=scale)
    project.annotators_per_sample = 1
    project.save()
    if scale == "pointwise":
        for criterion in Criterion.objects.filter(project=project):
            criterion.rubric = {str(s): f"Level {s}: what a {s} means here." for s in range(1, 6)}
            criterion.save()
    make_formal(project, 2)
    user = make_user("ann-e2e", ANNOTATOR_GROUP)
    member_add(project=project, user=user)
    calibrate(project, user, lead)
    return project, user


def _current(page) -> tuple[int, int]:
    work = page.locator("#work")
    return int(work.get_attribute("data-sample")), int(work.get_attribute("data-criterion"))


# What sticks out on the right, outside a table or the top bar (both scroll in their own box).
OVERFLOW = """() => [...document.querySelectorAll('body *')]
  .filter(e => !e.closest('table') && !e.closest('nav')
    && e.getBoundingClientRect().right > window.innerWidth + 1)
  .slice(0, 5).map(e => e.tagName + '.' + e.className + ': '
    + (e.textContent || '').trim().slice(0, 30))"""


def _fits(page, width: int) -> None:
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, (page.url, scroll, page.evaluate(OVERFLOW))


def _wait_next(page, before: tuple[int, int]) -> None:
    page.wait_for_function(
        "(b) => { const w = document.getElementById('work');"
        " return w && (w.dataset.sample + ':' + w.dataset.criterion) !== b; }",
        arg=f"{before[0]}:{before[1]}",
    )


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_graded_screen(new_page, viewport):
    project, user = _setup("graded")
    page = new_page(viewport)
    login(page, user.username)
    page.goto(f"/projects/{project.slug}/label/")
    assert page.locator(".grades label").count() == 5
    _fits(page, viewport[0])
    screenshot(page, f"graded-{viewport[0]}")
    item = _current(page)
    if viewport == DESKTOP:
        page.locator("#work").focus()
        page.keyboard.press("2")  # A>B (left somewhat better)
        assert page.locator('input[name="grade"][value="1"]').is_checked()
        assert page.evaluate("document.activeElement.id") == "rationale"
        page.keyboard.type(RATIONALE)
        page.keyboard.press("Enter")
        shown = 1
    else:
        page.locator(".grades label", has_text="B≫A").click()
        page.fill("#rationale", RATIONALE)
        page.locator("button.submit").click()
        shown = -2
    _wait_next(page, item)
    vote = Vote.objects.get(sample_id=item[0], criterion_id=item[1], annotator=user)
    swapped = Slot.objects.get(sample_id=item[0], annotator=user).swap_ab
    assert vote.grade == (-shown if swapped else shown)
    assert vote.choice == ("A" if vote.grade > 0 else "B")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_pointwise_screen(new_page, viewport):
    project, user = _setup("pointwise")
    page = new_page(viewport)
    login(page, user.username)
    page.goto(f"/projects/{project.slug}/label/")
    assert page.locator(".scores-a label").count() == 5
    assert page.locator(".scores-b label").count() == 5
    assert "Level 3: what a 3 means here." in page.locator(".rubric").text_content()
    # On a phone the rubric starts folded so the pinned footer leaves room for the responses.
    assert page.locator(".rubric").evaluate("e => e.open") == (viewport == DESKTOP)
    _fits(page, viewport[0])
    screenshot(page, f"pointwise-{viewport[0]}")
    item = _current(page)
    if viewport == DESKTOP:
        page.locator("#work").focus()
        page.keyboard.press("4")  # left: 4
        assert page.evaluate("document.activeElement.id") != "rationale"  # one row to go
        page.keyboard.press("8")  # right: 3
        assert page.locator('input[name="score_right"][value="3"]').is_checked()
        assert page.evaluate("document.activeElement.id") == "rationale"
        page.keyboard.type(RATIONALE)
        page.keyboard.press("Enter")
        left, right = 4, 3
    else:
        page.locator(".scores-a label", has_text="2").click()
        page.locator(".scores-b label", has_text="2").click()
        # Equal scores are a tie, and none is available yet: the reason flashes at once.
        assert "flash" in (page.locator("#tie-reason").get_attribute("class") or "")
        page.locator(".scores-b label", has_text="5").click()
        page.fill("#rationale", RATIONALE)
        page.locator("button.submit").click()
        left, right = 2, 5
    _wait_next(page, item)
    vote = Vote.objects.get(sample_id=item[0], criterion_id=item[1], annotator=user)
    swapped = Slot.objects.get(sample_id=item[0], annotator=user).swap_ab
    assert (vote.score_a, vote.score_b) == ((right, left) if swapped else (left, right))
    assert vote.choice == ("A" if vote.score_a > vote.score_b else "B")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("scale", ["graded", "pointwise"])
def test_lead_pages_of_a_scaled_project_fit(new_page, viewport, scale):
    project, user = _setup(scale)
    lead = type(user).objects.get(username="lead-e2e")
    lead.groups.add(Group.objects.get_or_create(name=LEAD_GROUP)[0])
    answer = {"shown_grade": "1"} if scale == "graded" else {"shown_scores": ("4", "2")}
    while (item := work.work_next(project=project, annotator=user)) is not None:
        voting.vote_submit(
            project=project,
            annotator=user,
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            rationale=RATIONALE,
            seconds=3,
            **answer,
        )
    project_aggregate(project=project, n_boot=10)
    sample = Sample.objects.filter(project=project).order_by("pk").first()
    criterion = Criterion.objects.filter(project=project).order_by("pk").first()
    page = new_page(viewport)
    login(page, "lead-e2e")
    for path in (
        f"/projects/{project.slug}/settings/",
        f"/projects/{project.slug}/criteria/{criterion.pk}/",
        f"/projects/{project.slug}/dashboard/",
        f"/projects/{project.slug}/review/{sample.pk}/",
    ):
        response = page.goto(path)
        assert response is not None and response.status == 200, path
        page.wait_for_load_state("networkidle")
        _fits(page, viewport[0])
        name = path.strip("/").split("/")[2]
        focus = {"dashboard": "#fig-scale", "review": ".votes", "criteria": ".rubric-edit"}
        if name in focus and page.locator(focus[name]).count():
            page.locator(focus[name]).first.scroll_into_view_if_needed()
        screenshot(page, f"lead-{scale}-{name}-{viewport[0]}")
    expected = "A&gt;B" if scale == "graded" else "A 4 · B 2"
    assert expected in page.content()
    page.goto(f"/projects/{project.slug}/dashboard/")
    heading = "Grades per criterion" if scale == "graded" else "Scores per criterion"
    assert heading in page.locator("#fig-scale").inner_text()
