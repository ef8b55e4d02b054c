"""Reading the verdict from a judge's output, and the judge prompt it answers."""

from __future__ import annotations

import hashlib
import random
import re

import pytest

from judging.parsing import parse_judge_output, tail_lines
from judging.predictions import prediction_label
from judging.prompt import (
    DEFAULT_TEMPLATE_PATH,
    PLACEHOLDERS,
    TEMPLATE_TEXT,
    PromptTemplate,
    TemplateFileError,
    build_messages,
    load_template,
    render_prompt,
    template_hash,
)

# The published evaluation's rule: strip, the last three lines (blank lines count), lowercase,
# the first match of [*]*response (\d+)[*]* is better; the number read with int() (any Unicode
# decimal digits, leading zeros allowed): 1 -> model_a, 2 -> model_b, else unparsed.
PUBLISHED_RULE_CASES = [
    ("Response 1 is better.", "model_a"),
    ("Response 2 is better.", "model_b"),
    # upper case and mixed case
    ("RESPONSE 1 IS BETTER!", "model_a"),
    ("response 2 is better", "model_b"),
    # bold markers around the label or the number
    ("**Response 2** is better.", "model_b"),
    ("**Response 1 is better.**", "model_a"),
    ("*Response 2* is better", "model_b"),
    # other Markdown does not fit the pattern
    ("__Response 1__ is better.", None),
    ("Response [1] is better.", None),
    # anywhere in the line, with a prefix or a suffix
    ("Final answer: Response 2 is better.", "model_b"),
    ("I think Response 2 is better, mostly.", "model_b"),
    ("Response 1 is better than Response 2 on grounding.", "model_a"),
    # trailing blank lines go with the strip
    ("Response 2 is better.   \n\n  ", "model_b"),
    ("Reasoning.\n\n\nResponse 1 is better.\n\n\n", "model_a"),
    # early mentions above the last three lines do not count
    ("Response 1 is better.\n" + "\n".join(f"Extra line {i}." for i in range(3)), None),
    ("Response 2 is better at grounding.\nBut:\nmore\ntext\nResponse 1 is better.", "model_a"),
    # blank lines inside count as lines: the verdict is pushed out of the last three
    ("Response 1 is better.\n\n\nThanks.", None),
    ("Response 1 is better.\n\nThanks.", "model_a"),
    # two verdicts in the last lines: the first (upper) one wins
    ("Response 1 is better.\n\nOn reflection: Response 2 is better.", "model_a"),
    ("Response 2 is better. No wait, Response 1 is better.", "model_b"),
    # the number must be 1 or 2; the first match decides even when it is another number
    ("Response 3 is better.", None),
    ("Response 12 is better.", None),
    ("Response 3 is better.\nResponse 1 is better.", None),
    ("Response 0 is better.", None),
    ("Response 21 is better.", None),
    # int() reads the number: leading zeros and every Unicode decimal digit
    ("Response 01 is better.", "model_a"),
    ("Response 002 is better.", "model_b"),
    ("Response 0001 is better.", "model_a"),
    ("response \u0662 is better", "model_b"),  # Arabic-Indic two
    ("Response \u0661 is better.", "model_a"),  # Arabic-Indic one
    ("Response \u06f1 is better.", "model_a"),  # extended Arabic-Indic one
    ("Response \u0968 is better.", "model_b"),  # Devanagari two
    ("Response \uff12 is better.", "model_b"),  # fullwidth two
    ("Response \U0001d7cf is better.", "model_a"),  # mathematical bold one
    ("Response \u0660\u0661 is better.", "model_a"),  # Arabic-Indic zero one
    ("Response \u0663 is better.", None),  # Arabic-Indic three
    ("**Response 02** is better.", "model_b"),
    # digits that are not decimal digits (superscripts, circled, Roman) do not match \d
    ("Response \u00b9 is better.", None),
    ("Response \u2460 is better.", None),
    ("Response \u2160 is better.", None),
    # a number with more digits than int() converts from text is unparsed, as there
    ("Response " + "0" * 5000 + "1 is better.", None),
    # no verdict sentence at all
    ("Response 1 is worse.", None),
    ("Both are equally good.", None),
    ("Response1 is better.", None),
    ("Response 1  is better.", None),
    ("model_a", None),
    ("A", None),
    ("", None),
    ("   \n  ", None),
    (None, None),
    (12, None),
]


@pytest.mark.parametrize(("text", "expected"), PUBLISHED_RULE_CASES)
def test_published_rule_case_table(text, expected):
    assert parse_judge_output(text) == expected


def _reference_rule(text: str) -> str | None:
    """The published rule written out independently, for the randomised comparison below."""
    lines = text.strip().split("\n")[-3:]
    found = re.findall(r"[*]*response (\d+)[*]* is better", "\n".join(lines).lower())
    if not found:
        return None
    try:
        number = int(found[0])
    except ValueError:
        return None
    return {1: "model_a", 2: "model_b"}.get(number)


def test_parser_equals_the_rule_on_random_outputs():
    rng = random.Random(7)
    pieces = [
        "Response 1 is better.",
        "response 2 is better",
        "**Response 2** is better",
        "RESPONSE 3 IS BETTER",
        "Response 01 is better.",
        "response \u0662 is better",
        "Response \u0663 is better",
        "**Response 002** is better",
        "Response 1 covers more.",
        "",
        "  ",
        "Some reasoning.",
        "Response 2 is better at grounding, but",
    ]
    for _ in range(2000):
        text = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        assert parse_judge_output(text) == _reference_rule(text), text


