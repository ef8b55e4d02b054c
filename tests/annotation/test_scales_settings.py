"""Choosing a project's label scale (creation, settings, import) and a criterion's rubric."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from annotation.default_criteria import DEFAULT_RUBRIC
from annotation.models import Criterion, CriterionChange, Project
from annotation.services.project_settings import project_settings_update
from annotation.services.projects import member_add, project_create

from .import_data import sample_line, write_jsonl
from .work_data import calibrate, make_formal, vote_next

pytestmark = pytest.mark.django_db


def test_lead_creates_a_graded_project(client, lead):
    client.force_login(lead)
    page = client.get("/projects/new/").content.decode()
    assert 'name="label_scale"' in page and "Graded (A≫B, A&gt;B, tie, B&gt;A, B≫A)" in page
    response = client.post(
        "/projects/new/", {"name": "Graded study", "slug": "", "label_scale": "graded"}
    )
    assert response.status_code == 302
    project = Project.objects.get(slug="graded-study")
    assert project.label_scale == "graded"
    criterion = Criterion.objects.filter(project=project).first()
    assert criterion.rubric == DEFAULT_RUBRIC  # ready for a pointwise scale too


def test_unknown_scale_is_refused_on_creation(db):
    with pytest.raises(ValidationError) as refused:
        project_create(name="X", slug="x", label_scale="stars")
    assert "label_scale" in refused.value.message_dict
    assert not Project.objects.filter(slug="x").exists()


def test_scale_changes_until_the_first_formal_vote(client, project, annotator, lead):
    project_settings_update(project=project, by=lead, label_scale="pointwise")
    project.refresh_from_db()
    assert project.label_scale == "pointwise"
    project_settings_update(project=project, by=lead, label_scale="pairwise")
    project.refresh_from_db()
    make_formal(project, 1)
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    vote_next(project, annotator, "A")
    with pytest.raises(ValidationError) as refused:
        project_settings_update(project=project, by=lead, label_scale="graded")
    message = refused.value.message_dict["label_scale"][0]
    assert "fixed once formal annotation has started" in message and "1 formal vote" in message
    project.refresh_from_db()
    assert project.label_scale == "pairwise"
    # The settings page shows the select off with the reason; a posted scale is ignored.
    client.force_login(lead)
    page = client.get(f"/projects/{project.slug}/settings/").content.decode()
    assert re.search(r'<select name="label_scale"[^>]*disabled', page)
    assert "fixed once formal annotation has started" in page
    data = {
        "name": project.name,
        "description": "",
        "label_scale": "graded",
        "annotators_per_sample": 3,
        "tie_cap": "0.1",
        "rationale_min_chars": 10,
        "lease_minutes": 60,
        "batch_size": 10,
        "work_order": "sample_major",
        "vote_revision_window": "until_aggregation",
        "calibration_threshold": 80,
    }
    response = client.post(f"/projects/{project.slug}/settings/", data)
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.label_scale == "pairwise"


def test_import_command_creates_a_pointwise_project(tmp_path, capsys, db):
    path = write_jsonl(tmp_path / "a.jsonl", [sample_line("c1")])
    call_command("import_samples", "point-study", str(path), "--scale", "pointwise")
    assert Project.objects.get(slug="point-study").label_scale == "pointwise"


def test_rubric_is_edited_on_the_criterion_page_of_a_pointwise_project(client, project, lead):
    criterion = Criterion.objects.filter(project=project).first()
    client.force_login(lead)
    url = f"/projects/{project.slug}/criteria/{criterion.pk}/"
    assert "rubric_1" not in client.get(url).content.decode()  # pairwise: no rubric
    project.label_scale = "pointwise"
    project.save()
    assert 'name="rubric_5"' in client.get(url).content.decode()
    data = {"name": criterion.name, "description": criterion.description}
    data.update({f"rubric_{s}": f"Means {s}" for s in range(1, 5)})
    data["rubric_5"] = "  "
    response = client.post(url, data)
    assert response.status_code == 200
    assert "Say what a score of 5 means." in response.content.decode()
    criterion.refresh_from_db()
    assert criterion.rubric == DEFAULT_RUBRIC
    data["rubric_5"] = "Flawless"
    assert client.post(url, data).status_code == 302
    criterion.refresh_from_db()
    assert criterion.rubric == {
        "1": "Means 1",
        "2": "Means 2",
        "3": "Means 3",
        "4": "Means 4",
        "5": "Flawless",
    }
    change = CriterionChange.objects.filter(criterion=criterion).latest("pk")
    assert change.details["after"]["rubric"]["5"] == "Flawless"
