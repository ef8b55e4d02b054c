"""The A/B order on screen: the three choices shown and the swap between shown and stored A/B.

A slot (or, for seeds, a stable hash) may show ``response_b`` on the left as "A". The annotator
clicks a side ("A" = left, "B" = right, or "tie"); votes are stored in canonical A/B terms.
Swapping is its own inverse, so one mapping serves both directions.
"""

from __future__ import annotations

from .models.choices import Choice

#: A stored choice as the published files spell it (``model_a``/``model_b``; a tie stays ``tie``).
CHOICE_NAMES = {Choice.A.value: "model_a", Choice.B.value: "model_b", Choice.TIE.value: "tie"}

SHOWN_CHOICES: tuple[str, ...] = (Choice.A, Choice.B, Choice.TIE)


def swap_side(choice: str, swapped: bool) -> str:
    """Exchange A and B when ``swapped``; a tie (or anything else) is left as it is."""
    if swapped and choice in (Choice.A, Choice.B):
        return Choice.B if choice == Choice.A else Choice.A
    return choice


def shown_to_canonical(shown: str, swapped: bool) -> str:
    """Map the side the annotator clicked ("A" = left) to canonical A/B."""
    return swap_side(shown, swapped)


def canonical_to_shown(choice: str, swapped: bool) -> str:
    """Map a stored canonical choice to the side the annotator saw it on."""
    return swap_side(choice, swapped)


def shown_texts(response_a: str, response_b: str, swapped: bool) -> tuple[str, str]:
    """The (left, right) texts of a pair as shown on screen."""
    return (response_b, response_a) if swapped else (response_a, response_b)
