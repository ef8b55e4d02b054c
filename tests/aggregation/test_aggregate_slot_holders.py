"""Only the votes of a sample's current slot holders make its labels (never more than k)."""

import pytest
from django.utils import timezone

from aggregation.models import CriterionLabel
from aggregation.services.aggregate import project_aggregate
from annotation.models import Slot
from tests.aggregation.votes import cast_all, criteria_of
from tests.conftest import make_sample

pytestmark = pytest.mark.django_db


def hold(sample, users):
    now = timezone.now()
    Slot.objects.bulk_create(
        [
            Slot(sample=sample, index=i, annotator=u, claimed_at=now)
            for i, u in enumerate(users, start=1)
        ]
    )


def test_a_released_holders_votes_do_not_count(project, annotators):
    crit = criteria_of(project)[0]
    sample = make_sample(project, "s1")
    first, second, third, replacement = annotators[:4]
    hold(sample, [first, second, third])
    # The third annotator voted B, then the slot went to someone else, who votes A.
    cast_all(sample, crit, [first, second, third], "AAB")
    Slot.objects.filter(sample=sample, annotator=third).update(annotator=replacement)
    cast_all(sample, crit, [replacement], "A")

    project_aggregate(project=project, split="open_ended", n_boot=10)
    label = CriterionLabel.objects.get(sample=sample, criterion=crit)
    assert (label.outcome, label.preference) == ("kept_unanimous", "A")
    assert (label.votes_a, label.votes_b, label.votes_tie) == (3, 0, 0)
    assert len(label.vote_ids) == 3


def test_an_open_slot_leaves_the_label_short(project, annotators):
    crit = criteria_of(project)[0]
    sample = make_sample(project, "s1")
    hold(sample, annotators[:3])
    cast_all(sample, crit, annotators[:3], "AAA")
    Slot.objects.filter(sample=sample, index=3).update(annotator=None, claimed_at=None)

    project_aggregate(project=project, split="open_ended", n_boot=10)
    label = CriterionLabel.objects.get(sample=sample, criterion=crit)
    assert label.outcome == "dropped_missing"
    assert label.votes_a == 2
