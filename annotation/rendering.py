"""Markdown to safe HTML for questions, responses and criterion descriptions.

Model responses are untrusted text. They are parsed once with a CommonMark parser (markdown-it),
which also recognises math, and the finished HTML is sanitised with nh3 as the very last step:
nothing is inserted after sanitising, so no text of the response can reach the page as markup
that nh3 has not seen.

Math is a parser rule, not a search-and-replace around the parser, so it only ever applies where
the parser reads prose: never inside code, a link's address or title, or a raw HTML tag. Each
formula becomes ``<span class="math-inline">`` or a ``math-display`` element holding the TeX as
escaped text; ``static/js/math.js`` typesets those elements with KaTeX. Inline ``$...$`` follows a
strict rule (no space just inside the dollars, no letter or digit right outside them), so "costs
$5 and $10" and "48 M$ ... 11 M$" stay prose.

The output keeps what the model wrote: single newlines are line breaks, a list may follow its
introducing line without a blank line (CommonMark), code (fenced or indented) and tables render.

Every scan is linear in the length of the text: a delimiter that has no closer is remembered as
such, so a text made of thousands of unclosed openers is not searched again and again.

A formula is typeset only within two caps: at most ``MAX_FORMULA_CHARS`` characters and at most
``MAX_FORMULA_DEPTH`` nested groups (:func:`formula_depth`). A browser lays out KaTeX's output
recursively, and a formula nested about 140 deep (``x^{x^{...}}``, ``\\frac`` or ``\\sqrt``) crashes
the tab; a formula past either cap is shown as its TeX in code text instead, never typeset.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

# No images inside responses: they would load from anywhere on the annotator's screen.
_TAGS = set(nh3.ALLOWED_TAGS) - {"img", "map", "area"}
_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title"},
    "code": {"class"},
    "span": {"class"},
    "div": {"class"},
    "th": {"colspan", "rowspan"},
    "td": {"colspan", "rowspan"},
    "ol": {"start"},
}
_URL_SCHEMES = {"http", "https", "mailto"}
# Classes a response may carry: the math markers and a code block's language. Any other class
# (one of the page's own, say) is dropped, so a response cannot dress up as the page.
_MATH_CLASSES = {"math-inline", "math-display"}
_LANGUAGE_CLASS = re.compile(r"language-[\w#+.-]{1,40}")

# Inline $...$ content: up to the first unescaped dollar or end of line.
_DOLLAR_BODY = re.compile(r"(?:[^$\n\\]|\\.)*")
_OPENERS = {"$$": "$$", "\\[": "\\]", "\\(": "\\)"}
_DISPLAY = {"$$", "\\["}


def _dead(state: StateInline | StateBlock, opener: str) -> bool:
    """Whether an earlier search in this source found no closer for this opener."""
    return opener in getattr(state, "math_dead", ())


def _mark_dead(state: StateInline | StateBlock, opener: str) -> None:
    """Remember that this opener has no closer from here to the end of this source."""
    if not hasattr(state, "math_dead"):
        state.math_dead = set()  # type: ignore[union-attr]
    state.math_dead.add(opener)  # type: ignore[union-attr]


def _word_char(ch: str) -> bool:
    """A letter, digit or underscore, as in the regex \\w."""
    return ch.isalnum() or ch == "_"


def _math_inline(state: StateInline, silent: bool) -> bool:
    """Parse \\(...\\), \\[...\\], $$...$$ or a strict $...$ at the current position."""
    src, pos, end = state.src, state.pos, state.posMax
    ch = src[pos]
    if ch not in "$\\":
        return False
    two = src[pos : pos + 2]
    if two in _OPENERS:
        if _dead(state, two):
            return False
        # Search the whole source, not just up to posMax (a link label narrows it): no closer
        # after here then means none after any later opener of this kind either.
        close = src.find(_OPENERS[two], pos + 2)
        if close < 0:
            _mark_dead(state, two)
            return False
        if close + 2 > end:
            return False
        body = src[pos + 2 : close]
        if not body.strip():
            return False
        if not silent:
            token = state.push("math_display" if two in _DISPLAY else "math_inline", "", 0)
            token.content = body
            token.markup = two
        state.pos = close + 2
        return True
    if ch != "$":
        return False
    # Strict inline dollars: not after a letter, digit, backslash or dollar; no space inside.
    if pos > 0 and (src[pos - 1] in "\\$" or _word_char(src[pos - 1])):
        return False
    match = _DOLLAR_BODY.match(src, pos + 1, end)
    close = match.end() if match else pos + 1
    if close >= end or src[close] != "$" or close == pos + 1:
        return False
    body = src[pos + 1 : close]
    if body[0].isspace() or body[-1].isspace():
        return False
    if close + 1 < len(src) and (src[close + 1] == "$" or _word_char(src[close + 1])):
        return False
    if not silent:
        token = state.push("math_inline", "", 0)
        token.content = body
        token.markup = "$"
    state.pos = close + 1
    return True


def _math_block(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """Parse a display formula whose $$ or \\[ opens a line and whose closer ends a line."""
    begin = state.bMarks[start] + state.tShift[start]
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    opener = state.src[begin : begin + 2]
    if opener not in _DISPLAY or _dead(state, opener):
        return False
    close = state.src.find(_OPENERS[opener], begin + 2)
    if close < 0:
        _mark_dead(state, opener)
        return False
    # The closer must end its line, and the formula must stay within this block's lines.
    line_end = state.src.find("\n", close)
    line_end = len(state.src) if line_end < 0 else line_end
    if state.src[close + 2 : line_end].strip():
        return False
    last = start
    while last < end and state.eMarks[last] < close + 2:
        last += 1
    if last >= end:
        return False
    # The lines as this block sees them (a quote's ">" or a list's indent taken off).
    text = state.getLines(start, last + 1, state.blkIndent, False).strip()
    if not (text.startswith(opener) and text.endswith(_OPENERS[opener])):
        return False
    body = text[2:-2]
    if not body.strip():
        return False
    if silent:
        return True
    state.line = last + 1
    token = state.push("math_block", "div", 0)
    token.content = body
    token.markup = opener
    token.map = [start, state.line]
    return True


# The formula caps. Real formulas nest a dozen groups at most; KaTeX's output grows about seven
# elements deeper per group, and the browser's tab crashed at about 140 groups (1,000 elements),
# so 32 groups (some 250 elements) keep a fourfold margin. A 4,000-character formula (a long
# aligned derivation) typesets in a fraction of a second; 100,000 characters took half a minute.
# static/js/math.js repeats the length cap for formulas that reach the page without this renderer.
MAX_FORMULA_DEPTH = 32
MAX_FORMULA_CHARS = 4_000

# TeX tokens as KaTeX reads them. Each of these is one token, its braces being no group: \\verb
# and its delimited text, \\char` and the character it names, \\begin or \\end with the name of
# its environment, a comment to the end of its line. Otherwise a control word (letters and @),
# a control symbol, or any other visible character.
_TEX_TOKEN = re.compile(
    r"\\verb\*([\s\S]).*?\1|\\verb([^*A-Za-z]).*?\2"
    r"|\\char[ \t\r\n]*`(?:\\[A-Za-z@]+|[\s\S])"
    r"|(?P<environment>\\(?:begin|end))[ \t\r\n]*\{[^{}]*\}"
    r"|%.*"
    r"|\\(?:[A-Za-z@]+|[\s\S])"
    r"|\S"
)
# Each opener of a group and the token that closes it.
_GROUP_CLOSERS = {
    "{": "}",
    "\\bgroup": "\\egroup",
    "\\begingroup": "\\endgroup",
    "\\left": "\\right",
    "\\begin": "\\end",
}
# ``\\egroup`` closes a group that ``{`` opened, and ``}`` one that ``\\bgroup`` opened.
_SAME_CLOSER = {"}": "\\egroup", "\\egroup": "}"}


def formula_depth(tex: str) -> int:
    """How deeply the groups of a TeX formula nest, counted on its source before typesetting.

    A group is a brace pair, ``\\bgroup``/``\\begingroup`` to its end, ``\\left`` to ``\\right``
    or ``\\begin`` to ``\\end``. A bracketed option (``\\sqrt[n]``) ends at its first ``]``
    outside braces, so only braces nest inside it. A closer that does not match the innermost
    open group closes nothing: a malformed formula is never counted shallower than KaTeX would
    nest it. Macros a formula defines itself are not expanded here: static/js/math.js measures
    what KaTeX built before it enters the page.
    """
    open_groups: list[str] = []
    deepest = 0
    for match in _TEX_TOKEN.finditer(tex):
        token = match.group("environment") or match.group()
        closer = _GROUP_CLOSERS.get(token)
        if closer is not None:
            open_groups.append(closer)
            deepest = max(deepest, len(open_groups))
        elif open_groups and open_groups[-1] in (token, _SAME_CLOSER.get(token)):
            open_groups.pop()
    return deepest


def formula_fits(tex: str) -> bool:
    """Whether a formula is within both caps and may be typeset."""
    return len(tex) <= MAX_FORMULA_CHARS and formula_depth(tex) <= MAX_FORMULA_DEPTH


def _render_math(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """HTML of one formula: its TeX as escaped text in an element math.js typesets.

    A formula past a cap is its TeX as code text (a block of code for a display formula).
    """
    token = tokens[idx]
    block = token.type == "math_block"
    tex = token.content.strip() if block else token.content
    if not formula_fits(tex):
        code = f'<code class="language-latex">{escapeHtml(tex)}</code>'
        return f"<pre>{code}</pre>\n" if block else code
    if block:
        return f'<div class="math-display">{escapeHtml(tex)}</div>\n'
    kind = "math-display" if token.type == "math_display" else "math-inline"
    return f'<span class="{kind}">{escapeHtml(tex)}</span>'


def _parser() -> MarkdownIt:
    """CommonMark with tables, strikethrough, hard breaks, raw HTML (sanitised later) and math."""
    md = MarkdownIt("commonmark", {"breaks": True, "html": True})
    md.enable(["table", "strikethrough"])
    md.inline.ruler.before("escape", "math", _math_inline)
    alt = {"alt": ["paragraph", "reference", "blockquote", "list"]}
    md.block.ruler.before("blockquote", "math_block", _math_block, alt)
    for kind in ("math_inline", "math_display", "math_block"):
        md.add_render_rule(kind, _render_math)
    return md


_MD = _parser()


def _keep_attribute(tag: str, name: str, value: str) -> str | None:
    """Drop every class except the math markers and a code block's language."""
    if name != "class":
        return value
    if tag == "code":
        return value if _LANGUAGE_CLASS.fullmatch(value) else None
    return value if value in _MATH_CLASSES else None


