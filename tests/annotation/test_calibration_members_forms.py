"""Bad input to the calibration and members forms: a named error, nothing written, never a 500."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from annotation.models import ProjectMember, ReferenceLabel, Slot
from annotation.services import work
from annotation.services.projects import member_add, project_create
from tests.conftest import make_sample, make_user

from .test_calibration_views import url
from .work_data import calibrate, make_formal

pytestmark = pytest.mark.django_db


def shown(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.mark.parametrize(
    "query",
    ["criterion=abc", "criterion=-1", "split=nowhere", "disagreements=yes&criterion=1e9", "x=1"],
)
def test_bad_calibration_filters_are_dropped(client, project, lead, seeds, query):
    client.force_login(lead)
    response = client.get(url(project) + "?" + query)
    assert response.status_code == 200
    assert response.context["filters"]["split"] == ""
    assert response.context["discussion"].n_items >= len(seeds)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"sample_id": "abc"}, "sample_id"),
        ({"sample_id": ""}, "sample_id"),
        ({"criterion_id": "-4"}, "criterion_id"),
        ({"preference": "C"}, "reference label"),
        ({"preference": ""}, "reference label"),
    ],
)
def test_a_bad_reference_is_refused_naming_the_field(
    client,
    project,
    lead,
    seeds,
    criteria,
    change,
    field,
):
    client.force_login(lead)
    data = {"sample_id": seeds[0].pk, "criterion_id": criteria["open_ended"][0].pk}
    data |= {"preference": "A"} | change
    response = client.post(reverse("reference-set", args=[project.slug]), data)
    assert response.status_code == 302
    assert any(field in message for message in shown(response))
    assert not ReferenceLabel.objects.exists()


def test_a_reference_for_another_projects_seed_is_refused(
    client,
    project,
    lead,
    criteria,
):
    other = project_create(name="Other", slug="other")
    foreign = make_sample(other, "seed-x", is_seed=True)
    client.force_login(lead)
    response = client.post(
        reverse("reference-set", args=[project.slug]),
        {"sample_id": foreign.pk, "criterion_id": criteria["open_ended"][0].pk, "preference": "A"},
    )
    assert shown(response) == ["Choose a seed sample of this project (sample_id)."]
    assert not ReferenceLabel.objects.exists()


@pytest.mark.parametrize("value", ["", "abc", "-1", "999999", "9" * 25])
def test_adding_a_bad_user_is_refused(client, project, lead, value):
    client.force_login(lead)
    before = ProjectMember.objects.count()
    response = client.post(reverse("member-add", args=[project.slug]), {"user_id": value})
    assert response.status_code == 302
    assert shown(response) == ["Choose a user to add."]
    assert ProjectMember.objects.count() == before


def test_adding_an_inactive_user_is_refused(client, project, lead):
    sleeper = make_user("sleeper")
    sleeper.is_active = False
    sleeper.save()
    client.force_login(lead)
    response = client.post(reverse("member-add", args=[project.slug]), {"user_id": sleeper.pk})
    assert shown(response) == ["Choose a user to add."]
    assert not ProjectMember.objects.filter(user=sleeper).exists()


@pytest.fixture
def slot(project, annotators, lead):
    make_sample(project, "seed-1", is_seed=True)
    make_formal(project, 2)
    calibrate(project, annotators[0], lead)
    work.work_next(project=project, annotator=annotators[0])
    return Slot.objects.filter(annotator=annotators[0]).first()


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "9" * 25])
def test_reassigning_to_a_bad_user_id_is_refused(client, project, lead, slot, value):
    client.force_login(lead)
    response = client.post(reverse("slot-reassign", args=[project.slug, slot.pk]), {"to": value})
    assert response.status_code == 302
    assert shown(response) == ["That user is not an active annotator of this project."]
    assert Slot.objects.get(pk=slot.pk).annotator == slot.annotator


def test_reassigning_to_a_member_of_another_project_is_refused(
    client, project, lead, slot, annotators
):
    other = project_create(name="Other", slug="other")
    outsider = make_user("elsewhere")
    member_add(project=other, user=outsider)
    client.force_login(lead)
    response = client.post(
        reverse("slot-reassign", args=[project.slug, slot.pk]), {"to": outsider.pk}
    )
    assert shown(response) == ["That user is not an active annotator of this project."]
    assert Slot.objects.get(pk=slot.pk).annotator == slot.annotator
