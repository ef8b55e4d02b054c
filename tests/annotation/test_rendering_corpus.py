"""Model output is shown as written: a corpus of real-looking responses and their exact structure.

Each case names the tags it must produce (how many ``<li>``, ``<br>``, ``<table>``...) and every
formula in order with its exact TeX, so a change in line breaks, lists, code, tables or math shows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest

from annotation.rendering import render_markdown


class Structure(HTMLParser):
    """Tag counts, formulas (kind, TeX) and code blocks of rendered HTML."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: Counter[str] = Counter()
        self.math: list[tuple[str, str]] = []
        self.code: list[str] = []
        self._math: str | None = None
        self._code: bool = False
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        classes = dict(attrs).get("class") or ""
        if classes in ("math-inline", "math-display"):
            self._math, self._text = ("display" if classes == "math-display" else "inline"), []
        if tag == "code" and self.tags["pre"] > len(self.code):
            self._code, self._text = True, []

    def handle_endtag(self, tag: str) -> None:
        if self._math and tag in ("span", "div"):
            self.math.append((self._math, "".join(self._text)))
            self._math = None
        if self._code and tag == "code":
            self.code.append("".join(self._text))
            self._code = False

    def handle_data(self, data: str) -> None:
        if self._math or self._code:
            self._text.append(data)


def structure(text: str) -> Structure:
    """Parse the rendering of text."""
    parser = Structure()
    parser.feed(render_markdown(text))
    parser.close()
    return parser


@dataclass
class Case:
    name: str
    text: str
    tags: dict[str, int]
    math: list[tuple[str, str]] = field(default_factory=list)
    code: list[str] = field(default_factory=list)


INL, DSP = "inline", "display"

