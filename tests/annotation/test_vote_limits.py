"""Rationale limits: length, NUL and lone surrogates refused with the field, nothing stored."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.importing.limits import RATIONALE_MAX_CHARS
from annotation.models import Vote
from annotation.services import voting, work, work_types
from annotation.services.projects import member_add

from .work_data import calibrate, make_formal

pytestmark = pytest.mark.django_db


@pytest.fixture
def user(project, annotator, lead):
    make_formal(project, 2)
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    return annotator


def submit(project, user, rationale):
    item = work.work_next(project=project, annotator=user)
    return item, lambda: voting.vote_submit(
        project=project,
        annotator=user,
        sample_id=item.sample.pk,
        criterion_id=item.criterion.pk,
        shown_choice="A",
        rationale=rationale,
        seconds=3,
    )


@pytest.mark.parametrize(
    ("rationale", "message"),
    [
        ("x" * (RATIONALE_MAX_CHARS + 1), "The rationale is longer than 5,000 characters (5,001)."),
        (
            "Clear and complete\x00 answer.",
            "The rationale contains a NUL character at character 19.",
        ),
        ("Clear and complete \ud800 answer.", "The rationale contains an unpaired surrogate"),
    ],
)
def test_bad_rationales_are_refused_with_the_field(project, user, rationale, message):
    before = Vote.objects.count()
    _, cast = submit(project, user, rationale)
    with pytest.raises(work_types.VoteRejected) as info:
        cast()
    assert info.value.field == "rationale" and info.value.message.startswith(message)
    assert Vote.objects.count() == before


def test_a_rationale_at_the_limit_is_stored(project, user):
    _, cast = submit(project, user, "y" * RATIONALE_MAX_CHARS)
    assert len(cast().rationale) == RATIONALE_MAX_CHARS


def test_the_label_form_shows_the_limit_next_to_the_field(client, project, user):
    item, _ = submit(project, user, "")
    client.force_login(user)
    response = client.post(
        reverse("label", args=[project.slug]),
        {
            "sample_id": item.sample.pk,
            "criterion_id": item.criterion.pk,
            "choice": "A",
            "rationale": "z" * (RATIONALE_MAX_CHARS + 10),
        },
    )
    assert response.status_code == 422
    assert "The rationale is longer than 5,000 characters (5,010)." in response.content.decode()
    assert not Vote.objects.exists()
