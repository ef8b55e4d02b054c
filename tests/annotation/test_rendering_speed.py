"""Rendering time grows linearly with the text, however hostile the text is.

A response of 80,000 unclosed ``\\[`` once kept the review page busy for two minutes: the math
pre-pass searched for a closer from every opener. Each hostile text here is rendered beside a
normal model response of the same length and must not take more than 50 times as long (the
parser's link and image openers cost about ten times a normal response per character; a
quadratic scan costs thousands of times as much at these sizes), and a quarter of it must take
at least an eighth of the time (linear: a quarter; quadratic: a sixteenth). CPU time of this
process is measured, so other work on the machine counts less.
"""

from __future__ import annotations

import time

import pytest

from annotation.rendering import render_markdown_uncached as render

NORMAL = (
    "The image shows a **street market** at dusk.\n"
    "Objects in the image:\n- House: two storeys, red brick\n- Trees: 3\n\n"
    "| item | count |\n|---|---|\n| lamps | 3 |\n\n"
    "The area is $\\pi r^2$ and it costs $5 and $10.\n"
    "```python\nprint('x')\n```\n\n"
)

HOSTILE = {
    "unclosed display brackets": "\\[" * 80_000,
    "dollars": "$" * 100_000,
    "unclosed inline parens": "\\(" * 80_000,
    "backticks": "`" * 100_000,
    "open brackets": "[" * 50_000,
    "image openers": "![" * 50_000,
    "link openers": "[a](" * 25_000,
    "display dollar lines": "$$\n" * 33_000,
    "dollar words": "$a " * 33_000,
    "fence openers": "```\n" * 25_000,
    "emphasis mix": "*a_" * 33_000,
    "angle brackets": "<a " * 33_000,
    "entities": "&#" * 50_000,
    "table rows": "|a|\n|-|\n" * 12_500,
    "nested quotes and lists": "> - " * 25_000,
    "line breaks": "a\n" * 50_000,
    "closed math pairs": "$x$ " * 25_000,
}


def cpu_seconds(text: str) -> float:
    """CPU time of one rendering of text."""
    start = time.process_time()
    render(text)
    return time.process_time() - start


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_text_renders_in_linear_time(name: str) -> None:
    text = HOSTILE[name]
    floor_text = (NORMAL * (len(text) // len(NORMAL) + 1))[: len(text)]
    floor = min(cpu_seconds(floor_text) for _ in range(2))
    # The best of three: a busy machine (GC, another process's cache use) only adds time.
    full = min(cpu_seconds(text) for _ in range(3))
    assert full < 50 * floor, name
    # Full and quarter measured again, up to three rounds, when another process's burst
    # landed on one of them: a quadratic rendering fails every round.
    for _ in range(3):
        quarter = min(cpu_seconds(text[: len(text) // 4]) for _ in range(3))
        if full < 8 * quarter + 0.1:
            break
        full = min(full, min(cpu_seconds(text) for _ in range(3)))
    assert full < 8 * quarter + 0.1, name  # 0.1 s of slack for timer noise on tiny inputs


def test_hostile_text_still_renders_as_text() -> None:
    html = render("\\[" * 1000)
    assert html == "<p>" + "[" * 1000 + "</p>"
    assert render("$" * 11) == "<p>" + "$" * 11 + "</p>"
