"""Markdown rendering of untrusted responses: sanitised, with math and code intact."""

from __future__ import annotations

import pytest

from annotation.rendering import render_markdown


def test_script_tags_are_removed_with_their_content():
    html = render_markdown("Hello <script>alert('x')</script> world")
    assert "<script" not in html
    assert "alert" not in html
    assert "Hello" in html and "world" in html


@pytest.mark.parametrize(
    "source",
    [
        '<img src="x" onerror="alert(1)">',
        '<a href="https://example.org" onclick="steal()">link</a>',
        '<div onmouseover="steal()">hover</div>',
        '<p style="x" onload="steal()">p</p>',
    ],
)
def test_event_handler_attributes_are_stripped(source):
    html = render_markdown(source)
    assert "onerror" not in html
    assert "onclick" not in html
    assert "onmouseover" not in html
    assert "onload" not in html
    assert "steal" not in html


def test_javascript_urls_are_stripped_from_markdown_and_html_links():
    html = render_markdown("[click](javascript:alert(1)) and <a href='javascript:alert(2)'>x</a>")
    # The refused link stays as the prose the model wrote; no address reaches an attribute.
    assert "href" not in html
    assert "click" in html


def test_https_links_survive_with_a_safe_rel():
    html = render_markdown("[docs](https://example.org/page)")
    assert 'href="https://example.org/page"' in html
    assert "noopener" in html


def test_images_inside_responses_are_not_loaded():
    html = render_markdown("![tracker](https://example.org/pixel.png)")
    assert "<img" not in html


def test_iframes_and_styles_are_removed():
    html = render_markdown("<iframe src='https://evil'></iframe><style>body{}</style>text")
    assert "<iframe" not in html and "<style" not in html
    assert "text" in html


def test_inline_dollar_math_is_kept_and_marked_for_katex():
    html = render_markdown("The area is $a_1 * b_2$ units.")
    # Markdown would turn the underscores and star into emphasis; they must stay as written,
    # as the text of the element the page's KaTeX typesets.
    assert '<span class="math-inline">a_1 * b_2</span>' in html
    assert "<em>" not in html


def test_dollars_that_are_not_math_stay_prose():
    html = render_markdown("Revenue 48 M$ against 11 M$; it costs $5 and $10.")
    assert html == "<p>Revenue 48 M$ against 11 M$; it costs $5 and $10.</p>"
    text = "South leads at 48 M$, while West trails at 11 M$, a gap of 37 M$."
    assert render_markdown(text) == f"<p>{text}</p>"
    assert render_markdown("Let $x$-axis and ($y$).") == (
        '<p>Let <span class="math-inline">x</span>-axis and '
        '(<span class="math-inline">y</span>).</p>'
    )


def test_display_dollar_math_is_kept_verbatim():
    html = render_markdown("Solve:\n\n$$\\frac{a}{b} = \\sqrt{c_1}$$\n\nDone.")
    assert '<div class="math-display">\\frac{a}{b} = \\sqrt{c_1}</div>' in html


def test_backslash_delimiters_keep_their_backslashes():
    html = render_markdown("Inline \\(x^2 + y_1\\) and display \\[\\int_0^1 f(x)\\,dx\\]")
    assert '<span class="math-inline">x^2 + y_1</span>' in html
    assert '<span class="math-display">\\int_0^1 f(x)\\,dx</span>' in html


def test_math_with_angle_brackets_is_escaped_not_dropped():
    html = render_markdown("If $a<b$ and $c>d$ then \\(x<y\\).")
    assert '<span class="math-inline">a&lt;b</span>' in html
    assert '<span class="math-inline">c&gt;d</span>' in html
    assert '<span class="math-inline">x&lt;y</span>' in html


def test_math_cannot_smuggle_html():
    html = render_markdown("$<script>alert(1)</script>$")
    assert "<script" not in html
    assert "&lt;script&gt;" in html


def test_dollar_amounts_stay_prose():
    html = render_markdown("It costs $5 and **then** $10.")
    assert "<strong>then</strong>" in html


def test_fenced_code_is_preserved_and_escaped():
    source = '```python\ndef f(x):\n    return "$a$" if x < 2 else "<b>"\n```'
    html = render_markdown(source)
    assert '<pre><code class="language-python">' in html
    assert "def f(x):\n    return" in html
    assert "&lt;b&gt;" in html
    assert '"$a$"' in html  # dollars inside code are code, not math


def test_inline_code_is_preserved():
    html = render_markdown("Use `price = $x$ * 2` here")
    assert "<code>price = $x$ * 2</code>" in html


def test_tables_render():
    html = render_markdown("| step | value |\n|---|---|\n| 1 | $x_1$ |\n")
    assert "<table>" in html
    assert '<td><span class="math-inline">x_1</span></td>' in html


def test_lists_and_emphasis_render():
    html = render_markdown("1. first **bold**\n2. second *it*")
    assert "<ol>" in html
    assert "<strong>bold</strong>" in html
    assert "<em>it</em>" in html


def test_empty_text_renders_empty():
    assert render_markdown("") == ""


def test_template_filter_marks_output_safe():
    from django.template import Context, Template

    rendered = Template("{% load annotation_tags %}{{ text|markdown }}").render(
        Context({"text": "**x** <script>bad()</script>"})
    )
    assert "<strong>x</strong>" in rendered
    assert "<script" not in rendered
