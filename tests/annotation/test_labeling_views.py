"""The labeling screen over HTTP: permissions, htmx vs full page, no-JS posts, errors, Back."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from annotation.models import (
    Criterion,
    ProblemReport,
    Sample,
    Vote,
    VoteRevision,
)
from annotation.services.projects import member_add, project_create
from tests.annotation import work_data
from tests.conftest import make_sample, make_user

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
GOOD = "Response A names the three lamps; B stays generic."


def make_formal(project, n: int, prefix: str = "s") -> list[Sample]:
    """Formal samples with slots and model names (which the screen must never show)."""
    return work_data.make_formal(project, n, prefix=prefix, model_a="model-x", model_b="model-y")


calibrate = work_data.calibrate


@pytest.fixture
def member(project, annotator):
    member_add(project=project, user=annotator)
    return annotator


@pytest.fixture
def seed(project):
    return make_sample(
        project,
        "seed-1",
        is_seed=True,
        question="What is on the *table*?",
        response_a="Left says $x_1$ <script>alert(1)</script>",
        response_b="Right says **bold**",
    )


def label_url(project) -> str:
    return reverse("label", args=[project.slug])


def current_ids(response) -> tuple[int, int]:
    """The (sample, criterion) on screen, read from the page (partials carry no test context)."""
    found = re.search(rb'data-sample="(\d+)" data-criterion="(\d+)"', response.content)
    assert found, "no item on screen"
    return int(found[1]), int(found[2])


def checked(body: str, value: str) -> bool:
    return bool(re.search(rf'name="choice" value="{value}"[^>]*\bchecked\b', body))


def submit(client, project, ids, choice="A", rationale=GOOD, htmx=False, **extra):
    data = {"sample_id": ids[0], "criterion_id": ids[1], "choice": choice, "rationale": rationale}
    data.update(extra)
    return client.post(label_url(project), data, **(HTMX if htmx else {}))


# --- Permissions ------------------------------------------------------------------------------


def test_anonymous_is_redirected_to_login(client, project):
    for target in (
        label_url(project),
        reverse("label-back", args=[project.slug]),
        reverse("label-item", args=[project.slug, 1, 1]),
    ):
        response = client.get(target)
        assert response.status_code == 302
        assert response.url.startswith(reverse("login"))
    response = client.post(reverse("report-problem", args=[project.slug]), {"sample_id": 1})
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_outsider_and_non_member_get_403(client, project, outsider, seed):
    client.force_login(outsider)
    assert client.get(label_url(project)).status_code == 403
    other = project_create(name="Elsewhere", slug="elsewhere")
    stranger = make_user("stranger")
    member_add(project=other, user=stranger)
    client.force_login(stranger)
    assert client.get(label_url(project)).status_code == 403
    criterion = Criterion.objects.filter(project=project, split="open_ended").first()
    response = submit(client, project, (seed.pk, criterion.pk))
    assert response.status_code == 403
    assert not Vote.objects.exists()


def test_revisiting_someone_elses_item_is_refused(client, project, annotators, seed):
    first, second = annotators[:2]
    client.force_login(first)
    ids = current_ids(client.get(label_url(project)))
    submit(client, project, ids)
    client.force_login(second)
    response = client.get(reverse("label-item", args=[project.slug, *ids]))
    # Seeds are everyone's; the revisit shows second's own (empty) answer, never first's.
    assert GOOD not in response.content.decode()


# --- Rendering --------------------------------------------------------------------------------


def test_full_page_shows_one_calibration_item(client, project, member, seed):
    client.force_login(member)
    response = client.get(label_url(project))
    assert response.status_code == 200
    body = response.content.decode()
    assert body.startswith("<!doctype html>")
    assert "<em>table</em>" in body
    assert '<span class="math-inline">x_1</span>' in body  # math marked for KaTeX
    assert "<script>alert" not in body
    assert "<strong>bold</strong>" in body
    assert "calibration · round 1" in body
    assert "model-x" not in body and "model-y" not in body
    item = response.context["item"]
    assert item.is_calibration
    assert escape(item.criterion.name) in body
    assert 'name="choice" value="A"' in body and 'value="tie"' in body
    assert "vendor/katex/katex.min.js" in body and "js/math.js" in body
    # The progress bar counts every seed item of the round.
    n_criteria = Criterion.objects.filter(project=project, split="open_ended").count()
    assert f"/ {n_criteria}" in body


def test_htmx_request_gets_only_the_work_partial(client, project, member, seed):
    client.force_login(member)
    response = client.get(label_url(project), **HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="work"')
    assert "<html" not in body and "topbar" not in body


def test_swapped_item_shows_response_b_on_the_left(client, project, member, seed):
    client.force_login(member)
    response = client.get(label_url(project))
    item = response.context["item"]
    left, right = response.context["left_text"], response.context["right_text"]
    if item.swapped:
        assert (left, right) == (seed.response_b, seed.response_a)
    else:
        assert (left, right) == (seed.response_a, seed.response_b)


# --- Submitting -------------------------------------------------------------------------------


def test_plain_post_stores_the_vote_and_redirects(client, project, member, seed):
    client.force_login(member)
    first = client.get(label_url(project))
    ids = current_ids(first)
    swapped = first.context["item"].swapped
    response = submit(client, project, ids, choice="A", seconds="12.5")
    assert response.status_code == 302
    assert response.url == label_url(project)
    vote = Vote.objects.get(annotator=member)
    assert (vote.sample_id, vote.criterion_id) == ids
    assert vote.choice == ("B" if swapped else "A")
    assert vote.rationale == GOOD
    assert vote.round == 1
    assert vote.seconds == pytest.approx(12.5)
    following = client.get(label_url(project))
    assert current_ids(following) != ids
    assert following.context["item"].done == 1


def test_htmx_post_returns_the_next_item_with_a_toast(client, project, member, seed):
    client.force_login(member)
    ids = current_ids(client.get(label_url(project)))
    response = submit(client, project, ids, htmx=True)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="work"')
    assert '"toast"' in response["HX-Trigger-After-Settle"]
    assert response["HX-Push-Url"] == label_url(project)
    assert current_ids(response) != ids
    assert Vote.objects.filter(annotator=member).count() == 1


@pytest.mark.parametrize("htmx", [False, True])
def test_short_rationale_is_refused_and_the_text_kept(client, project, member, seed, htmx):
    client.force_login(member)
    ids = current_ids(client.get(label_url(project)))
    response = submit(client, project, ids, choice="B", rationale="too short", htmx=htmx)
    assert response.status_code == 422
    body = response.content.decode()
    assert ">too short</textarea>" in body
    assert 'id="rationale-error"' in body
    assert checked(body, "B")
    assert current_ids(response) == ids
    assert ("<html" in body) is not htmx
    assert not Vote.objects.exists()


def test_missing_choice_is_explained_next_to_the_choices(client, project, member, seed):
    client.force_login(member)
    ids = current_ids(client.get(label_url(project)))
    response = client.post(
        label_url(project),
        {"sample_id": ids[0], "criterion_id": ids[1], "rationale": GOOD},
        **HTMX,
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert 'id="choice-error"' in body and "Choose A, B or tie" in body
    assert f">{GOOD}</textarea>" in body
    assert not Vote.objects.exists()


def test_seconds_are_clamped(client, project, member, seed):
    client.force_login(member)
    ids = current_ids(client.get(label_url(project)))
    submit(client, project, ids, seconds="999999")
    assert 0 < Vote.objects.get().seconds <= 3600
    ids = current_ids(client.get(label_url(project)))
    submit(client, project, ids, seconds="not-a-number")
    assert Vote.objects.get(sample_id=ids[0], criterion_id=ids[1]).seconds == 0


def test_missing_ids_are_a_bad_request(client, project, member, seed):
    client.force_login(member)
    response = client.post(label_url(project), {"choice": "A", "rationale": GOOD})
    assert response.status_code == 400


# --- Back and revisions -----------------------------------------------------------------------


def test_back_opens_the_last_vote_and_a_revision_keeps_history(client, project, member, seed):
    client.force_login(member)
    ids = current_ids(client.get(label_url(project)))
    submit(client, project, ids, choice="A")
    response = client.get(reverse("label-back", args=[project.slug]))
    assert response.status_code == 302
    assert response.url == reverse("label-item", args=[project.slug, *ids])
    revisit = client.get(response.url)
    body = revisit.content.decode()
    assert "revising your vote" in body
    assert f">{GOOD}</textarea>" in body
    assert checked(body, "A")
    response = submit(client, project, ids, choice="B", rationale="On reflection B is sharper.")
    assert response.status_code == 302
    vote = Vote.objects.get(annotator=member)
    swapped = revisit.context["item"].swapped
    assert vote.choice == ("A" if swapped else "B")
    assert vote.rationale == "On reflection B is sharper."
    assert VoteRevision.objects.filter(vote=vote, rationale=GOOD).count() == 1


def test_back_over_htmx_renders_the_item_and_pushes_its_url(client, project, member, seed):
    client.force_login(member)
    ids = current_ids(client.get(label_url(project)))
    submit(client, project, ids)
    second = current_ids(client.get(label_url(project)))
    submit(client, project, second)
    response = client.get(reverse("label-back", args=[project.slug]), **HTMX)
    assert response.status_code == 200
    assert current_ids(response) == second
    assert response["HX-Push-Url"] == reverse("label-item", args=[project.slug, *second])
    # From a revisited item, Back goes one step further.
    back_url = re.search(r'class="back" href="([^"]+)"', response.content.decode())[1]
    back_url = back_url.replace("&amp;", "&")
    assert f"sample={second[0]}" in back_url
    earlier = client.get(back_url, **HTMX)
    assert current_ids(earlier) == ids


def test_back_without_votes_returns_to_the_queue(client, project, member, seed):
    client.force_login(member)
    response = client.get(reverse("label-back", args=[project.slug]))
    assert response.status_code == 302
    assert response.url == label_url(project)


# --- Calibration gate and formal work -----------------------------------------------------------


def finish_seeds(client, project):
    while True:
        response = client.get(label_url(project))
        if response.context["item"] is None:
            return response
        submit(client, project, current_ids(response))


def test_after_the_seed_round_the_annotator_waits_for_review(client, project, member, seed):
    make_formal(project, 3)
    client.force_login(member)
    response = finish_seeds(client, project)
    body = response.content.decode()
    assert "awaiting review" in body
    assert reverse("calibration", args=[project.slug]) in body
    assert not Vote.objects.filter(round=0).exists()


def test_formal_item_after_calibration_shows_ties_available(client, project, member, seed, lead):
    make_formal(project, 3)
    client.force_login(member)
    finish_seeds(client, project)
    calibrate(project, member, lead)
    response = client.get(label_url(project))
    item = response.context["item"]
    assert item is not None and not item.is_calibration
    assert not item.sample.is_seed
    body = response.content.decode()
    assert "calibration · round" not in body
    assert 'data-ties="0"' in body  # with a 10% cap the first tie comes at the 11th vote


def test_tie_beyond_the_cap_is_refused_next_to_the_control(client, project, member, seed, lead):
    make_formal(project, 3)
    client.force_login(member)
    finish_seeds(client, project)
    calibrate(project, member, lead)
    ids = current_ids(client.get(label_url(project)))
    response = submit(client, project, ids, choice="tie", rationale="Both equally vague here.")
    assert response.status_code == 422
    body = response.content.decode()
    assert 'id="choice-error"' in body
    assert ">Both equally vague here.</textarea>" in body
    assert not Vote.objects.filter(round=0).exists()


def test_annotator_never_sees_another_annotators_formal_vote(client, project, annotators, lead):
    project.annotators_per_sample = 2
    project.save()
    (sample,) = make_formal(project, 1)
    first, second = annotators[:2]
    for user in (first, second):
        calibrate(project, user, lead)
    client.force_login(second)
    ids = current_ids(client.get(label_url(project)))
    submit(client, project, ids, rationale="SECRET-RATIONALE of the second annotator")
    client.force_login(first)
    response = client.get(label_url(project))
    assert response.context["item"].sample == sample
    assert "SECRET-RATIONALE" not in response.content.decode()
    assert response.context["item"].vote is None
    revisit = client.get(reverse("label-item", args=[project.slug, *ids]))
    assert "SECRET-RATIONALE" not in revisit.content.decode()


def test_report_problem_takes_the_sample_out_of_the_queue(client, project, member, lead):
    project.batch_size = 1
    project.save()
    samples = make_formal(project, 2)
    calibrate(project, member, lead)
    client.force_login(member)
    reported = client.get(label_url(project)).context["item"].sample
    response = client.post(
        reverse("report-problem", args=[project.slug]),
        {"sample_id": reported.pk, "kind": "broken_image", "note": "image is blank"},
        **HTMX,
    )
    assert response.status_code == 200
    assert "Problem reported" in response["HX-Trigger-After-Settle"]
    report = ProblemReport.objects.get()
    assert (report.sample, report.reporter, report.kind) == (reported, member, "broken_image")
    assert report.note == "image is blank"
    served = set()
    while True:
        page = client.get(label_url(project))
        if page.context["item"] is None:
            break
        served.add(page.context["item"].sample.pk)
        submit(client, project, current_ids(page))
    assert reported.pk not in served
    assert served == {s.pk for s in samples} - {reported.pk}


def test_end_screen_when_the_queue_is_empty(client, project, member, lead):
    make_formal(project, 1)
    calibrate(project, member, lead)
    client.force_login(member)
    while (page := client.get(label_url(project))).context["item"] is not None:
        submit(client, project, current_ids(page))
    body = page.content.decode()
    assert "All done, thank you!" in body
    assert "Check again" in body
    n_criteria = Criterion.objects.filter(project=project, split="open_ended").count()
    assert Vote.objects.filter(annotator=member, round=0).count() == n_criteria


# --- Query budget -------------------------------------------------------------------------------


def _loop_queries(client, project) -> tuple[int, int]:
    """Queries of one next-item GET and one submit POST (htmx, which renders the next item)."""
    with CaptureQueriesContext(connection) as get_ctx:
        page = client.get(label_url(project), **HTMX)
    ids = current_ids(page)
    with CaptureQueriesContext(connection) as post_ctx:
        response = submit(client, project, ids, htmx=True)
    assert response.status_code == 200, response.content
    return len(get_ctx.captured_queries), len(post_ctx.captured_queries)


def test_query_budget_is_flat_between_100_and_1000_samples(client, lead):
    figures = {}
    for n in (100, 1000):
        project = project_create(name=f"Budget {n}", slug=f"budget-{n}")
        make_formal(project, n, prefix=f"b{n}")
        user = make_user(f"budget{n}")
        member_add(project=project, user=user)
        calibrate(project, user, lead)
        client.force_login(user)
        # Warm up: the first request claims the batch.
        _loop_queries(client, project)
        figures[n] = _loop_queries(client, project)
    print(f"\nHTTP queries per loop (next GET, submit POST): {figures}")
    assert figures[100] == figures[1000]


def test_page_lists_the_shortcuts(client, project, member, seed):
    client.force_login(member)
    body = client.get(label_url(project)).content.decode()
    for hint in (
        "<kbd>1</kbd>",
        "<kbd>2</kbd>",
        "<kbd>3</kbd>",
        "<kbd>Enter</kbd>",
        "<kbd>Alt</kbd>",
    ):
        assert hint in body
    assert "at least 15 characters" in body
