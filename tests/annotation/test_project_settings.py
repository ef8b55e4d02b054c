"""The lead edits protocol settings and criteria; annotators and outsiders cannot."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from annotation.models import Criterion, Project, Slot
from annotation.services.project_settings import project_settings_update
from tests.conftest import make_sample


def formal_sample_with_slots(project, external_id, k=3):
    sample = make_sample(project, external_id)
    Slot.objects.bulk_create([Slot(sample=sample, index=i) for i in range(1, k + 1)])
    return sample


def test_page_is_lead_only(client, project, annotator, outsider):
    url = f"/projects/{project.slug}/settings/"
    assert client.get(url).status_code == 302
    for user in (annotator, outsider):
        client.force_login(user)
        assert client.get(url).status_code == 403
        assert client.post(url, {"name": "Hacked"}).status_code == 403
    assert Project.objects.get(pk=project.pk).name == "Test project"


def test_lead_saves_settings(client, project, lead):
    client.force_login(lead)
    page = client.get(f"/projects/{project.slug}/settings/")
    assert page.status_code == 200
    assert "Completeness &amp; Coverage" in page.content.decode()
    data = {
        "name": "Renamed",
        "description": "",
        "annotators_per_sample": 3,
        "tie_cap": "0.05",
        "rationale_min_chars": 20,
        "lease_minutes": 60,
        "batch_size": 5,
        "work_order": "sample_major",
        "shuffle_ab": "on",
        "vote_revision_window": "until_aggregation",
        "calibration_threshold": 80,
        "routing_policy": "off",
        "audit_share": "0.2",
        "audit_seed": 0,
    }
    response = client.post(f"/projects/{project.slug}/settings/", data)
    assert response.status_code == 302
    project.refresh_from_db()
    assert (project.name, project.tie_cap, project.rationale_min_chars) == (
        "Renamed",
        Decimal("0.050"),
        20,
    )
    assert (project.work_order, project.shuffle_ab, project.batch_size) == ("sample_major", True, 5)


def test_invalid_tie_cap_is_refused_with_field_error(client, project, lead):
    client.force_login(lead)
    data = {
        "name": "X",
        "annotators_per_sample": 3,
        "tie_cap": "1.5",
        "rationale_min_chars": 15,
        "lease_minutes": 120,
        "batch_size": 10,
        "work_order": "criterion_major",
    }
    response = client.post(f"/projects/{project.slug}/settings/", data)
    assert response.status_code == 200
    assert "tie_cap" in response.context["form"].errors
    assert Project.objects.get(pk=project.pk).tie_cap == Decimal("0.100")


def test_more_annotators_per_sample_adds_slots(project, lead):
    s = formal_sample_with_slots(project, "s1")
    project_settings_update(project=project, by=lead, annotators_per_sample=5)
    assert sorted(Slot.objects.filter(sample=s).values_list("index", flat=True)) == [1, 2, 3, 4, 5]


def test_fewer_annotators_removes_open_slots_but_never_claimed_ones(project, lead, annotator):
    s = formal_sample_with_slots(project, "s1")
    project_settings_update(project=project, by=lead, annotators_per_sample=2)
    assert sorted(Slot.objects.filter(sample=s).values_list("index", flat=True)) == [1, 2]
    Slot.objects.filter(sample=s, index=2).update(annotator=annotator, claimed_at=timezone.now())
    with pytest.raises(ValidationError) as excinfo:
        project_settings_update(project=project, by=lead, annotators_per_sample=1)
    assert "annotators_per_sample" in excinfo.value.message_dict
    assert Slot.objects.filter(sample=s).count() == 2
    assert Project.objects.get(pk=project.pk).annotators_per_sample == 2


def test_lead_edits_criterion_description(client, project, lead, annotator):
    criterion = Criterion.objects.get(project=project, split="reasoning", key="logic")
    url = f"/projects/{project.slug}/criteria/{criterion.pk}/"
    client.force_login(annotator)
    assert client.post(url, {"name": "x", "description": "y"}).status_code == 403
    client.force_login(lead)
    response = client.post(url, {"name": "Logic", "description": "**Reward** valid steps."})
    assert response.status_code == 302
    criterion.refresh_from_db()
    assert (criterion.name, criterion.description) == ("Logic", "**Reward** valid steps.")
    page = client.get(url).content.decode()
    assert "<strong>Reward</strong> valid steps." in page
