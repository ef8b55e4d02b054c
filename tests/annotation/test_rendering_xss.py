"""Every known way into the page through rendered text is closed: no script, handler or bad URL."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from annotation.rendering import render_markdown
from tests.xss_payloads import PAYLOADS

FORBIDDEN_TAGS = {
    "script", "iframe", "object", "embed", "form", "img", "svg", "math", "style", "base",
    "meta", "link", "input", "button", "textarea", "select", "template", "frame", "frameset",
    "video", "audio", "source", "noscript", "xmp", "plaintext", "noembed", "isindex", "keygen",
}  # fmt: skip
RISKY_ATTRIBUTES = {"style", "id", "name", "srcdoc", "formaction", "action", "background"}
SAFE_SCHEMES = {"", "http", "https", "mailto"}
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
SAFE_CLASS = re.compile(r"math-inline|math-display|language-[\w#+.-]+")


def scheme(url: str) -> str:
    """The scheme a browser reads from a URL ("" for a relative one), as the URL standard does."""
    # Tabs and newlines anywhere are dropped, and leading or trailing controls and spaces.
    url = re.sub(r"[\t\n\r]", "", url).strip(_C0_AND_SPACE)
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", url)
    return match.group(1).lower() if match else ""


class Audit(HTMLParser):
    """Collect every way a parsed document could run script or restyle the page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in FORBIDDEN_TAGS:
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") or name in RISKY_ATTRIBUTES:
                self.problems.append(f"{tag} {name}")
            elif name in {"href", "src", "xlink:href", "data"}:
                if scheme(value) not in SAFE_SCHEMES:
                    self.problems.append(f"{tag} {name}={value!r}")
            elif name == "class" and not SAFE_CLASS.fullmatch(value):
                self.problems.append(f"{tag} class={value!r}")

    handle_startendtag = handle_starttag


def audit(html: str) -> list[str]:
    """Problems found in rendered HTML (empty when it is inert)."""
    parser = Audit()
    parser.feed(html)
    parser.close()
    return parser.problems


def test_the_corpus_is_large_and_covers_each_family() -> None:
    assert len(PAYLOADS) >= 100
    assert len(set(PAYLOADS)) == len(PAYLOADS)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payload_renders_inert(payload: str) -> None:
    html = render_markdown(payload)
    assert audit(html) == [], html


@pytest.mark.parametrize(
    "wrap",
    [
        "Intro line:\n- {p}\n- item",
        "$x$ {p} $y$",
        "| a | b |\n|---|---|\n| {p} | \\(z\\) |",
        "[{p}](https://example.org)",
        "> quote\n> {p}",
        "1. step\n2. {p}",
        "**{p}**",
    ],
)
def test_payloads_stay_inert_inside_other_markup(wrap: str) -> None:
    html = render_markdown("\n\n".join(wrap.replace("{p}", payload) for payload in PAYLOADS))
    assert audit(html) == []


def test_all_payloads_in_one_text_stay_inert() -> None:
    assert audit(render_markdown("\n".join(PAYLOADS))) == []
    assert audit(render_markdown(" ".join(PAYLOADS))) == []


def test_math_in_a_link_address_stays_out_of_the_attributes() -> None:
    html = render_markdown('[x](\\(" autofocus onfocus="alert(document.domain)//\\))')
    assert "autofocus" not in re.sub(r">[^<]*<", "><", html)  # only in text, never a tag
    html = render_markdown('<a href="$javascript:alert(1)$">m</a>')
    # The dollars stay part of a relative address: no math markup, no scheme.
    assert html == '<p><a href="$javascript:alert(1)$" rel="noopener noreferrer nofollow">m</a></p>'


def test_katex_commands_reach_the_page_as_escaped_text_only() -> None:
    html = render_markdown("$\\href{javascript:alert(1)}{x}$")
    assert html == '<p><span class="math-inline">\\href{javascript:alert(1)}{x}</span></p>'
