"""The annotator's critical path in a real browser: calibration by keyboard, review, formal work."""

from __future__ import annotations

import io

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone
from PIL import Image, ImageDraw

from annotation.models import Criterion, ProjectMember, Sample, Skip, Slot, Vote, VoteRevision
from annotation.services import assignment
from annotation.services import calibration as calibration_services
from annotation.services.counters import counters_recount
from annotation.services.projects import member_add, project_create
from tests.conftest import make_sample, make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

OPEN_ENDED_A = """The photo shows a **street market** at dusk: a woman in a red coat hands a paper
bag to a vendor behind a stall of oranges.

- three lamps above the stall, two lit;
- a chalkboard reading *"Oranges 3 for 2"*;
- a bicycle against the lamp post on the left.

| object | count |
|---|---|
| lamps | 3 |
| bicycles | 1 |
"""
OPEN_ENDED_B = """This is a market in the evening. People are buying fruit and the lights are on.
The atmosphere is pleasant and the colours are warm. Someone will probably buy something next."""
REASONING_A = r"""Let the legs be $a = 6$ and $b = 8$. By Pythagoras the hypotenuse is
$$c = \sqrt{a^2 + b^2} = \sqrt{36 + 64} = 10.$$
The inradius is \(r = \frac{a + b - c}{2} = 2\), so the shaded area is
\[ A = \frac{1}{2}ab - \pi r^2 = 24 - 4\pi \approx 11.43. \]

```python
from math import pi
print(24 - 4 * pi)
```
"""
REASONING_B = r"""The triangle has area $\frac{1}{2} \cdot 6 \cdot 8 = 24$. The circle has radius
$r = 3$ because it touches the longest side, so the shaded area is $24 - 9\pi$, which is negative;
therefore the answer is $0$."""


def _png() -> bytes:
    image = Image.new("RGB", (960, 640), (36, 52, 84))
    draw = ImageDraw.Draw(image)
    for i in range(10):
        draw.rectangle([60 + i * 86, 360, 120 + i * 86, 600], fill=(210 - i * 9, 120 + i * 6, 50))
    draw.ellipse([700, 60, 860, 220], fill=(245, 196, 70))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def study(db):
    """Two seed samples, two criteria per split, a lead and one annotator."""
    project = project_create(name="Market study", slug="market")
    for split in ("open_ended", "reasoning"):
        keep = Criterion.objects.filter(project=project, split=split).order_by("order")[:2]
        Criterion.objects.filter(project=project, split=split).exclude(
            pk__in=[c.pk for c in keep]
        ).delete()
    seed_oe = make_sample(
        project,
        "seed-market",
        is_seed=True,
        question="What is happening in this picture, and what will probably happen next?",
        response_a=OPEN_ENDED_A,
        response_b=OPEN_ENDED_B,
    )
    seed_oe.image.save("market.png", ContentFile(_png()), save=True)
    make_sample(
        project,
        "seed-triangle",
        split="reasoning",
        is_seed=True,
        question=r"A right triangle has legs $6$ and $8$. Find the area inside the triangle "
        r"but outside its inscribed circle.",
        response_a=REASONING_A,
        response_b=REASONING_B,
    )
    lead = make_user("lead", "lead")
    annotator = make_user("alice")
    member_add(project=project, user=annotator)
    return project, lead, annotator


def _formal(project, n: int, prefix: str) -> list[Sample]:
    samples = [
        make_sample(project, f"{prefix}-{i}", question=f"Formal question {prefix} {i}?")
        for i in range(n)
    ]
    assignment.slots_ensure(project=project)
    return samples


def _item_key(page) -> str:
    work = page.locator("#work")
    return f"{work.get_attribute('data-sample')}-{work.get_attribute('data-criterion')}"


def _vote_by_keyboard(page, key: str, rationale: str) -> None:
    """Choose with a shortcut key, type the rationale, press Enter; wait for the next screen."""
    before = _item_key(page)
    page.locator("#work").focus()
    page.keyboard.press(key)
    page.wait_for_function("document.activeElement && document.activeElement.id === 'rationale'")
    page.keyboard.press("Control+A")
    page.keyboard.type(rationale)
    page.keyboard.press("Enter")
    page.wait_for_function(
        "(before) => { const w = document.getElementById('work');"
        " return w && (w.dataset.sample + '-' + w.dataset.criterion) !== before; }",
        arg=before,
    )


