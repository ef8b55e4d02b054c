"""Reading the verdict from a judge's output, and the judge prompt it answers."""

from __future__ import annotations

import hashlib

import pytest

from judging.parsing import parse_judge_output
from judging.prompt import TEMPLATE_TEXT, build_messages, render_prompt, template_hash


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Response 1 is better.", "model_a"),
        ("Response 2 is better.", "model_b"),
        ("response 2 is better", "model_b"),
        ("RESPONSE 1 IS BETTER!", "model_a"),
        ("**Response 2** is better.", "model_b"),
        ("**Response 1 is better.**", "model_a"),
        ("*Response 2* is better", "model_b"),
        ("__Response 1__ is better.", "model_a"),
        ("`Response 2 is better.`", "model_b"),
        ("Response 2 is better.   \n\n  ", "model_b"),
        ('"Response 1 is better."', "model_a"),
        ("> Response 2 is better.", "model_b"),
        ("### Response 1 is better", "model_a"),
        ("Final answer: Response 2 is better.", "model_b"),
        ("**Verdict:** Response [1] is better.", "model_a"),
        ("Therefore, Response 2 is better.", "model_b"),
        (
            "Response 1 covers every object in the image.\nResponse 2 skips the sign.\n\n"
            "Response 1 is better.",
            "model_a",
        ),
        # the verdict may be followed by a short sign-off
        ("Reasoning.\nResponse 2 is better.\nHope this helps!", "model_b"),
        # the bottom-most verdict wins over an earlier one
        ("Response 1 is better.\n\nOn reflection:\nResponse 2 is better.", "model_b"),
        # explicit prediction values
        ("model_a", "model_a"),
        ("model_b", "model_b"),
        ("MODEL_B", "model_b"),
        ("A", "model_a"),
        ("b", "model_b"),
        (" **B** ", "model_b"),
    ],
)
def test_parses_verdicts(text, expected):
    assert parse_judge_output(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "   \n  ",
        "tie",
        "Both are equally good.",
        "Response 3 is better.",
        "Response 1 is better than Response 2 on grounding, but worse on clarity.",
        "Response 1 is worse.",
        "Response 1 and Response 2 are equally good.",
        "I think Response 2 is better, mostly.",
        "C",
        # a verdict buried far above the end is not the final line
        "Response 1 is better.\n" + "\n".join(f"Extra line {i}." for i in range(5)),
        12,
    ],
)
def test_anything_else_is_invalid(text):
    assert parse_judge_output(text) is None


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
    order = [
        text.index("strictly and only by the following criterion"),
        text.index("Visual Grounding & Details"),
        text.index("Penalize generic statements."),
        text.index("How many cats?"),
        text.index("[Response 1]\nTwo cats."),
        text.index("[Response 2]\nThree cats."),
        text.index("justification"),
        text.index('"Response 1 is better."'),
    ]
    assert order == sorted(order)
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
