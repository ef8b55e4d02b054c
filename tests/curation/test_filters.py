"""The filters as per-pair decisions: boundaries, reasons, figures, and the funnel counts."""

from __future__ import annotations

import pytest

from annotation.curation import text_length
from curation.filters import correctness_filter, ensemble_filter, funnel, length_filter


def words(n: int) -> str:
    return " ".join(["word"] * n)


@pytest.mark.parametrize(
    ("len_a", "len_b", "kept"),
    [
        (7, 10, True),
        (14, 10, True),
        (69, 100, False),
        (141, 100, False),
        (70, 100, True),
        (140, 100, True),
        (10, 10, True),
        (1, 0, False),
        (0, 0, False),
    ],
)
def test_length_bounds_are_inclusive_in_words(len_a, len_b, kept):
    result = length_filter([words(len_a)], [words(len_b)], unit="words")
    assert result.passed.tolist() == [kept]
    assert result.figures[0]["len_a"] == len_a and result.figures[0]["len_b"] == len_b


def test_length_exact_bounds_reasons_and_figures():
    result = length_filter([words(7), words(14), words(15)], [words(10)] * 3)
    assert result.passed.tolist() == [True, True, False]
    assert result.reasons == [
        "length ratio 0.700 (7 / 10 words) within 0.7–1.4",
        "length ratio 1.400 (14 / 10 words) within 0.7–1.4",
        "length ratio 1.500 (15 / 10 words) outside 0.7–1.4",
    ]
    assert [f["ratio"] for f in result.figures] == [0.7, 1.4, 1.5]


def test_length_unit_characters_and_tokens():
    a, b = "abcdefg", "abcdefghij"  # 7 / 10 characters, 1 / 1 word
    assert length_filter([a], [b], unit="characters").passed.tolist() == [True]
    assert length_filter(["abcdef"], [b], unit="characters").passed.tolist() == [False]
    assert text_length("x = 1, y = 2.", "tokens") == 8
    assert text_length("x = 1, y = 2.", "words") == 6
    assert length_filter(
        ["a, b, c, d"], ["a b c d e f g h i j"], unit="tokens"
    ).passed.tolist() == [
        True  # 7 tokens against 10
    ]
    with pytest.raises(ValueError, match="unknown length unit 'bytes'"):
        text_length("x", "bytes")


def test_correctness_keeps_both_right_or_both_wrong():
    result = correctness_filter(
        [True, False, True, False],
        [True, False, False, True],
        answers_a=["12", "13", "12", None],
        answers_b=["12", "14", "15", "12"],
        reference=["12"] * 4,
        by=["answer extractor"] * 4,
    )
    assert result.passed.tolist() == [True, True, False, False]
    assert result.reasons[0] == (
        "both answers correct (by answer extractor: A 12, B 12, reference 12)"
    )
    assert result.reasons[2].startswith("A correct, B wrong")
    assert "A none found" in result.reasons[3]


def test_ensemble_drops_unanimous_judges_whatever_their_number():
    result = ensemble_filter([["A", "A", "A"], ["A", "B", "A"], ["model_b"] * 3, ["A", "tie"]][:3])
    assert result.passed.tolist() == [False, True, False]
    assert result.reasons == [
        "all 3 judges prefer A",
        "judges disagree: A, B, A",
        "all 3 judges prefer B",
    ]
    assert ensemble_filter([["A", "A"], ["A", "tie"]]).passed.tolist() == [False, True]
    with pytest.raises(ValueError, match="same number of judge verdicts"):
        ensemble_filter([["A", "A", "A"], ["A", "B"]])


def test_funnel_counts_per_split_and_source_with_a_total():
    groups = [("open_ended", "W")] * 3 + [("reasoning", "M")] * 4
    removed = ["", "length", "", "length", "correctness", "correctness", ""]
    rows = funnel(groups, removed, ["length", "correctness"])
    assert rows == [
        {
            "split": "open_ended",
            "source": "W",
            "in": 3,
            "removed": {"length": 1, "correctness": 0},
            "out": 2,
        },
        {
            "split": "reasoning",
            "source": "M",
            "in": 4,
            "removed": {"length": 1, "correctness": 2},
            "out": 1,
        },
        {
            "split": "all",
            "source": "all",
            "in": 7,
            "removed": {"length": 2, "correctness": 2},
            "out": 3,
        },
    ]
