"""Bad input to the labeling screen's forms: a named error, nothing written, never a 500."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.importing.limits import NOTE_MAX_CHARS, RATIONALE_MAX_CHARS
from annotation.models import ProblemReport, Vote
from annotation.services.projects import member_add, project_create
from tests.conftest import make_sample

from .test_labeling_views import GOOD, HTMX, current_ids, label_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def member(project, annotator):
    member_add(project=project, user=annotator)
    return annotator


@pytest.fixture
def ids(client, project, member):
    make_sample(project, "seed-1", is_seed=True)
    client.force_login(member)
    return current_ids(client.get(label_url(project)))


def vote(client, project, ids, **overrides):
    data = {"sample_id": ids[0], "criterion_id": ids[1], "choice": "A", "rationale": GOOD}
    data.update(overrides)
    return client.post(label_url(project), {k: v for k, v in data.items() if v is not None})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sample_id", "x"),
        ("sample_id", None),
        ("sample_id", "-3"),
        ("sample_id", "9" * 25),
        ("criterion_id", "1.5"),
        ("criterion_id", None),
    ],
)
def test_a_bad_item_id_is_a_bad_request_naming_the_field(client, project, ids, field, value):
    response = vote(client, project, ids, **{field: value})
    assert response.status_code == 400
    assert field in response.content.decode()
    assert field in response["X-Refusal-Message"]
    assert not Vote.objects.exists()


def test_an_item_id_of_another_project_is_refused(client, project, ids):
    other = project_create(name="Other", slug="other")
    foreign = make_sample(other, "f1", is_seed=True)
    response = vote(client, project, ids, sample_id=foreign.pk)
    assert response.status_code == 422
    assert not Vote.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("choice", "C", "Choose A, B or tie."),
        ("choice", None, "Choose A, B or tie."),
        ("rationale", "r" * (RATIONALE_MAX_CHARS + 1), "The rationale is longer than"),
    ],
)
def test_a_bad_vote_field_comes_back_next_to_the_field(client, project, ids, field, value, message):
    response = client.post(
        label_url(project),
        {
            k: v
            for k, v in {
                "sample_id": ids[0],
                "criterion_id": ids[1],
                "choice": "A",
                "rationale": GOOD,
                field: value,
            }.items()
            if v is not None
        },
        **HTMX,
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert f'id="{field}-error"' in body and message in body
    assert not Vote.objects.exists()


def test_a_malformed_back_link_goes_to_the_latest_vote(client, project, ids):
    vote(client, project, ids)
    for query in ("?sample=x&criterion=1", "?sample=1", "?sample=-1&criterion=99999999999999999"):
        response = client.get(reverse("label-back", args=[project.slug]) + query)
        assert response.status_code == 302
        assert response.url == reverse("label-item", args=[project.slug, *ids])


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"sample_id": "x"}, "sample_id"),
        ({}, "sample_id"),
        ({"kind": "nonsense"}, "kind"),
        ({"kind": ""}, "kind"),
        ({"note": "n" * (NOTE_MAX_CHARS + 1)}, "note"),
    ],
)
def test_a_bad_problem_report_is_refused_naming_the_field(client, project, ids, data, field):
    posted = {"sample_id": ids[0], "kind": "broken_image", "note": "blank", **data}
    if not data:
        del posted["sample_id"]
    response = client.post(reverse("report-problem", args=[project.slug]), posted, **HTMX)
    assert response.status_code == 400
    assert response["X-Refusal-Message"].startswith(f"{field}: ")
    assert not ProblemReport.objects.exists()


def test_a_problem_report_with_the_longest_note_is_kept(client, project, ids):
    note = "n" * NOTE_MAX_CHARS
    response = client.post(
        reverse("report-problem", args=[project.slug]),
        {"sample_id": ids[0], "kind": "unreadable", "note": note},
    )
    assert response.status_code == 302
    report = ProblemReport.objects.get()
    assert (report.kind, report.note) == (ProblemReport.Kind.UNREADABLE, note)


def test_a_problem_report_without_a_kind_says_to_choose_one(client, project, ids):
    response = client.post(
        reverse("report-problem", args=[project.slug]), {"sample_id": ids[0], "note": "x"}, **HTMX
    )
    assert response.status_code == 400
    assert response["X-Refusal-Message"] == "kind: Choose what is wrong with the sample."
    assert not ProblemReport.objects.exists()
