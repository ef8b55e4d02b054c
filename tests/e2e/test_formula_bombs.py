"""A formula nested 150 deep, or far too long, no longer crashes the tab that shows it.

Nested about 140 deep, KaTeX's output crashed Chromium's renderer as the page was laid out. Each
page below holds such formulas (``^``, ``\\frac``, ``\\sqrt`` 150 deep, a 20,000-character flat
formula), and formulas that only the browser can measure: one that nests through macros it
defines, and one a response marks as math in its own HTML. After load the page must still run
script, show every one of them as code text, and typeset the formulas within the caps.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Criterion
from annotation.rendering import MAX_FORMULA_DEPTH
from annotation.services import assignment
from annotation.services import calibration as calibration_services
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP
from tests.conftest import make_sample, make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def nested(opener: str, depth: int) -> str:
    return opener * depth + "x" + "}" * depth


SUPERSCRIPTS = nested("x^{", 150)
FRACTIONS = nested("\\frac{1}{", 150)
ROOTS = nested("\\sqrt{", 150)
FLAT = "+".join(f"x_{{{i}}}^2" for i in range(2_500))
# Four macros, each nesting the next four times: 320 roots from a 150-character source.
MACROS = (
    r"\def\a#1{\sqrt{#1}}\def\b#1{\a{\a{\a{\a{#1}}}}}\def\c#1{\b{\b{\b{\b{#1}}}}}"
    r"\def\d#1{\c{\c{\c{\c{#1}}}}}\d{\d{\d{\d{\d{x}}}}}"
)
BOMBS = {"superscripts": SUPERSCRIPTS, "fractions": FRACTIONS, "roots": ROOTS, "flat": FLAT}
AT_THE_CAP = nested("x^{", MAX_FORMULA_DEPTH)

RESPONSE = "\n\n".join(
    [
        f"Powers ${SUPERSCRIPTS}$ grow fast.",
        f"A continued fraction:\n\n$$\n{FRACTIONS}\n$$",
        f"Roots \\({ROOTS}\\) and a long sum ${FLAT}$.",
        f"Macros ${MACROS}$ expand in the browser.",
        f'<span class="math-inline">{SUPERSCRIPTS}</span> is marked by the response itself.',
        f"Within the caps: ${AT_THE_CAP}$ and $\\frac{{a}}{{b}} + \\sqrt{{2}}$.",
    ]
)
# Every formula the page must show as code text, by the start of its TeX.
AS_CODE = [SUPERSCRIPTS, FRACTIONS, ROOTS, FLAT, MACROS]


@pytest.fixture
def bombs(db):
    """A formal sample whose question and responses hold the formulas, and the guidelines too."""
    project = project_create(name="Formula study", slug="formulas")
    project.guidelines = RESPONSE
    project.save()
    keep = Criterion.objects.filter(project=project, split="open_ended").order_by("order")[:1]
    Criterion.objects.filter(project=project).exclude(pk__in=[c.pk for c in keep]).delete()
    make_user("lena", LEAD_GROUP)
    alice = make_user("alice", ANNOTATOR_GROUP)
    member = member_add(project=project, user=alice)
    calibration_services.calibration_mark(project=project, member=member, by=None)
    sample = make_sample(
        project,
        "bombs-1",
        question=f"What is ${ROOTS}$?",
        response_a=RESPONSE,
        response_b=f"Short: ${FRACTIONS}$.",
    )
    assignment.slots_ensure(project=project)
    return project, sample


def open_alive(new_page, username: str, url: str, name: str):
    """Load url as username; fail if the renderer crashed, and prove the page still runs."""
    page = new_page()
    crashes: list[str] = []
    page.on("crash", lambda _page: crashes.append(url))
    login(page, username)
    response = page.goto(url)
    assert response.status == 200, url
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    assert crashes == []
    assert page.evaluate("() => document.body.querySelectorAll('*').length > 10 && 6 * 7") == 42
    screenshot(page, name)
    return page


def assert_formulas_safe(page, where: str) -> None:
    """Every bomb in where is code text; every formula left is typeset, none waits untypeset."""
    codes = page.locator(f"{where} code.language-latex").all_inner_texts()
    for tex in AS_CODE:
        assert any(code.strip() == tex for code in codes), tex[:40]
    assert page.locator(f"{where} .math-inline:not([data-typeset])").count() == 0
    assert page.locator(f"{where} .math-display:not([data-typeset])").count() == 0
    assert page.locator(f"{where} .katex").count() >= 2
    # The formula at the depth cap was typeset, not shown as code.
    assert not any(code.strip() == AT_THE_CAP for code in codes)


def test_labeling_screen_survives_formula_bombs(bombs, new_page) -> None:
    project, _sample = bombs
    page = open_alive(new_page, "alice", reverse("label", args=[project.slug]), "label-bombs")
    assert page.locator("#work[data-sample]").count() == 1
    assert_formulas_safe(page, ".response")
    # The question's and the other response's bombs are code text too.
    codes = page.locator("code.language-latex").all_inner_texts()
    assert sum(code.strip() == ROOTS for code in codes) >= 2
    assert sum(code.strip() == FRACTIONS for code in codes) >= 2
    # The screen still works: the rationale box takes typing.
    page.locator("#rationale").fill("Still alive.")
    assert page.locator("#rationale").input_value() == "Still alive."


def test_guidelines_survive_formula_bombs(bombs, new_page) -> None:
    project, _sample = bombs
    url = reverse("guidelines", args=[project.slug])
    page = open_alive(new_page, "alice", url, "guidelines-bombs")
    assert_formulas_safe(page, "body")


def test_lead_sample_page_survives_formula_bombs(bombs, new_page) -> None:
    project, sample = bombs
    url = reverse("sample-detail", args=[project.slug, sample.pk])
    page = open_alive(new_page, "lena", url, "sample-bombs")
    assert_formulas_safe(page, "body")