CASES = [
    Case(
        "bullets right after a colon",
        "Objects in the image:\n- House: a two-storey brick house\n- Trees: 3\n- Car: red sedan",
        {"p": 1, "ul": 1, "li": 3, "br": 0},
    ),
    Case(
        "numbered steps right after a sentence",
        "To solve it:\n1. Find the radius.\n2. Square it.\n3. Multiply by $\\pi$.",
        {"p": 1, "ol": 1, "li": 3},
        [(INL, "\\pi")],
    ),
    Case(
        "single newlines are line breaks",
        "The sky is overcast.\nA man walks a dog.\nThe street is wet.",
        {"p": 1, "br": 2},
    ),
    Case(
        "paragraphs and a break",
        "First paragraph,\nsecond line.\n\nSecond paragraph.",
        {"p": 2, "br": 1},
    ),
    Case(
        "nested bullets with two-space indent",
        "Scene:\n- Foreground\n  - a bench\n  - a lamp\n- Background: hills",
        {"ul": 2, "li": 4},
    ),
    Case(
        "bold labels in a numbered list",
        "**Answer:** C\n\n**Reasoning:**\n1. **Angle** $\\angle ABC = 40^\\circ$.\n"
        "2. **Sum** of angles is $180^\\circ$.",
        {"strong": 4, "ol": 1, "li": 2},
        [(INL, "\\angle ABC = 40^\\circ"), (INL, "180^\\circ")],
    ),
    Case(
        "markdown table",
        "| Object | Count | Colour |\n|---|---:|---|\n| apples | 4 | red |\n| pears | 2 | green |",
        {"table": 1, "thead": 1, "tbody": 1, "tr": 3, "th": 3, "td": 6},
    ),
    Case(
        "table right after a sentence",
        "Summary of the chart:\n| Year | Sales |\n|---|---|\n| 2019 | $1.2M |\n| 2020 | $1.5M |",
        {"p": 1, "table": 1, "tr": 3, "td": 4},
    ),
    Case(
        "table with math cells",
        "| step | value |\n|---|---|\n| area | $\\pi r^2$ |\n| r | $\\sqrt{2}$ |",
        {"table": 1, "td": 4},
        [(INL, "\\pi r^2"), (INL, "\\sqrt{2}")],
    ),
    Case(
        "fenced python code with dollars inside",
        'Here is the code:\n```python\ndef price(x):\n    return f"${x:.2f}"\n```\nDone.',
        {"pre": 1, "code": 1, "p": 2},
        [],
        ['def price(x):\n    return f"${x:.2f}"\n'],
    ),
    Case(
        "indented code block",
        "Run this:\n\n    pip install numpy\n    python main.py\n\nThen check $x$.",
        {"pre": 1, "code": 1},
        [(INL, "x")],
        ["pip install numpy\npython main.py\n"],
    ),
    Case(
        "tilde fence",
        "~~~\n$not math$ and \\(neither\\)\n~~~",
        {"pre": 1, "code": 1},
        [],
        ["$not math$ and \\(neither\\)\n"],
    ),
    Case(
        "inline code keeps dollars",
        "Use `cost = $a + $b` then `\\(x\\)` stays code.",
        {"code": 2, "pre": 0},
    ),
    Case(
        "display math with dollars on own lines",
        "The integral is\n$$\n\\int_0^1 x^2\\,dx = \\frac{1}{3}\n$$\nso the answer is B.",
        {"p": 2},
        [(DSP, "\\int_0^1 x^2\\,dx = \\frac{1}{3}")],
    ),
    Case(
        "display math with brackets",
        "We get\n\\[\na^2 + b^2 = c^2\n\\]",
        {"p": 1},
        [(DSP, "a^2 + b^2 = c^2")],
    ),
    Case(
        "inline bracket and paren math",
        "Since \\(x_1 + x_2 = 5\\) and \\[x_1 x_2 = 6\\] the roots are 2 and 3.",
        {"p": 1},
        [(INL, "x_1 + x_2 = 5"), (DSP, "x_1 x_2 = 6")],
    ),
    Case(
        "aligned environment",
        "$$\n\\begin{aligned}\n2x + 3 &= 7 \\\\\nx &= 2\n\\end{aligned}\n$$",
        {},
        [(DSP, "\\begin{aligned}\n2x + 3 &= 7 \\\\\nx &= 2\n\\end{aligned}")],
    ),
    Case(
        "underscores and stars inside math are not emphasis",
        "The product $a_1 * b_1 * c_1$ and $x_i^*$ matter.",
        {"em": 0, "strong": 0},
        [(INL, "a_1 * b_1 * c_1"), (INL, "x_i^*")],
    ),
    Case(
        "prices stay prose",
        "The shirt costs $5 and the hat $10, so $15 in total.",
        {"p": 1},
    ),
    Case(
        "currency after numbers stays prose",
        "South leads at 48 M$, while West trails at 11 M$.",
        {"p": 1},
    ),
    Case(
        "price list",
        "Menu prices:\n- Coffee: $3.50\n- Cake: $4\n- Both: $7.50 (save $0.50)",
        {"ul": 1, "li": 3},
    ),
    Case(
        "escaped dollars",
        "It costs \\$5 to \\$10 per item.",
        {"p": 1},
    ),
    Case(
        "chemistry with math",
        "Combustion of methane:\n$\\mathrm{CH_4 + 2O_2 \\rightarrow CO_2 + 2H_2O}$\n"
        "The enthalpy is $\\Delta H = -890\\,\\mathrm{kJ/mol}$.",
        {"p": 1, "br": 2},
        [
            (INL, "\\mathrm{CH_4 + 2O_2 \\rightarrow CO_2 + 2H_2O}"),
            (INL, "\\Delta H = -890\\,\\mathrm{kJ/mol}"),
        ],
    ),
    Case(
        "chemistry with subscripts as text",
        "Water is H2O and the salt is NaCl; 2 H2 + O2 -> 2 H2O.",
        {"p": 1, "em": 0},
    ),
    Case(
        "math with angle brackets",
        "If $a<b$ and $c>d$ then \\(a - d < b - c\\).",
        {"p": 1},
        [(INL, "a<b"), (INL, "c>d"), (INL, "a - d < b - c")],
    ),
    Case(
        "heading and sections",
        "### Step 1\nCount the dots.\n### Step 2\nAdd them: $3 + 4 = 7$.",
        {"h3": 2, "p": 2},
        [(INL, "3 + 4 = 7")],
    ),
    Case(
        "blockquote of the question",
        "> How many birds are on the wire?\n\nThere are **five** birds.",
        {"blockquote": 1, "strong": 1, "p": 2},
    ),
    Case(
        "final answer boxed",
        "Therefore the answer is $\\boxed{12}$.",
        {"p": 1},
        [(INL, "\\boxed{12}")],
    ),
    Case(
        "list with continuation lines",
        "Observations:\n1. The left panel shows a cat.\n   It is sleeping.\n"
        "2. The right panel shows a dog.",
        {"ol": 1, "li": 2, "br": 1},
    ),
    Case(
        "ordered list not starting at one after a paragraph is prose",
        "The year was\n2024. The team grew.",
        {"ol": 0, "p": 1, "br": 1},
    ),
    Case(
        "ordered list starting at three after a blank line",
        "Continuing:\n\n3. third\n4. fourth",
        {"ol": 1, "li": 2},
    ),
    Case(
        "star bullets and plus bullets",
        "Pros:\n* fast\n* cheap\n\nCons:\n+ loud",
        {"ul": 2, "li": 3},
    ),
    Case(
        "horizontal rule and emphasis",
        "*Note*: the image is blurry.\n\n---\n\n_Answer_: unclear",
        {"hr": 1, "em": 2},
    ),
    Case(
        "dollar math inside a list",
        "Given:\n- $a = 3$\n- $b = 4$\n- so $c = \\sqrt{a^2+b^2} = 5$",
        {"ul": 1, "li": 3},
        [(INL, "a = 3"), (INL, "b = 4"), (INL, "c = \\sqrt{a^2+b^2} = 5")],
    ),
    Case(
        "links keep https only",
        "See [the paper](https://arxiv.org/abs/2511.21662) for details.",
        {"a": 1},
    ),
    Case(
        "html line break tags inside table cells",
        "| item | notes |\n|---|---|\n| lamp | lit<br>brass |",
        {"table": 1, "br": 1},
    ),
    Case(
        "display math inside a quote loses the quote markers",
        "> Proof:\n> $$\n> a^2 + b^2\n> = c^2\n> $$\n> done",
        {"blockquote": 1, "p": 2},
        [(DSP, "a^2 + b^2\n= c^2")],
    ),
    Case(
        "display math inside a list item",
        "1. Step one:\n   $$\n   x = 1\n   $$\n2. Step two",
        {"ol": 1, "li": 2},
        [(DSP, "x = 1")],
    ),
    Case(
        "unclosed formula stays text",
        "The interval \\(0, 1 is open and $x stays.",
        {"p": 1},
    ),
]


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_response_structure(case: Case) -> None:
    found = structure(case.text)
    for tag, count in case.tags.items():
        assert found.tags[tag] == count, (tag, render_markdown(case.text))
    assert found.math == case.math, render_markdown(case.text)
    if case.code:
        assert found.code == case.code
