"""Fixtures of the aggregation tests."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from annotation.models import Project
from tests.aggregation.export_data import small_dataset


@pytest.fixture
def data(project: Project, annotators: list[User]) -> dict[str, Any]:
    """The small export dataset (test_dashboard.py defines its own ``data``)."""
    return small_dataset(project, annotators)
