"""No text from a file or a form runs as script, on any screen, for any role, with the CSP on.

Every field a page shows (question, responses, model names, source, metadata, criterion names and
descriptions, rationales, problem notes, the project name, judge names) holds many payloads of
``tests.xss_payloads`` at once, and each screen is loaded once per role. A payload that ran would
set ``window.__xss``, open a dialog or fetch; none may. The page must also report no violation of
its Content-Security-Policy by its own scripts, and an inline script injected afterwards must be
blocked (the policy is on).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from aggregation.services.aggregate import project_aggregate
from annotation.models import Criterion, ProblemReport, Vote
from annotation.services import assignment, voting, work
from annotation.services import calibration as calibration_services
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP
from judging.services.scoring import judge_run_upload
from tests.conftest import make_sample, make_user
from tests.e2e.conftest import login
from tests.judging.web_data import HAND_ROWS, predictions_file, qid, version_from_records
from tests.xss_payloads import PAYLOADS

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ALL = "\n\n".join(PAYLOADS)

# Before any page script: record CSP violations, and count what a payload would do.
WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI + " " + e.sourceFile);
});
"""


def blob(limit: int, start: int = 0) -> str:
    """As many payloads as fit in limit characters, from start on (wrapping), space-separated."""
    out: list[str] = []
    size = 0
    for i in range(len(PAYLOADS)):
        payload = PAYLOADS[(start + i) % len(PAYLOADS)]
        if size + len(payload) + 1 <= limit:
            out.append(payload)
            size += len(payload) + 1
    return " ".join(out)


def chunks(limit: int) -> list[str]:
    """All payloads, cut into texts of at most limit characters."""
    out, current = [], ""
    for payload in PAYLOADS:
        if current and len(current) + len(payload) + 2 > limit:
            out.append(current)
            current = ""
        current = f"{current}\n\n{payload}" if current else payload
    return [*out, current]


@pytest.fixture
def hostile(db):
    """A project where every shown field is payloads, with seeds, votes, labels and a judge."""
    project = project_create(name=blob(200, 3), slug="xss")
    project.guidelines = ALL
    project.save()
    for i, criterion in enumerate(Criterion.objects.filter(project=project)):
        criterion.name = blob(120, 11 * i)
        criterion.description = ALL
        criterion.save()
    lead = make_user("lena", LEAD_GROUP)
    alice = make_user("alice", ANNOTATOR_GROUP)
    trio = [make_user(f"ann{i}", ANNOTATOR_GROUP) for i in (1, 2, 3)]
    for user in [alice, *trio]:
        member_add(project=project, user=user)
    fields = {
        "question": ALL,
        "response_a": ALL,
        "response_b": "\n".join(reversed(PAYLOADS)),
        "model_a": blob(200, 5),
        "model_b": blob(200, 40),
        "source": blob(120, 70),
        "reference_answer": ALL,
        "metadata": {blob(60, 9): ALL, "list": PAYLOADS[:40]},
    }
    make_sample(project, "seed-1", is_seed=True, **fields)
    make_sample(project, "open-1", **fields)
    assignment.slots_ensure(project=project)
    # Alice labels every seed item with payload rationales; the calibration discussion opens.
    rationales = chunks(4_900)
    n = 0
    while True:
        item = work.work_next(project=project, annotator=alice)
        if item is None or not item.sample.is_seed:
            break
        voting.vote_submit(
            project=project,
            annotator=alice,
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            shown_choice="A",
            rationale=rationales[n % len(rationales)],
            seconds=3.0,
        )
        n += 1
    # Three annotators' formal votes on a second sample, aggregated for the review screens.
    voted = make_sample(project, "open-2", **fields)
    for criterion in Criterion.objects.filter(project=project, split="open_ended"):
        for j, user in enumerate(trio):
            Vote.objects.create(
                sample=voted,
                criterion=criterion,
                annotator=user,
                choice="A" if j else "tie",
                rationale=rationales[(criterion.pk + j) % len(rationales)],
                seconds=20.0,
            )
    ProblemReport.objects.create(
        sample=voted, reporter=trio[0], kind=ProblemReport.Kind.OTHER, note=ALL
    )
    project_aggregate(project=project, n_boot=10)
    # A dataset version whose rows carry payloads, and a judge named with payloads.
    records = [
        {
            "question_id": qid(prompt, criterion),
            "prompt_id": prompt,
            "split": split,
            "criterion": criterion,
            "question": ALL,
            "pred_a": ALL,
            "pred_b": ALL,
            "model_a": blob(200, 20),
            "model_b": blob(200, 30),
            "preference": preference,
        }
        for prompt, split, criterion, preference in HAND_ROWS
    ]
    version = version_from_records(project, records)
    judge = blob(100, 60).replace("/", " ")
    judge_run_upload(version=version, judge=judge, file=predictions_file(), by=lead)
    return {"project": project, "version": version, "judge": judge, "sample": voted}


