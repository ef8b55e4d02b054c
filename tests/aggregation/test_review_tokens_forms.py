"""Bad input to the review and token forms: a named error, nothing written, never a 500."""

from __future__ import annotations

from html import escape

import pytest
from django.urls import reverse

from aggregation.models import ReviewDecision, SampleReview
from annotation.importing.limits import NOTE_MAX_CHARS
from annotation.models import Criterion
from annotation.services.projects import member_add, project_create
from core.models import ApiToken
from tests.conftest import make_user

from .test_review import decide_url

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"action": "burn"}, "Unknown action &#x27;burn&#x27;: use keep or discard."),
        ({}, "Choose an action: keep or discard."),
        ({"action": "discard", "reason": "boring"}, "Unknown reason &#x27;boring&#x27;"),
        ({"action": "keep", "criterion": "abc"}, "The criterion is not one of this project"),
        (
            {"action": "discard", "reason": "other", "note": "n" * (NOTE_MAX_CHARS + 1)},
            f"The note is longer than {NOTE_MAX_CHARS:,} characters",
        ),
    ],
)
@pytest.mark.parametrize("htmx", [True, False])
def test_a_bad_review_decision_names_the_field(
    client,
    project,
    lead,
    review_setup,
    data,
    message,
    htmx,
):
    _, s1, _ = review_setup
    client.force_login(lead)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = client.post(decide_url(project, s1), data, **headers)
    assert response.status_code == (200 if htmx else 400)
    assert message in response.content.decode()
    assert "HX-Trigger" not in response
    assert not ReviewDecision.objects.exists()


def test_a_criterion_of_another_project_is_refused(client, project, lead, review_setup):
    _, s1, _ = review_setup
    other = project_create(name="Other", slug="other")
    foreign = Criterion.objects.filter(project=other).first()
    client.force_login(lead)
    response = client.post(decide_url(project, s1), {"action": "keep", "criterion": foreign.pk})
    assert response.status_code == 400
    assert escape("The criterion is not one of this project's.") in response.content.decode()
    assert not ReviewDecision.objects.exists()


@pytest.mark.parametrize(
    ("data", "field"), [({"reviewed": "yes"}, "reviewed"), ({"go": "elsewhere"}, "go")]
)
def test_a_bad_review_mark_is_refused_naming_the_field(
    client,
    project,
    lead,
    review_setup,
    data,
    field,
):
    _, s1, _ = review_setup
    client.force_login(lead)
    response = client.post(reverse("review-mark", args=[project.slug, s1.pk]), data)
    assert response.status_code == 400
    assert response["X-Refusal-Message"].startswith(f"{field}: ")
    assert not SampleReview.objects.exists()


@pytest.mark.parametrize("page", ["abc", "-2", "0", "9" * 30, "1.5"])
def test_a_bad_queue_page_is_the_first(client, project, lead, review_setup, page):
    client.force_login(lead)
    response = client.get(reverse("review-queue", args=[project.slug]), {"page": page})
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"user": "abc"}, "Choose the user the token acts for"),
        ({"user": "9" * 25}, "Choose the user the token acts for"),
        ({"name": ""}, "Give the token a name"),
        ({"name": "n" * 101}, "The name is too long (100 characters at most)."),
        ({"scope": "admin"}, "Unknown scope"),
    ],
)
def test_a_bad_token_field_is_named(client, lead, annotator, data, message):
    client.force_login(lead)
    response = client.post("/tokens/", {"user": annotator.pk, "name": "n", **data})
    assert response.status_code == 400
    assert escape(message) in response.content.decode()
    assert not ApiToken.objects.exists()


def test_a_token_for_an_inactive_user_is_refused(client, project, lead):
    sleeper = make_user("sleeper")
    member_add(project=project, user=sleeper)
    sleeper.is_active = False
    sleeper.save()
    client.force_login(lead)
    response = client.post("/tokens/", {"user": sleeper.pk, "name": "n"})
    assert response.status_code == 400 and b"Choose the user" in response.content
    assert not ApiToken.objects.exists()