def test_calibration_by_keyboard_review_and_formal_work(study, new_page, live_server):
    project, _lead, annotator = study
    _formal(project, 3, "formal")
    page = new_page()
    login(page, "alice")
    page.goto(f"/projects/{project.slug}/label/")
    assert page.locator(".badge.seed").inner_text().startswith("calibration")
    assert "model-x" not in page.content()
    screenshot(page, "label-open-ended")

    n_items = Criterion.objects.filter(project=project).count()
    keys = ["1", "2", "t", "a"]
    seen = []
    for i in range(n_items):
        seen.append(_item_key(page))
        if "reasoning" in page.locator(".work-title").inner_text().lower() and i == 2:
            # KaTeX turned the math into rendered formulas.
            assert page.locator(".response .katex").count() > 0
            screenshot(page, "label-reasoning-math")
        if i == 1:
            # Revise the first vote with Back before going on.
            page.locator("#work").focus()
            page.keyboard.press("Alt+ArrowLeft")
            page.wait_for_selector("text=revising your vote")
            assert _item_key(page) == seen[0]
            assert page.locator("#rationale").input_value().startswith("First thoughts")
            _vote_by_keyboard(page, "2", "Revised: B names the lamps and the sign exactly.")
            assert _item_key(page) == seen[1]
        if i < n_items - 1:
            _vote_by_keyboard(page, keys[i % 4], f"First thoughts on item {i}: A is more specific.")
        else:
            page.locator("#work").focus()
            page.keyboard.press("1")
            page.keyboard.type("Last seed item: A grounds every claim in the figure.")
            page.keyboard.press("Enter")
            page.wait_for_selector("text=awaiting review")

    votes = Vote.objects.filter(annotator=annotator, round=1)
    assert votes.count() == n_items
    sample_id, criterion_id = (int(x) for x in seen[0].split("-"))
    revised = votes.get(sample_id=sample_id, criterion_id=criterion_id)
    assert revised.rationale.startswith("Revised:")
    assert VoteRevision.objects.filter(vote=revised).count() == 1
    assert all(v.seconds > 0 for v in votes)
    screenshot(page, "label-awaiting-review")

    lead_page = new_page()
    login(lead_page, "lead")
    lead_page.goto(f"/projects/{project.slug}/calibration/")
    assert "alice" in lead_page.locator(".members").inner_text()
    screenshot(lead_page, "calibration-discussion")
    member_id = _member_id(project, annotator)
    # No reference labels to agree with: below the threshold, so the lead ticks the confirmation.
    card = lead_page.locator(f"#member-{member_id}")
    assert "threshold 80%: below" in card.inner_text()
    card.locator('input[name="confirm"]').check()
    lead_page.click(f"#member-{member_id} button:has-text('Mark calibrated')")
    lead_page.wait_for_selector("text=is calibrated")
    assert ProjectMember.objects.get(project=project, user=annotator).calibrated_at is not None

    page.click("text=Check again")
    page.wait_for_selector(".vote-form")
    assert page.locator(".badge.seed").count() == 0
    assert page.locator(".ties").inner_text() == "ties available: 0"
    first_formal = _item_key(page)
    assert int(first_formal.split("-")[0]) in set(
        Sample.objects.filter(project=project, is_seed=False).values_list("pk", flat=True)
    )


def _member_id(project, user) -> int:
    return ProjectMember.objects.get(project=project, user=user).pk


