"""Label scales of a project and the rule that turns a graded or pointwise vote into a preference.

Pure Python/NumPy, no Django. Every scale yields the pairwise choice (A, B or tie) that the
aggregation rule, the tie cap and every judge metric read; the richer answer is kept beside it.

=============  ==========================================  =================================
scale          what the annotator gives                    derived pairwise choice
=============  ==========================================  =================================
pairwise       A, B or tie                                 itself
graded         A≫B (+2), A>B (+1), tie (0), B>A (-1),      sign of the grade: > 0 A, < 0 B,
               B≫A (-2)                                    0 tie (the middle grade)
pointwise      a score 1-5 for each response               A when score A > score B, B when
                                                           lower, tie when equal
=============  ==========================================  =================================

Grades and scores are stored in canonical A/B terms: a vote given on a screen that showed the
responses in B/A order is mapped back (a grade changes sign, the two scores trade places).
"""

from __future__ import annotations

import numpy as np

PAIRWISE, GRADED, POINTWISE = "pairwise", "graded", "pointwise"
SCALES = (PAIRWISE, GRADED, POINTWISE)
LABELS = {
    PAIRWISE: "Pairwise (A / B / tie)",
    GRADED: "Graded (A≫B, A>B, tie, B>A, B≫A)",
    POINTWISE: "Pointwise (each response scored 1-5)",
}

GRADE_MIN, GRADE_MAX = -2, 2
GRADES = (2, 1, 0, -1, -2)
GRADE_LABELS = {2: "A≫B", 1: "A>B", 0: "Tie", -1: "B>A", -2: "B≫A"}
SCORE_MIN, SCORE_MAX = 1, 5
SCORES = (1, 2, 3, 4, 5)

CHOICE_A, CHOICE_B, CHOICE_TIE = "A", "B", "tie"


def choice_from_grade(grade: int) -> str:
    """The pairwise choice a grade stands for (its sign)."""
    _check_grade(grade)
    if grade > 0:
        return CHOICE_A
    if grade < 0:
        return CHOICE_B
    return CHOICE_TIE


def choice_from_scores(score_a: int, score_b: int) -> str:
    """The pairwise choice of two pointwise scores: the higher score wins, equal is a tie."""
    _check_score(score_a)
    _check_score(score_b)
    if score_a > score_b:
        return CHOICE_A
    if score_a < score_b:
        return CHOICE_B
    return CHOICE_TIE


def grade_shown_to_canonical(grade: int, *, swapped: bool) -> int:
    """A grade given on a B/A screen in canonical A/B terms (the map is its own inverse)."""
    _check_grade(grade)
    return -grade if swapped else grade


def scores_shown_to_canonical(
    score_left: int, score_right: int, *, swapped: bool
) -> tuple[int, int]:
    """(score_a, score_b) from the scores given to the left and right responses on screen."""
    _check_score(score_left)
    _check_score(score_right)
    return (score_right, score_left) if swapped else (score_left, score_right)


def choices_from_grades(grades: np.ndarray) -> np.ndarray:
    """Vectorised :func:`choice_from_grade`: codes 0 = A, 1 = B, 2 = tie."""
    g = np.asarray(grades, dtype=np.int64)
    return np.where(g > 0, 0, np.where(g < 0, 1, 2)).astype(np.int8)


def choices_from_scores(score_a: np.ndarray, score_b: np.ndarray) -> np.ndarray:
    """Vectorised :func:`choice_from_scores`: codes 0 = A, 1 = B, 2 = tie."""
    d = np.asarray(score_a, dtype=np.int64) - np.asarray(score_b, dtype=np.int64)
    return np.where(d > 0, 0, np.where(d < 0, 1, 2)).astype(np.int8)


def answer_text(grade: int | None, score_a: int | None, score_b: int | None) -> str:
    """A graded or pointwise vote's answer as read by people ("A>B", "A 4 · B 2"); "" for none."""
    if grade is not None:
        return GRADE_LABELS.get(int(grade), str(grade))
    if score_a is not None and score_b is not None:
        return f"A {score_a} · B {score_b}"
    return ""


def _check_grade(grade: int) -> None:
    if not isinstance(grade, int | np.integer) or not GRADE_MIN <= grade <= GRADE_MAX:
        raise ValueError(f"a grade is an integer from {GRADE_MIN} to {GRADE_MAX}, not {grade!r}")


def _check_score(score: int) -> None:
    if not isinstance(score, int | np.integer) or not SCORE_MIN <= score <= SCORE_MAX:
        raise ValueError(f"a score is an integer from {SCORE_MIN} to {SCORE_MAX}, not {score!r}")
