"""Fixtures of the aggregation tests."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from aggregation.models import Outcome
from annotation.models import Criterion, Project, Vote
from tests.aggregation.export_data import small_dataset
from tests.aggregation.labels import label
from tests.conftest import make_sample


@pytest.fixture
def data(project: Project, annotators: list[User]) -> dict[str, Any]:
    """The small export dataset (test_dashboard.py defines its own ``data``)."""
    return small_dataset(project, annotators)


@pytest.fixture
def review_setup(project, lead, annotators):
    """Two samples with labels (one dropped) and three formal votes with HTML in rationales."""
    crits = list(Criterion.objects.filter(project=project, split="open_ended").order_by("order"))
    s1 = make_sample(
        project,
        "s1",
        response_a="**bold** answer <script>alert('a')</script>",
        response_b="Plain <img src=x onerror=alert(1)> text",
    )
    s2 = make_sample(project, "s2")
    label(s1, crits[0])
    label(s1, crits[1], preference="B")
    label(s1, crits[2], outcome=Outcome.DROPPED_SPLIT)
    label(s2, crits[0])
    for user, choice in zip(annotators[:3], "AAB", strict=True):
        Vote.objects.create(
            sample=s1,
            criterion=crits[0],
            annotator=user,
            choice=choice,
            rationale=f"<b>{user.username}</b> says {choice}",
            seconds=12,
        )
    return crits, s1, s2