def test_no_tie_left_turns_the_button_off_and_a_skip_brings_it_back(study, new_page, live_server):
    project, lead, annotator = study
    member = ProjectMember.objects.get(project=project, user=annotator)
    calibration_services.calibration_mark(project=project, member=member, by=lead)
    # Twenty earlier formal votes without a tie (ten samples x two criteria, slots completed):
    # with a 10% cap the annotator now has two ties in hand.
    earlier = _formal(project, 10, "earlier")
    Slot.objects.filter(sample__in=earlier, index=1).update(
        annotator=annotator, claimed_at=timezone.now(), completed_at=timezone.now()
    )
    Vote.objects.bulk_create(
        [
            Vote(
                sample=s,
                criterion=c,
                annotator=annotator,
                round=0,
                choice="A",
                rationale="An earlier formal vote, A is better.",
            )
            for s in earlier
            for c in Criterion.objects.filter(project=project, split="open_ended")
        ]
    )
    counters_recount(project_id=project.pk)  # written in bulk: counted once, as bulk writers do
    _formal(project, 3, "fresh")

    page = new_page()
    login(page, "alice")
    page.goto(f"/projects/{project.slug}/label/")
    ties = int(page.locator(".ties").get_attribute("data-ties"))
    assert ties == 2
    for _ in range(ties):
        _vote_by_keyboard(page, "3", "Both responses are equally specific here.")
    assert page.locator(".ties").get_attribute("data-ties") == "0"

    # No tie left: the button is off and says why; pressing t only points at the reason.
    tie = page.locator('.choices input[value="tie"]')
    assert tie.is_disabled()
    reason = page.locator("#tie-reason")
    assert "No tie available: ties must stay below 10% of your formal votes" in reason.inner_text()
    assert "after 8 more votes" in reason.inner_text()  # 3 ties in 31 votes is below 10%
    before = _item_key(page)
    page.locator("#work").focus()
    page.keyboard.press("t")
    assert page.locator(".choices input:checked").count() == 0
    assert _item_key(page) == before
    screenshot(page, "label-tie-off")

    # Undecided: skip it for now, with a reason; it comes back after the other items.
    page.click(".skip summary")
    page.fill("#skip-reason", "Cannot separate them; back to it later.")
    page.click(".skip-panel button[type=submit]")
    page.wait_for_function(
        "(before) => { const w = document.getElementById('work');"
        " return w && (w.dataset.sample + '-' + w.dataset.criterion) !== before; }",
        arg=before,
    )
    # The confirmation sits in the header's status line, then clears itself.
    page.wait_for_function(
        "() => document.getElementById('work-status').textContent"
        " === 'Skipped for now: it comes back after your other items'"
    )
    page.wait_for_function("() => document.getElementById('work-status').textContent === ''")
    assert page.locator("#toasts .toast").count() == 0
    skipped = Skip.objects.get(annotator=annotator)
    assert f"{skipped.sample_id}-{skipped.criterion_id}" == before
    assert skipped.reason == "Cannot separate them; back to it later."

    seen = []
    while page.locator(".vote-form").count() and _item_key(page) != before:
        seen.append(_item_key(page))
        _vote_by_keyboard(page, "1", "A is more specific about the picture.")
    assert before not in seen and len(seen) == 3  # 6 fresh items, 2 ties cast, 1 skipped
    assert page.locator(".badge", has_text="skipped earlier").count() == 1

    # Finish the queue to reach the end screen.
    while page.locator(".vote-form").count():
        _vote_by_keyboard(page, "1", "A is more specific about the picture.")
    page.wait_for_selector("text=All done, thank you!")
    screenshot(page, "label-end")


def test_short_rationale_is_explained_in_place(study, new_page, live_server):
    project, _lead, annotator = study
    page = new_page()
    login(page, "alice")
    page.goto(f"/projects/{project.slug}/label/")
    before = _item_key(page)
    page.locator("#work").focus()
    page.keyboard.press("2")
    page.keyboard.type("too short")
    page.keyboard.press("Enter")
    page.locator("#rationale-error").wait_for()
    assert "at least 15 characters" in page.locator("#rationale-error").inner_text()
    assert page.locator("#rationale").input_value() == "too short"
    assert page.locator('.choices input[value="B"]').is_checked()
    assert _item_key(page) == before
    # The caret is back in the rationale: typing on and pressing Enter goes through.
    page.keyboard.type(", B names every object correctly.")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "(before) => { const w = document.getElementById('work');"
        " return w && (w.dataset.sample + '-' + w.dataset.criterion) !== before; }",
        arg=before,
    )
    vote = Vote.objects.get(annotator=annotator)
    assert vote.rationale == "too short, B names every object correctly."
    # "Vote saved" sits in the header's status line, never over a control, and the next
    # screen's error replaces it at once.
    page.wait_for_function(
        "() => document.getElementById('work-status').textContent === 'Vote saved'"
    )
    assert page.locator("#toasts .toast").count() == 0
    status, choice_a = page.locator("#work-status"), page.locator(".choice-a")
    s, a = status.bounding_box(), choice_a.bounding_box()
    assert s["y"] + s["height"] <= a["y"] or a["y"] + a["height"] <= s["y"]
    page.locator("#work").focus()
    page.keyboard.press("1")
    page.keyboard.type("short")
    page.keyboard.press("Enter")
    page.locator("#rationale-error").wait_for()
    assert page.locator("#work-status").inner_text() == ""


def test_labeling_works_without_javascript(study, new_page, live_server):
    project, _lead, annotator = study
    page = new_page(javascript=False)
    login(page, "alice")
    page.goto(f"/projects/{project.slug}/label/")
    first = _item_key(page)
    page.click("label.choice-a")
    page.fill("#rationale", "A is specific about the lamps and the sign.")
    page.click("button.submit")
    page.wait_for_load_state()
    assert _item_key(page) != first
    assert page.url.endswith(f"/projects/{project.slug}/label/")
    vote = Vote.objects.get(annotator=annotator)
    assert vote.rationale == "A is specific about the lamps and the sign."
    # An error comes back as a full page with the typed text kept.
    page.click("label.choice-tie")
    page.fill("#rationale", "short")
    page.click("button.submit")
    page.locator("#rationale-error").wait_for()
    assert page.locator("#rationale").input_value() == "short"
    # Back is a plain link to the previous vote.
    page.click("a.back")
    page.wait_for_selector("text=revising your vote")
    assert _item_key(page) == first
