"""The answer extractor of the correctness filter, on a table of responses and references."""

from __future__ import annotations

import pytest

from curation.answers import answer_check, answers_match, extract_answer, number_value

# (response text, reference answer, correct?)
CASES = [
    # choice letters
    ("The answer is B.", "B", True),
    ("Answer: (C)", "C", True),
    ("After checking each option, the answer is (a).", "A", True),
    ("**Answer:** D", "D", True),
    ("Option B is right.\nAnswer: Option B", "B", True),
    ("The answer is B.", "C", False),
    ("\\boxed{E}", "E", True),
    ("\\boxed{(B)}", "(B)", True),
    ("Answer: A", "B.", False),
    # integers
    ("So x = 12.", "12", True),
    ("The answer is 12", "12", True),
    ("The answer is 13", "12", False),
    ("Final answer: -4", "-4", True),
    ("Final answer: 4", "-4", False),
    ("The total is \\boxed{1,234} apples.", "1234", True),
    ("Answer: 1 234", "1234", True),  # SI digit grouping
    # decimals with tolerance
    ("The answer is 3.14159", "3.1416", True),
    ("The answer is 3.2", "3.14", False),
    ("Answer: 0.50", "0.5", True),
    ("Answer: 2.0001", "2", True),
    ("Answer: 2.01", "2", False),
    # fractions
    ("\\boxed{\\frac{3}{4}}", "0.75", True),
    ("Answer: 3/4", "\\frac{3}{4}", True),
    ("The answer is 0.33", "1/3", True),
    ("The answer is 0.3", "1/3", False),
    ("\\boxed{\\dfrac{1}{2}}", "1/2", True),
    ("\\boxed{\\frac{2}{3}}", "0.667", True),
    # percentages
    ("It is 50%", "0.5", True),
    ("The answer is 50", "50%", True),
    ("The answer is 40%", "50%", False),
    # simple expressions
    ("Final answer: 2\\sqrt{3}", "3.4641", True),
    ("\\boxed{\\sqrt{2}}", "1.41421", True),
    ("\\boxed{\\pi/2}", "1.5708", True),
    ("\\boxed{2^{10}}", "1024", True),
    ("The answer is 3 \\times 4", "12", True),
    ("\\boxed{\\frac{\\sqrt{3}}{2}}", "0.866", True),
    # units
    ("Answer: 12 cm", "12", True),
    ("The angle is \\boxed{45^\\circ}", "45", True),
    ("Answer: 45°", "45 degrees", True),
    ("The area is \\boxed{36 \\text{ cm}^2}", "36", True),
    ("Answer: 12 m", "15 m", False),
    # boxed wins over later text; nested braces
    ("\\boxed{7}\nSome check afterwards mentions 9.", "7", True),
    ("First \\boxed{3}, corrected: \\boxed{5}", "5", True),
    # words
    ("The answer is Paris.", "paris", True),
    ("Answer: yes", "Yes", True),
    ("Answer: no", "yes", False),
    # nothing stated
    ("", "12", False),
    ("I cannot tell from the image.", "12", False),
]


@pytest.mark.parametrize(("text", "reference", "correct"), CASES)
def test_answer_check(text, reference, correct):
    assert answer_check(text, reference).correct is correct


def test_the_table_has_at_least_forty_cases():
    assert len(CASES) >= 40


def test_extract_answer_reads_boxed_then_answer_line_then_last_line():
    assert extract_answer("work\n\\boxed{\\frac{1}{2}}\nend") == "\\frac{1}{2}"
    assert extract_answer("To answer this we add.\nThe answer is 7.") == "7"
    assert extract_answer("We add.\nx = 7.") == "x = 7"
    assert extract_answer("   ") is None


def test_number_value_refuses_what_is_not_a_number():
    assert number_value("import os") is None
    assert number_value("2^{999999}") is None
    assert number_value("1/0") is None
    assert number_value("\\frac{6}{4}") == pytest.approx(1.5)


def test_answers_match_choice_needs_the_same_letter():
    assert answers_match("(b)", "B")
    assert not answers_match("AB", "A")