def open_watched(new_page):
    """A page that records dialogs, payload fetches and CSP violations."""
    page = new_page()
    page.add_init_script(WATCH)
    events: dict[str, list[str]] = {"dialogs": [], "requests": []}

    def on_dialog(dialog) -> None:
        events["dialogs"].append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)

    def on_request(request) -> None:
        # Pages load only from the live server; the payloads fetch /xss-fetch or other hosts.
        host = urlsplit(request.url).hostname
        if host not in ("localhost", "127.0.0.1") or "xss-fetch" in request.url:
            events["requests"].append(request.url)

    page.on("request", on_request)
    return page, events


def check_screen(page, events, url: str) -> None:
    """Load url; nothing may have run, and the CSP must be on and unviolated by our scripts."""
    response = page.goto(url)
    assert response.status == 200, url
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)  # give focus, load and animation handlers a chance to fire
    assert page.evaluate("window.__xss") is None, url
    assert events["dialogs"] == [], url
    assert events["requests"] == [], url
    assert page.evaluate("window.__csp") == [], url
    # The policy is on: an inline script added now is refused and reported.
    page.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.__inline = 1'; document.body.appendChild(s); }"
    )
    page.wait_for_function("window.__csp.length > 0")
    assert page.evaluate("window.__inline") is None


def test_annotator_screens_run_no_payload(hostile, new_page) -> None:
    slug = hostile["project"].slug
    page, events = open_watched(new_page)
    login(page, "alice")
    check_screen(page, events, reverse("calibration", args=[slug]))
    # Her home lists her votes (payload rationales); the guidelines are payloads too.
    check_screen(page, events, reverse("home"))
    assert page.locator(".history tbody tr").count() > 0
    check_screen(page, events, reverse("guidelines", args=[slug]))
    assert page.locator(".math-inline .katex, .math-display .katex").count() > 0
    calibration_services.calibration_mark(
        project=hostile["project"],
        member=hostile["project"].members.get(user__username="alice"),
        by=None,
    )
    check_screen(page, events, reverse("label", args=[slug]))
    assert page.locator("#work[data-sample]").count() == 1
    assert page.locator(".response .katex").count() > 0


def test_lead_screens_run_no_payload(hostile, new_page) -> None:
    project, version, judge = hostile["project"], hostile["version"], hostile["judge"]
    slug = project.slug
    criterion = Criterion.objects.filter(project=project).first()
    page, events = open_watched(new_page)
    login(page, "lena")
    urls = [
        reverse("review-queue", args=[slug]),
        reverse("review-item", args=[slug, hostile["sample"].pk]),
        reverse("project-settings", args=[slug]),
        reverse("criterion-edit", args=[slug, criterion.pk]),
        reverse("dashboard", args=[slug]),
        reverse("calibration", args=[slug]),
        reverse("leaderboard", args=[slug, version.number]),
        reverse("scorecard", args=[slug, version.number, judge]),
        reverse("members", args=[slug]),
        # Pages that show only the project's name, with the CSP checks all the same.
        reverse("home"),
        reverse("project-detail", args=[slug]),
        reverse("import-upload", args=[slug]),
        reverse("versions", args=[slug]),
        reverse("version-detail", args=[slug, version.number]),
        reverse("predictions-upload", args=[slug, version.number]),
        reverse("benchmark-import", args=[slug]),
        reverse("tokens"),
    ]
    for url in urls:
        check_screen(page, events, url)


def test_api_docs_work_under_their_wider_policy(new_page) -> None:
    make_user("lena", LEAD_GROUP)
    page, events = open_watched(new_page)
    login(page, "lena")
    response = page.goto(reverse("api-docs"))
    assert events["dialogs"] == []
    assert "'unsafe-inline'" in response.headers["content-security-policy"]
    page.locator(".swagger-ui .opblock").first.wait_for(timeout=15_000)
    assert page.evaluate("window.__csp") == []
