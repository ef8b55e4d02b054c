"""Pure rules: label scales (annotation/scales.py) and the audit draw (annotation/audit.py)."""

import numpy as np
import pytest

from annotation import audit, scales


@pytest.mark.parametrize(
    ("grade", "choice"), [(2, "A"), (1, "A"), (0, "tie"), (-1, "B"), (-2, "B")]
)
def test_a_grade_stands_for_its_sign(grade, choice):
    assert scales.choice_from_grade(grade) == choice


@pytest.mark.parametrize(
    ("a", "b", "choice"), [(5, 1, "A"), (3, 2, "A"), (3, 3, "tie"), (1, 1, "tie"), (2, 4, "B")]
)
def test_the_higher_score_wins_and_equal_scores_tie(a, b, choice):
    assert scales.choice_from_scores(a, b) == choice


def test_vectorised_rules_equal_the_scalar_rules():
    grades = np.array([2, 1, 0, -1, -2])
    codes = {"A": 0, "B": 1, "tie": 2}
    assert scales.choices_from_grades(grades).tolist() == [
        codes[scales.choice_from_grade(int(g))] for g in grades
    ]
    pairs = [(a, b) for a in scales.SCORES for b in scales.SCORES]
    sa, sb = np.array(pairs).T
    assert scales.choices_from_scores(sa, sb).tolist() == [
        codes[scales.choice_from_scores(a, b)] for a, b in pairs
    ]


def test_a_swapped_screen_is_mapped_back():
    assert scales.grade_shown_to_canonical(2, swapped=True) == -2
    assert scales.grade_shown_to_canonical(-1, swapped=False) == -1
    assert scales.scores_shown_to_canonical(5, 2, swapped=True) == (2, 5)
    assert scales.scores_shown_to_canonical(5, 2, swapped=False) == (5, 2)
    for g in scales.GRADES:  # the map is its own inverse
        back = scales.grade_shown_to_canonical(
            scales.grade_shown_to_canonical(g, swapped=True), swapped=True
        )
        assert back == g


@pytest.mark.parametrize("bad", [3, -3, 1.5, "1", None])
def test_a_grade_outside_the_scale_is_refused(bad):
    with pytest.raises(ValueError, match="grade"):
        scales.choice_from_grade(bad)


@pytest.mark.parametrize("bad", [0, 6, 2.0, None])
def test_a_score_outside_the_scale_is_refused(bad):
    with pytest.raises(ValueError, match="score"):
        scales.choice_from_scores(bad, 3)


def test_the_audit_draw_is_reproducible_and_near_its_share():
    ids = [f"s{i}" for i in range(20000)]
    first = audit.audit_mask(7, ids, 0.2)
    again = audit.audit_mask(7, list(reversed(ids)), 0.2)[::-1]
    assert first.tolist() == again.tolist()  # order does not matter
    assert abs(first.mean() - 0.2) < 0.01
    assert [audit.in_audit(7, e, 0.2) for e in ids[:50]] == first[:50].tolist()
    other_seed = audit.audit_mask(8, ids, 0.2)
    assert (first != other_seed).any()


def test_raising_the_share_only_adds_samples():
    ids = [f"q-{i}" for i in range(5000)]
    low = audit.audit_mask(1, ids, 0.1)
    high = audit.audit_mask(1, ids, 0.3)
    assert not (low & ~high).any()
    assert audit.audit_mask(1, ids, 0.0).sum() == 0
    assert audit.audit_mask(1, ids, 1.0).all()


def test_an_audit_share_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match="between 0 and 1"):
        audit.in_audit(1, "x", 1.5)
