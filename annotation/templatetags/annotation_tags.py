"""Template filters of the annotation screens."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from ..rendering import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str | None) -> SafeString:
    """Render Markdown from a sample or criterion as sanitised HTML (math left for KaTeX)."""
    # Safe to mark: render_markdown sanitises its output with nh3.
    return mark_safe(render_markdown(text or ""))


@register.filter
def percent(part: int | float | None, whole: int | float | None) -> int:
    """Whole-number percentage of part in whole (0 when whole is empty)."""
    if not whole or part is None:
        return 0
    return max(0, min(100, round(100 * part / whole)))
