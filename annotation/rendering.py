"""Markdown to safe HTML for questions, responses and criterion descriptions.

Model responses are untrusted text: they are rendered with Markdown (fenced code, tables) and
then sanitised with nh3, so no script, event handler or ``javascript:`` URL reaches the page.
Math is cut out before Markdown runs and put back (HTML-escaped) afterwards, because
Markdown would otherwise eat the backslashes of ``\\(`` and turn ``a_1 b_2`` into emphasis; the
page renders it with KaTeX's auto-render on the client. Code (fenced or inline) is never searched
for math, so a ``$`` inside code stays code. Inline ``$...$`` is put back as ``\\(...\\)`` so the
page's KaTeX needs no single-dollar delimiter and a stray dollar in prose is never math.
"""

from __future__ import annotations

import html
import re
import secrets
from functools import lru_cache

import markdown
import nh3

_EXTENSIONS = ["fenced_code", "tables", "sane_lists"]

# No images inside responses: they would load from anywhere on the annotator's screen.
_TAGS = set(nh3.ALLOWED_TAGS) - {"img", "map", "area"}
_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title"},
    "code": {"class"},
    "pre": {"class"},
    "span": {"class"},
    "div": {"class"},
    "th": {"align", "colspan", "rowspan"},
    "td": {"align", "colspan", "rowspan"},
    "ol": {"start"},
}
_URL_SCHEMES = {"http", "https", "mailto"}

# Code first (so math inside it is left alone), then display math before inline math.
_CODE = re.compile(
    r"(?P<fence>^(?P<ticks>`{3,}|~{3,})[^\n]*\n.*?^(?P=ticks)[ \t]*$)"
    r"|(?P<inline>(?P<bt>`+)(?!`).+?(?<!`)(?P=bt)(?!`))",
    re.MULTILINE | re.DOTALL,
)
_MATH = re.compile(
    r"(?P<dd>\$\$.+?\$\$)"
    r"|(?P<bracket>\\\[.+?\\\])"
    r"|(?P<paren>\\\(.+?\\\))"
    # Inline $...$: not empty, no space just inside the dollars, no letter or digit right before
    # the opening one or right after the closing one, so "costs $5 and $10" and "48 M$, while
    # 11 M$" stay prose.
    r"|(?P<d>(?<![\\$\w])\$(?=\S)(?:[^$\n\\]|\\.)+?(?<=\S)\$(?![$\w]))",
    re.DOTALL,
)


def _protect(text: str) -> tuple[str, dict[str, str]]:
    """Replace every math span outside code with an opaque token; return the map back."""
    salt = secrets.token_hex(4)
    spans: dict[str, str] = {}

    def stash(match: re.Match[str]) -> str:
        token = f"MATHX{salt}N{len(spans)}X"
        source = match.group(0)
        if match.lastgroup == "d":
            # Inline $...$ becomes \(...\): the page's KaTeX then needs no single-dollar
            # delimiter, so a dollar the rule above left as prose ("48 M$ ... 11 M$") stays prose.
            source = "\\(" + source[1:-1] + "\\)"
        spans[token] = source
        return token

    pieces: list[str] = []
    last = 0
    for code in _CODE.finditer(text):
        pieces.append(_MATH.sub(stash, text[last : code.start()]))
        pieces.append(code.group(0))
        last = code.end()
    pieces.append(_MATH.sub(stash, text[last:]))
    return "".join(pieces), spans


@lru_cache(maxsize=2048)
def render_markdown(text: str) -> str:
    """Render untrusted Markdown to sanitised HTML, with math kept intact for KaTeX."""
    if not text:
        return ""
    protected, spans = _protect(text)
    raw = markdown.markdown(protected, extensions=_EXTENSIONS, output_format="html")
    clean = nh3.clean(
        raw,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )
    for token, source in spans.items():
        clean = clean.replace(token, html.escape(source, quote=False))
    return clean
