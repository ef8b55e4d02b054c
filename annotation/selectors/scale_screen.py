"""What the labeling screen shows for a graded or pointwise project: buttons, rubric, keys."""

from __future__ import annotations

from typing import Any

from .. import scales
from ..models import Criterion, LabelScale, Project, Vote

#: The graded buttons left to right, in on-screen terms (left = "A"), with their keys.
GRADE_BUTTONS = tuple(
    (grade, scales.GRADE_LABELS[grade], str(key)) for key, grade in enumerate(scales.GRADES, 1)
)
#: Pointwise keys: 1-5 score the left response, 6-0 the right one.
LEFT_KEYS = ("1", "2", "3", "4", "5")
RIGHT_KEYS = ("6", "7", "8", "9", "0")


def scale_answer_shown(vote: Vote | None, swapped: bool) -> dict[str, str]:
    """A stored vote's grade and scores in on-screen terms ("" where it has none)."""
    answer = {"grade": "", "score_left": "", "score_right": ""}
    if vote is None:
        return answer
    if vote.grade is not None:
        answer["grade"] = str(scales.grade_shown_to_canonical(vote.grade, swapped=swapped))
    if vote.score_a is not None and vote.score_b is not None:
        # The swap is its own inverse: canonical (a, b) read as shown gives (left, right).
        left, right = scales.scores_shown_to_canonical(vote.score_a, vote.score_b, swapped=swapped)
        answer["score_left"], answer["score_right"] = str(left), str(right)
    return answer


def criterion_rubric(criterion: Criterion) -> list[tuple[int, str]]:
    """The criterion's rubric as (score, text) for 1..5; a level without text gets ""."""
    rubric = criterion.rubric if isinstance(criterion.rubric, dict) else {}
    return [(score, str(rubric.get(str(score), "") or "")) for score in scales.SCORES]


def scale_screen(
    project: Project,
    criterion: Criterion,
    answer: dict[str, str],
    errors: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Context of the answer controls for ``project``'s scale (pairwise needs nothing more)."""
    errors = errors or {}
    scale = project.label_scale
    context: dict[str, Any] = {"scale": scale, "answer": answer}
    if scale == LabelScale.GRADED:
        context["grade_buttons"] = [
            {"value": str(g), "label": label, "key": key, "checked": answer["grade"] == str(g)}
            for g, label, key in GRADE_BUTTONS
        ]
    elif scale == LabelScale.POINTWISE:
        rubric = criterion_rubric(criterion)
        context["rubric"] = rubric
        context["score_rows"] = [
            {
                "name": name,
                "side": side,
                "keys": keys,
                "error": errors.get(name, ""),
                "levels": [
                    {
                        "value": str(score),
                        "text": text,
                        "key": keys[score - 1],
                        "checked": answer[name] == str(score),
                    }
                    for score, text in rubric
                ],
            }
            for name, side, keys in (
                ("score_left", "A", LEFT_KEYS),
                ("score_right", "B", RIGHT_KEYS),
            )
        ]
    return context
