"""The open-slots read (one SQL statement) returns what the ORM query of open_slots returns."""

from __future__ import annotations

import pytest

from annotation.models import Sample, Slot
from annotation.selectors.work import member_progress, open_slots, open_slots_progress
from annotation.services import work
from annotation.services.projects import member_add
from tests.annotation.work_data import calibrate, make_formal, vote_next
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

PROGRESS = ["f_votes", "f_ties", "f_done", "n_open", "n_skips", "slots_open_ended"]


def _fields(row, model) -> dict:
    return {f.attname: getattr(row, f.attname) for f in model._meta.concrete_fields}


def _voted(row) -> set[str]:
    return {c for c in (row.voted_criteria or "").split(",") if c}


def test_the_read_equals_the_orm_query_on_mixed_data(project, lead):
    """Samples with JSON metadata, an image name and null sizes; slots with and without votes."""
    project.batch_size = 4
    project.save()
    make_formal(project, 3, prefix="o", split="open_ended", metadata={"k": [1, "é"]})
    make_formal(project, 3, prefix="r", split="reasoning", image="samples/x.png")
    Sample.objects.filter(external_id="o-000001").update(metadata={})
    user = make_user("reader")
    member_add(project=project, user=user)
    calibrate(project, user, lead)
    assert open_slots_progress(project, user)[1] == []
    for choice in ["A", "B", "A"]:
        vote_next(project, user, choice=choice)
    member, rows = open_slots_progress(project, user)
    expected = list(open_slots(project, user))
    assert len(rows) == len(expected) > 0
    assert any(_voted(r) for r in rows)
    for row, ref in zip(rows, expected, strict=True):
        assert type(row) is Slot and _fields(row, Slot) == _fields(ref, Slot)
        assert _fields(row.sample, Sample) == _fields(ref.sample, Sample)
        assert row.sample.image.name == ref.sample.image.name
        assert _voted(row) == _voted(ref)
        assert row.claimed_at.tzinfo is not None
    counted = member_progress(project, user)
    assert {n: getattr(member, n) for n in PROGRESS} == {n: getattr(counted, n) for n in PROGRESS}
    assert work.work_next(project=project, annotator=user) is not None


def test_the_read_for_outsiders(project, lead):
    """A user without membership reads no member and no rows."""
    outsider = make_user("outsider")
    assert open_slots_progress(project, outsider) == (None, [])


def test_the_project_read_equals_the_orm_rows(project):
    """project_for_labeling: the Project row and its live criteria, as the ORM reads them."""
    from annotation.models import Criterion, Project
    from annotation.selectors.work import project_for_labeling

    read = project_for_labeling(project.slug)
    ref = Project.objects.get(pk=project.pk)
    assert _fields(read, Project) == _fields(ref, Project)
    live = Criterion.objects.filter(project=project, removed_at__isnull=True)
    expected = sorted(live, key=lambda c: (c.split, c.order, c.key))
    got = [c for split in read._work_criteria.by_split.values() for c in split]
    assert got and [_fields(c, Criterion) for c in got] == [_fields(c, Criterion) for c in expected]
    assert project_for_labeling("no-such-project") is None
