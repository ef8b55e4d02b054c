"""The formula caps: a formula nested deeper or longer than the caps is code text, never typeset.

A formula KaTeX would nest about 140 deep crashed the browser tab showing it, so the renderer
counts the groups of each formula on its source and marks for typesetting only those within
``MAX_FORMULA_DEPTH`` groups and ``MAX_FORMULA_CHARS`` characters.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings

from annotation.rendering import (
    MAX_FORMULA_CHARS,
    MAX_FORMULA_DEPTH,
    formula_depth,
    render_markdown,
)

# Each way to open a group, with its closer.
GROUPS = {
    "superscript": ("x^{", "}"),
    "fraction": ("\\frac{1}{", "}"),
    "root": ("\\sqrt{", "}"),
    "root index": ("\\sqrt[{", "}]{x}"),
    "left-right": ("\\left(", "\\right)"),
    "environment": ("\\begin{matrix}", "\\end{matrix}"),
    "bgroup": ("\\bgroup x^", "\\egroup"),
    "begingroup": ("\\begingroup ", "\\endgroup"),
}


def nested(opener: str, closer: str, depth: int) -> str:
    return opener * depth + "x" + closer * depth


def inline(tex: str) -> str:
    return render_markdown(f"See ${tex}$ here.")


def typeset(tex: str) -> str:
    return f'<span class="math-inline">{tex}</span>'


def as_code(tex: str) -> str:
    return f'<code class="language-latex">{tex}</code>'


@pytest.mark.parametrize("kind", GROUPS)
def test_each_kind_of_group_counts_one_level(kind):
    opener, closer = GROUPS[kind]
    assert formula_depth(nested(opener, closer, 1)) == 1
    assert formula_depth(nested(opener, closer, 7)) == 7


@pytest.mark.parametrize("kind", ["superscript", "fraction", "root", "left-right"])
def test_a_formula_at_the_depth_cap_is_typeset_and_one_deeper_is_code(kind):
    opener, closer = GROUPS[kind]
    at_cap = nested(opener, closer, MAX_FORMULA_DEPTH)
    deeper = nested(opener, closer, MAX_FORMULA_DEPTH + 1)
    assert inline(at_cap) == f"<p>See {typeset(at_cap)} here.</p>"
    assert inline(deeper) == f"<p>See {as_code(deeper)} here.</p>"


def test_the_red_teams_formula_is_code_text():
    bomb = nested("x^{", "}", 150)
    assert len(f"${bomb}$") == 603
    assert inline(bomb) == f"<p>See {as_code(bomb)} here.</p>"


@pytest.mark.parametrize("delimiters", [("$$", "$$"), ("\\[", "\\]")])
def test_a_display_formula_past_the_cap_is_a_code_block(delimiters):
    opener, closer = delimiters
    bomb = nested("\\frac{1}{", "}", MAX_FORMULA_DEPTH + 1)
    html = render_markdown(f"Before\n\n{opener}\n{bomb}\n{closer}\n\nafter")
    assert html == f"<p>Before</p>\n<pre>{as_code(bomb)}</pre>\n<p>after</p>"
    fine = nested("\\frac{1}{", "}", 3)
    html = render_markdown(f"{opener}\n{fine}\n{closer}")
    assert html == f'<div class="math-display">{fine}</div>'


def test_inline_display_delimiters_past_the_cap_are_code_too():
    bomb = nested("\\sqrt{", "}", MAX_FORMULA_DEPTH + 1)
    assert render_markdown(f"Roots \\[{bomb}\\] inline.") == f"<p>Roots {as_code(bomb)} inline.</p>"
    assert render_markdown(f"Roots \\({bomb}\\) inline.") == f"<p>Roots {as_code(bomb)} inline.</p>"


def test_a_formula_at_the_length_cap_is_typeset_and_one_longer_is_code():
    flat = ("x+" * MAX_FORMULA_CHARS)[: MAX_FORMULA_CHARS - 1] + "y"
    assert len(flat) == MAX_FORMULA_CHARS
    assert inline(flat) == f"<p>See {typeset(flat)} here.</p>"
    longer = flat + "z"
    assert inline(longer) == f"<p>See {as_code(longer)} here.</p>"


def test_sibling_groups_do_not_add_up():
    tex = "+".join(["\\frac{a^{2}}{b_{3}}"] * 150)
    assert formula_depth(tex) == 2
    assert len(tex) <= MAX_FORMULA_CHARS
    assert inline(tex) == f"<p>See {typeset(tex)} here.</p>"


@pytest.mark.parametrize(
    "tex",
    [
        "\\{" * 100 + "x" + "\\}" * 100,  # escaped braces are characters, not groups
        "\\left\\{ x \\right\\}",
        "\\sqrt[3]{x} + [0, 1)",  # brackets never nest on their own
    ],
)
def test_braces_that_are_characters_do_not_count(tex):
    assert formula_depth(tex) <= 1
    assert inline(tex) == f"<p>See {typeset(tex)} here.</p>"


@pytest.mark.parametrize(
    "unit",
    [
        "x^{\\verb|}|",  # \verb's text is not TeX: its brace closes nothing
        "x^{\\char`}",  # \char` takes the brace as the character it names
        "x^{\\left( }",  # a closer that does not match the innermost group closes nothing
        "x^{\\begin{matrix}\\right)",
    ],
)
def test_closers_that_close_nothing_are_not_subtracted(unit):
    bomb = unit * (MAX_FORMULA_DEPTH + 1)
    assert formula_depth(bomb) > MAX_FORMULA_DEPTH
    assert as_code(bomb.replace("<", "&lt;")) in inline(bomb)


def test_a_brace_in_a_comment_closes_nothing():
    bomb = "x^{ % }\n" * (MAX_FORMULA_DEPTH + 1)
    assert formula_depth(bomb) == MAX_FORMULA_DEPTH + 1
    html = render_markdown(f"$$\n{bomb}\n$$")
    assert html.startswith('<pre><code class="language-latex">x^{ % }')


class _Elements(HTMLParser):
    """The tags of an HTML text and the text inside each ``code`` element."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.code: list[str] = []
        self._in_code = False
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        self._in_code = tag == "code"
        if self._in_code:
            self.code.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_code = self._in_code and tag != "code"

    def handle_data(self, data: str) -> None:
        if self._in_code:
            self.code[-1] += data


HOSTILE = '</code><img src=x onerror="alert(1)"><script>alert(2)</script>&amp;</pre><b>b</b>'


def test_the_code_text_is_escaped():
    bomb = nested("x^{", "}", MAX_FORMULA_DEPTH + 1).replace("x}", HOSTILE + "}", 1)
    parsed = _Elements(inline(bomb))
    assert parsed.tags == ["p", "code"]
    assert parsed.code == [bomb]


def test_a_bomb_in_a_display_block_is_escaped():
    bomb = nested("\\sqrt{", "}", 150) + HOSTILE
    parsed = _Elements(render_markdown(f"$$\n{bomb}\n$$"))
    assert parsed.tags == ["pre", "code"]
    assert parsed.code == [bomb]


def test_the_browser_applies_the_same_length_cap():
    script = (Path(settings.BASE_DIR) / "static/js/math.js").read_text()
    match = re.search(r"const MAX_CHARS = (\d+);", script)
    assert match and int(match.group(1)) == MAX_FORMULA_CHARS