# Texts up to this length are kept in this process (a page shows the same sample several
# times); the memory cache stays small however long the responses are.
CACHE_MAX_CHARS = 20_000
# From this length the HTML is also kept in the shared cache (Redis when CACHE_URL is set),
# keyed by the text's hash: every web process then renders a response once, and a text longer
# than CACHE_MAX_CHARS is rendered once, not on each screen. Rendering costs about 2 ms per KB,
# a cache read a fraction of a millisecond; shorter texts are rendered again in each process.
SHARED_MIN_CHARS = 1_000
SHARED_MAX_CHARS = 2_000_000
SHARED_SECONDS = 30 * 24 * 3600
# Part of the key: change it when the rendering changes, so no HTML of the old rules is served.
RENDER_VERSION = 2


def render_markdown(text: str) -> str:
    """Render untrusted Markdown to sanitised HTML, with math marked for KaTeX."""
    if not text:
        return ""
    if len(text) <= CACHE_MAX_CHARS:
        return _render_cached(text)
    return _render_shared(text)


def _render_shared(text: str) -> str:
    """Render through the shared cache, keyed by the text's content hash."""
    if not SHARED_MIN_CHARS <= len(text) <= SHARED_MAX_CHARS:
        return render_markdown_uncached(text)
    from django.core.cache import cache

    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()
    key = f"md:{RENDER_VERSION}:{digest}"
    html = cache.get(key)
    if html is None:
        html = render_markdown_uncached(text)
        cache.set(key, html, SHARED_SECONDS)
    return html


def render_markdown_uncached(text: str) -> str:
    """Render without the cache (for benchmarks and timing tests)."""
    raw = _MD.render(text, {}).strip()
    # Sanitising is the last step: nothing may be added to the HTML after nh3 has seen it.
    return nh3.clean(
        raw,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        attribute_filter=_keep_attribute,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )


_render_cached = lru_cache(maxsize=1024)(_render_shared)