def test_tail_lines_are_the_lines_the_rule_reads():
    text = "a\nb\n\nc\nd\n\n"
    assert tail_lines(text, 3) == "\nc\nd"
    assert tail_lines(text, 4) == "b\n\nc\nd"
    assert tail_lines("  one  ", 4) == "one"
    assert tail_lines(None, 4) == ""
    assert tail_lines("x", 0) == ""


@pytest.mark.parametrize(
    ("value", "raw", "expected"),
    [
        ("model_a", None, "model_a"),
        ("MODEL_B", None, "model_b"),
        (" A ", None, "model_a"),
        ("b", None, "model_b"),
        ("Response 2 is better.", None, "model_b"),
        ("tie", None, None),
        ("", "Response 1 is better.", "model_a"),
        (None, "Response 2 is better.", "model_b"),
        (None, "model_a", None),
        (None, None, None),
    ],
)
def test_prediction_values_and_raw_text(value, raw, expected):
    assert prediction_label(value, raw) == expected


def test_template_hash_is_sha256_of_the_template():
    assert template_hash() == hashlib.sha256(TEMPLATE_TEXT.encode()).hexdigest()
    assert len(template_hash()) == 64


def test_prompt_orders_the_parts_and_asks_for_the_final_line():
    text = render_prompt(
        question="How many cats?",
        response_1="Two cats.",
        response_2="Three cats.",
        criterion_name="Visual Grounding & Details",
        description="Reward precise attributes.\n\nPenalize generic statements.",
    )
    # What a pair's calls share comes first, the criterion last: a server with prefix caching
    # reuses the prefill of the question and responses across the pair's criteria.
    order = [
        text.index("How many cats?"),
        text.index("[Response 1]\nTwo cats."),
        text.index("[Response 2]\nThree cats."),
        text.index("strictly and only by the criterion below"),
        text.index("justification"),
        text.index('"Response 1 is better."'),
        text.index("Visual Grounding & Details"),
        text.index("Penalize generic statements."),
    ]
    assert order == sorted(order)
    assert text.rstrip().endswith("Penalize generic statements.")
    assert "$" not in text


def test_build_messages_puts_the_image_first():
    row = {
        "question": "What is shown?",
        "pred_a": "A dog.",
        "pred_b": "A cat.",
        "criterion": "hallucination",
        "image": {"bytes": b"\x89PNG\r\n\x1a\n rest", "path": "x.png"},
    }
    messages = build_messages(row, "Is everything true?", criterion_name="Factuality")
    assert len(messages) == 1 and messages[0]["role"] == "user"
    image, text = messages[0]["content"]
    assert image["type"] == "image_url"
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    assert text["type"] == "text"
    assert "Criterion: Factuality\nIs everything true?" in text["text"]
    assert "[Response 1]\nA dog.\n[End of Response 1]" in text["text"]
    # a served URL overrides; a JSONL row without bytes uses its relative path
    messages = build_messages(row, "d", image_url="https://example.org/x.png")
    assert messages[0]["content"][0]["image_url"]["url"] == "https://example.org/x.png"
    jsonl_row = {**row, "image": None, "image_path": "images/o1.png"}
    assert build_messages(jsonl_row, "d")[0]["content"][0]["image_url"]["url"] == "images/o1.png"
    no_image = {k: v for k, v in row.items() if k != "image"}
    content = build_messages(no_image, "d")[0]["content"]
    assert [c["type"] for c in content] == ["text"]
    assert "Criterion: hallucination" in content[0]["text"]


def test_default_template_is_the_shipped_file():
    template = load_template()
    assert isinstance(template, PromptTemplate)
    assert template.name == "default.txt"
    assert template.text == DEFAULT_TEMPLATE_PATH.read_text(encoding="utf-8") == TEMPLATE_TEXT
    assert template.sha256 == hashlib.sha256(template.text.encode()).hexdigest()
    assert template.sha256 == template_hash()


def test_a_template_file_with_every_placeholder(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text(
        "[$criterion_key] $criterion_name: $criterion_description\nQ: $question\n"
        "1: ${response_1}\n2: $response_2\nCosts $$5.\n",
        encoding="utf-8",
    )
    template = load_template(path)
    assert template.name == "mine.txt"
    assert template.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    text = template.render(
        criterion_key="logic",
        criterion_name="Logic",
        criterion_description=" Sound steps. ",
        question="Find x.",
        response_1="x = 2",
        response_2="x = 3",
    )
    assert text == "[logic] Logic: Sound steps.\nQ: Find x.\n1: x = 2\n2: x = 3\nCosts $5.\n"
    row = {"question": "Find x.", "pred_a": "x = 2", "pred_b": "x = 3", "criterion": "logic"}
    messages = build_messages(row, "Sound steps.", criterion_name="Logic", template=template)
    assert messages[0]["content"][-1]["text"] == text


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("Judge $question\nby $criterion", 2, "unknown placeholder $criterion"),
        ("ok\n\n${answer} here", 3, "unknown placeholder $answer"),
        ("Pay 5$ now", 1, "$$ for a dollar"),
        ("   \n", None, "is empty"),
    ],
)
def test_a_bad_template_file_is_refused(tmp_path, text, line, needle):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TemplateFileError) as caught:
        load_template(path)
    assert needle in str(caught.value)
    assert caught.value.line == line
    if line is not None:
        assert f"line {line}" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_missing_template_file(tmp_path):
    with pytest.raises(TemplateFileError, match="no such template file"):
        load_template(tmp_path / "nope.txt")
    assert set(PLACEHOLDERS) == {
        "criterion_key",
        "criterion_name",
        "criterion_description",
        "question",
        "response_1",
        "response_2",
    }
