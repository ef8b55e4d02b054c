"""Fixtures of the judging tests."""

from __future__ import annotations

import pytest

from aggregation.models import DatasetVersion
from annotation.models import Project
from tests.judging.web_data import make_version


@pytest.fixture
def version(project: Project) -> DatasetVersion:
    """Version 1 of the project, ready, over the hand-made judging rows."""
    return make_version(project)
