"""Fixtures of the annotation tests: the calibration seeds and the project's criteria per split."""

from __future__ import annotations

import pytest

from annotation.models import Criterion
from tests.conftest import make_sample


@pytest.fixture
def seeds(project):
    return [
        make_sample(project, "seed-oe-1", is_seed=True, question="Seed question one?"),
        make_sample(project, "seed-oe-2", is_seed=True, question="Seed question two?"),
        make_sample(project, "seed-r-1", split="reasoning", is_seed=True, question="Solve $x$."),
    ]


@pytest.fixture
def criteria(project):
    return {
        split: list(Criterion.objects.filter(project=project, split=split).order_by("order"))
        for split in ("open_ended", "reasoning")
    }
