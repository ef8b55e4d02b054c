"""The latest review decision counts, per label and per sample; nothing is deleted."""

import pytest

from aggregation.models import Outcome, ReviewDecision
from aggregation.selectors.review import exportable_labels
from annotation.models import Criterion
from tests.aggregation.labels import label
from tests.conftest import make_sample


@pytest.fixture
def setup(project, lead):
    crits = list(Criterion.objects.filter(project=project, split="open_ended").order_by("order"))
    s1, s2 = make_sample(project, "s1"), make_sample(project, "s2")
    seed = make_sample(project, "seed", is_seed=True)
    for s in (s1, s2, seed):
        label(s, crits[0])
        label(s, crits[1], preference="B")
    label(s1, crits[2], outcome=Outcome.DROPPED_SPLIT)
    return crits, s1, s2, seed


def keys(qs):
    return [(lab.sample.external_id, lab.criterion.key) for lab in qs]


def test_only_kept_non_seed_labels_in_criterion_order(project, setup):
    crits, *_ = setup
    assert keys(exportable_labels(project=project)) == [
        ("s1", crits[0].key),
        ("s1", crits[1].key),
        ("s2", crits[0].key),
        ("s2", crits[1].key),
    ]
    assert len(exportable_labels(project=project, include_seeds=True)) == 6


def test_latest_decision_counts_for_labels_and_samples(project, lead, setup):
    crits, s1, s2, _ = setup
    ReviewDecision.objects.create(
        sample=s1, criterion=crits[0], action="discard", reason="inconsistent", author=lead
    )
    ReviewDecision.objects.create(
        sample=s2, criterion=None, action="discard", reason="redundant", author=lead
    )
    assert keys(exportable_labels(project=project)) == [("s1", crits[1].key)]
    # Restoring is a newer "keep" decision; the discard stays in the history.
    ReviewDecision.objects.create(sample=s2, criterion=None, action="keep", author=lead)
    assert ("s2", crits[0].key) in keys(exportable_labels(project=project))
    assert ReviewDecision.objects.filter(sample=s2).count() == 2
