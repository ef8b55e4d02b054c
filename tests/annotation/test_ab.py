"""The A/B swap between the side shown and the stored choice, in its one home."""

from __future__ import annotations

import pytest

from annotation import ab


@pytest.mark.parametrize("swapped", [False, True])
@pytest.mark.parametrize("shown", ab.SHOWN_CHOICES)
def test_shown_and_stored_are_inverse(shown, swapped):
    """Storing what was clicked and showing it again gives the same side."""
    stored = ab.shown_to_canonical(shown, swapped)
    assert ab.canonical_to_shown(stored, swapped) == shown


def test_swap_exchanges_a_and_b_only():
    """A swapped slot stores a click on the left "A" as B; a tie stays a tie."""
    assert ab.SHOWN_CHOICES == ("A", "B", "tie")
    assert [ab.shown_to_canonical(c, True) for c in ab.SHOWN_CHOICES] == ["B", "A", "tie"]
    assert [ab.shown_to_canonical(c, False) for c in ab.SHOWN_CHOICES] == ["A", "B", "tie"]
    assert ab.shown_texts("a", "b", True) == ("b", "a")
    assert ab.shown_texts("a", "b", False) == ("a", "b")
