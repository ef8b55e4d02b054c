"""Rendered Markdown is kept in the shared cache by content hash (long texts rendered once)."""

from __future__ import annotations

import hashlib

import pytest
from django.core.cache import cache

from annotation import rendering


@pytest.fixture(autouse=True)
def _fresh_process_cache():
    rendering._render_cached.cache_clear()  # as in a process that has not rendered them yet


def key_of(text: str) -> str:
    digest = hashlib.blake2b(text.encode(), digest_size=20).hexdigest()
    return f"md:{rendering.RENDER_VERSION}:{digest}"


def test_a_long_response_is_rendered_once_into_the_shared_cache():
    text = "A **long** response with $x^2$ and a table.\n\n" + "word " * 5_000  # 25,000 chars
    assert len(text) > rendering.CACHE_MAX_CHARS
    html = rendering.render_markdown(text)
    assert cache.get(key_of(text)) == html
    assert "<strong>long</strong>" in html and 'class="math-inline"' in html
    # The stored HTML is what the next screen gets (here: a marker proves it was not rendered).
    cache.set(key_of(text), html + "<!-- cached -->")
    assert rendering.render_markdown(text).endswith("<!-- cached -->")


def test_medium_texts_share_the_cache_and_short_ones_stay_in_the_process():
    medium = "Medium response. " * 100  # 1,700 chars
    short = "Short answer."
    assert rendering.render_markdown(medium) == rendering.render_markdown_uncached(medium)
    assert cache.get(key_of(medium)) == rendering.render_markdown_uncached(medium)
    rendering.render_markdown(short)
    assert cache.get(key_of(short)) is None


def test_the_key_follows_the_content():
    a, b = "x" * 1_500, "x" * 1_499 + "y"
    assert rendering.render_markdown(a) != rendering.render_markdown(b)
    assert cache.get(key_of(a)) != cache.get(key_of(b))
