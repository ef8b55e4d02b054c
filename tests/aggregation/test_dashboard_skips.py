"""The dashboard counts each annotator's skips (formal items put off for later)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from aggregation.selectors.dashboard import dashboard_figures
from annotation.models import Criterion, ProjectMember, Skip
from tests.conftest import make_sample

pytestmark = pytest.mark.django_db


def test_skips_per_annotator_on_the_dashboard(client, project, annotators, lead):
    a1, a2, a3 = annotators[:3]
    for user in (a1, a2, a3):
        ProjectMember.objects.get_or_create(project=project, user=user)
    crit = Criterion.objects.filter(project=project, split="open_ended").first()
    s1, s2 = make_sample(project, "s1"), make_sample(project, "s2")
    seed = make_sample(project, "seed", is_seed=True)
    Skip.objects.create(sample=s1, criterion=crit, annotator=a1, reason="check the chart")
    Skip.objects.create(sample=s2, criterion=crit, annotator=a1, reason="long one")
    Skip.objects.create(sample=s1, criterion=crit, annotator=a2, reason="unsure")
    # A calibration skip is not formal work.
    Skip.objects.create(sample=seed, criterion=crit, annotator=a3, round=1, reason="later")
    figures = dashboard_figures(project=project)
    skips = {a["username"]: a["skips"] for a in figures.annotators}
    assert skips[a1.username] == 2 and skips[a2.username] == 1 and skips[a3.username] == 0
    client.force_login(lead)
    body = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    assert ">Skips</th>" in body
    row = re.search(rf"<th scope=\"row\">(?:(?!</tr>).)*?{a1.username}.*?</tr>", body, re.S)[0]
    assert '<td class="num">2</td>' in row
