"""The review queue's cells counted from label arrays equal the cells counted from the table."""

from __future__ import annotations

import numpy as np
import pytest
from django.utils import timezone

from aggregation import rules
from aggregation.models import CriterionLabel, Outcome, Provenance, SampleReview
from aggregation.review_cell_counts import KIND_BITS, PROVENANCE_BITS, Cell, cells_from_labels
from aggregation.selectors.review_cells import review_cells_count
from tests.conftest import make_sample

from .votes import criteria_of


def test_the_bits_name_the_models_choices():
    assert set(KIND_BITS) == set(Outcome.kept())
    assert tuple(PROVENANCE_BITS) == tuple(Provenance.values)


def test_cells_of_hand_made_labels():
    # Sample 1: two kept labels (unanimous human, majority-tie panel + human), one dropped.
    # Sample 2: only dropped labels (not in the queue). Sample 3: one kept unanimous, reviewed.
    ku, kt, split = rules.KEPT_UNANIMOUS, rules.KEPT_MAJORITY_TIE, rules.DROPPED_SPLIT
    cells = cells_from_labels(
        sample=np.array([1, 1, 1, 2, 2, 3]),
        criterion=np.array([10, 11, 12, 10, 11, 10]),
        outcome=np.array([ku, kt, split, split, split, ku]),
        provenance=np.array([0, 2, 0, 0, 0, 0]),
        reviewed_samples=np.array([3, 99]),
    )
    assert sorted(cells, key=str) == sorted(
        [
            Cell(None, 3, 1 | 4, True, False, 1),
            Cell(None, 1, 1, False, True, 1),
            Cell(10, 1, 1, True, False, 1),
            Cell(10, 1, 1, False, True, 1),
            Cell(11, 2, 4, True, False, 1),
        ],
        key=str,
    )


def test_no_labels_no_cells():
    empty = np.zeros(0, np.int64)
    assert cells_from_labels(empty, empty, empty, None, empty) == []


@pytest.mark.django_db
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_labels_counted_both_ways(project, lead, seed):
    """Random outcomes, provenances and marks over 60 samples: the same cells both ways."""
    rng = np.random.default_rng(seed)
    criteria = criteria_of(project)
    samples = [make_sample(project, f"s{i}") for i in range(60)]
    now = timezone.now()
    rows, arrays = [], {"sample": [], "criterion": [], "outcome": [], "provenance": []}
    for sample in samples:
        for criterion in criteria:
            if rng.random() < 0.2:
                continue  # not every criterion labelled
            outcome = int(rng.integers(len(rules.OUTCOMES)))
            provenance = int(rng.integers(len(rules.PROVENANCES)))
            rows.append(
                CriterionLabel(
                    sample=sample,
                    criterion=criterion,
                    outcome=rules.OUTCOMES[outcome],
                    preference="A" if outcome in rules.KEPT else "",
                    provenance=rules.PROVENANCES[provenance],
                    computed_at=now,
                )
            )
            for key, value in zip(
                arrays, (sample.pk, criterion.pk, outcome, provenance), strict=True
            ):
                arrays[key].append(value)
    CriterionLabel.objects.bulk_create(rows)
    reviewed = [s for s in samples if rng.random() < 0.3]
    for sample in reviewed:
        SampleReview.objects.create(sample=sample, reviewed_by=lead, reviewed_at=now)
    from_table = review_cells_count(project_id=project.pk, split="open_ended")
    from_arrays = cells_from_labels(
        *(np.array(arrays[key]) for key in arrays), np.array([s.pk for s in reviewed])
    )
    assert len(from_table) > 10
    assert sorted(from_arrays, key=str) == sorted(from_table, key=str)
    # Without provenances every kept label is human.
    CriterionLabel.objects.update(provenance=Provenance.HUMAN)
    from_table = review_cells_count(project_id=project.pk, split="open_ended")
    arrays.pop("provenance")
    from_arrays = cells_from_labels(
        np.array(arrays["sample"]),
        np.array(arrays["criterion"]),
        np.array(arrays["outcome"]),
        None,
        np.array([s.pk for s in reviewed]),
    )
    assert sorted(from_arrays, key=str) == sorted(from_table, key=str)
