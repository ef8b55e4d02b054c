"""Early stopping cannot change a label: every vote order, k = 3 and 5; routing's rule."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from aggregation import rules
from annotation import routing

CODE = {"A": 0, "B": 1, "tie": 2}


def counts(choices):
    return (
        np.array([choices.count("A")]),
        np.array([choices.count("B")]),
        np.array([choices.count("tie")]),
    )


def replay(choices, order, k, *, stop=True, panel=routing.PANEL_NONE):
    """Annotators come in ``order``; each votes ``choices[i]`` only when still asked."""
    cast = []
    for i in order:
        a, b, t = counts(cast)
        asked = routing.asks_vote(a, b, t, k, stop=np.array([stop]), panel=np.array([panel]))
        if bool(asked[0]):
            cast.append(choices[i])
    return cast


def label(cast, k, *, stop=True, panel=routing.PANEL_NONE):
    a, b, t = counts(cast)
    outcome, pref, prov = rules.classify_assisted(
        a, b, t, k=k, early_stop=np.array([stop]), panel=np.array([panel])
    )
    return rules.OUTCOMES[outcome[0]], rules.PREFERENCES[pref[0]], rules.PROVENANCES[prov[0]]


@pytest.mark.parametrize("k", [3, 5])
def test_every_vote_order_gives_the_full_protocols_label(k):
    saved = 0
    runs = 0
    for choices in itertools.product(["A", "B", "tie"], repeat=k):
        full_outcome, full_pref = rules.classify(*counts(list(choices)), k=k)
        full = rules.OUTCOMES[full_outcome[0]]
        for order in itertools.permutations(range(k)):
            runs += 1
            cast = replay(choices, order, k)
            outcome, pref, prov = label(cast, k)
            assert pref == rules.PREFERENCES[full_pref[0]], (choices, order)
            assert (outcome in rules.OUTCOMES[:2]) == (full in rules.OUTCOMES[:2])
            assert outcome != "dropped_missing"
            if k == 3:
                assert outcome == full, (choices, order, cast)
            if len(cast) < k:
                saved += k - len(cast)
                assert prov == "early_stopped"
                assert outcome in ("dropped_split", "dropped_ties")
            else:
                assert prov == "human"
                assert outcome == full
    assert runs == 3**k * (6 if k == 3 else 120)
    # k = 3: the third vote is saved exactly when the first two are A+B or tie+tie.
    if k == 3:
        assert saved == sum(
            1
            for choices in itertools.product("ABt", repeat=3)
            for order in itertools.permutations(range(3))
            if {choices[order[0]], choices[order[1]]} in ({"A", "B"}, {"t"})
        )


def test_early_stopping_off_or_audit_asks_every_vote():
    for choices in itertools.product(["A", "B", "tie"], repeat=3):
        cast = replay(choices, (0, 1, 2), 3, stop=False)
        assert cast == list(choices)
        assert label(cast, 3, stop=False)[2] == "human"


def test_can_still_be_kept_matches_classify_at_k_and_the_table():
    for k in (1, 2, 3, 4, 5, 7):
        for a, b, t in itertools.product(range(k + 1), repeat=3):
            n = a + b + t
            if n > k:
                continue
            got = bool(rules.can_still_be_kept(np.array([a]), np.array([b]), np.array([t]), k)[0])
            # Brute force: some completion to k votes is kept.
            best = any(
                rules.classify(
                    np.array([a + x]), np.array([b + y]), np.array([t + (k - n - x - y)]), k=k
                )[0][0]
                in rules.KEPT
                for x in range(k - n + 1)
                for y in range(k - n - x + 1)
            )
            assert got == best, (k, a, b, t)
    a, b, t = np.array([1, 0, 0, 1]), np.array([1, 0, 0, 0]), np.array([0, 2, 1, 1])
    assert rules.can_still_be_kept(a, b, t, 3).tolist() == [False, False, True, True]


@pytest.mark.parametrize("panel,side", [(routing.PANEL_A, "A"), (routing.PANEL_B, "B")])
def test_routing_one_agreeing_verifier_keeps_the_panels_label(panel, side):
    other = "B" if side == "A" else "A"
    # The verifier agrees: nobody else is asked, kept unanimous as panel + human.
    cast = replay([side, other, other], (0, 1, 2), 3, stop=False, panel=panel)
    assert cast == [side]
    assert label(cast, 3, stop=False, panel=panel) == ("kept_unanimous", side, "panel_human")
    # The verifier disagrees (other side or tie): the full 3 votes, normal rule.
    for first in (other, "tie"):
        cast = replay([first, other, other], (0, 1, 2), 3, stop=False, panel=panel)
        assert cast == [first, other, other]
        outcome, pref, prov = label(cast, 3, stop=False, panel=panel)
        assert prov == "panel_overruled"
        full = rules.aggregate_votes(cast, k=3)
        assert (outcome, pref) == (full.outcome, full.preference)
    # Overruled and then split: early stopping still saves the third vote.
    cast = replay([other, side, side], (0, 1, 2), 3, stop=True, panel=panel)
    assert cast == [other, side]
    assert label(cast, 3, stop=True, panel=panel) == ("dropped_split", "", "panel_overruled")
    # Not yet voted: one human is asked.
    assert routing.asks_vote(*counts([]), 3, stop=np.array([True]), panel=np.array([panel]))[0]
