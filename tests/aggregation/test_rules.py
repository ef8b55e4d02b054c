"""The aggregation rule of protocol section 5, exhaustively for k = 3, and its generalisation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from aggregation import rules
from aggregation.models import Outcome

CHOICES = ("A", "B", "tie")


def protocol_table(votes: tuple[str, ...]) -> tuple[str, str]:
    """Protocol section 5 read literally, for 3 annotators."""
    if len(votes) < 3:
        return "dropped_missing", ""
    counts = {c: votes.count(c) for c in CHOICES}
    if counts["A"] == 3:
        return "kept_unanimous", "A"
    if counts["B"] == 3:
        return "kept_unanimous", "B"
    if counts["A"] == 2 and counts["tie"] == 1:
        return "kept_majority_tie", "A"
    if counts["B"] == 2 and counts["tie"] == 1:
        return "kept_majority_tie", "B"
    if counts["A"] and counts["B"]:
        return "dropped_split", ""
    return "dropped_ties", ""


# Every ordered vote sequence of 0..3 votes (a missing vote is a shorter sequence).
ALL_SEQUENCES = [seq for n in range(4) for seq in itertools.product(CHOICES, repeat=n)]


def test_outcome_strings_match_the_model_enum():
    assert tuple(o.value for o in Outcome) == rules.OUTCOMES
    assert {rules.OUTCOMES[i] for i in rules.KEPT} == set(Outcome.kept())


@pytest.mark.parametrize("votes", ALL_SEQUENCES, ids=lambda v: "-".join(v) or "none")
def test_every_vote_combination_for_three_annotators(votes):
    result = rules.aggregate_votes(votes, k=3)
    assert (result.outcome, result.preference) == protocol_table(votes)
    assert (result.votes_a, result.votes_b, result.votes_tie) == (
        votes.count("A"),
        votes.count("B"),
        votes.count("tie"),
    )
    assert result.is_kept == result.outcome.startswith("kept")


def test_vectorised_equals_scalar_on_every_combination():
    counts = np.array([[s.count(c) for c in CHOICES] for s in ALL_SEQUENCES])
    outcome, preference = rules.classify(counts[:, 0], counts[:, 1], counts[:, 2], k=3)
    for seq, o, p in zip(ALL_SEQUENCES, outcome, preference, strict=True):
        assert (rules.OUTCOMES[o], rules.PREFERENCES[p]) == protocol_table(seq)


def test_the_named_cases():
    assert rules.aggregate_votes(["A", "A", "A"]).outcome == "kept_unanimous"
    assert rules.aggregate_votes(["B", "tie", "B"]) == rules.Result(
        "kept_majority_tie", "B", 0, 2, 1
    )
    assert rules.aggregate_votes(["A", "B", "A"]).outcome == "dropped_split"
    assert rules.aggregate_votes(["A", "B", "tie"]).outcome == "dropped_split"
    assert rules.aggregate_votes(["tie", "tie", "A"]).outcome == "dropped_ties"
    assert rules.aggregate_votes(["tie", "tie", "tie"]).outcome == "dropped_ties"
    # Missing votes come first: two agreeing votes are not enough.
    assert rules.aggregate_votes(["A", "A"]).outcome == "dropped_missing"
    assert rules.aggregate_votes(["A", "B"]).outcome == "dropped_missing"
    assert rules.aggregate_votes([]).outcome == "dropped_missing"


def test_unknown_choice_is_refused():
    with pytest.raises(ValueError, match="unknown vote choice"):
        rules.aggregate_votes(["A", "C", "A"])
    with pytest.raises(ValueError):
        rules.classify(np.array([1]), np.array([0]), np.array([0]), k=0)


@pytest.mark.parametrize(
    ("votes", "k", "expected"),
    [
        (["A"], 1, ("kept_unanimous", "A")),
        (["tie"], 1, ("dropped_ties", "")),
        (["A", "tie"], 2, ("dropped_ties", "")),  # one of two is no strict majority
        (["B", "B"], 2, ("kept_unanimous", "B")),
        (["A", "A", "A", "tie", "tie"], 5, ("kept_majority_tie", "A")),
        (["A", "A", "tie", "tie", "tie"], 5, ("dropped_ties", "")),
        (["A", "A", "A", "A", "B"], 5, ("dropped_split", "")),
        (["A", "A", "A", "A"], 5, ("dropped_missing", "")),
        # More votes than k: all of them count.
        (["A", "A", "A", "tie"], 3, ("kept_majority_tie", "A")),
        (["A", "A", "A", "B"], 3, ("dropped_split", "")),
    ],
)
def test_generalisation_to_other_k(votes, k, expected):
    result = rules.aggregate_votes(votes, k=k)
    assert (result.outcome, result.preference) == expected


def test_a_sample_is_kept_when_one_criterion_is_kept():
    sample = np.array([0, 0, 0, 1, 1, 2])
    outcome = np.array(
        [
            rules.DROPPED_SPLIT,
            rules.KEPT_MAJORITY_TIE,
            rules.DROPPED_MISSING,
            rules.DROPPED_TIES,
            rules.DROPPED_SPLIT,
            rules.KEPT_UNANIMOUS,
        ]
    )
    assert rules.samples_kept(sample, outcome, 4).tolist() == [True, False, True, False]
    kept = rules.aggregate_votes(["A", "A", "tie"])
    dropped = rules.aggregate_votes(["A", "B", "tie"])
    assert rules.sample_is_kept([dropped, kept])
    assert not rules.sample_is_kept([dropped, dropped])
    assert not rules.sample_is_kept([])
