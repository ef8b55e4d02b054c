"""Template filters of the annotation screens."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from core.text import counted

from ..rendering import render_markdown
from ..scales import answer_text
from ..splits import split_label

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


register.filter("split_label", split_label)


@register.filter(name="counted")
def counted_filter(n: int | float | None, nouns: str) -> str:
    """``{{ n|counted:"tie" }}`` is "1 tie" or "3 ties"; ``"criterion,criteria"`` for irregulars."""
    singular, _, plural = nouns.partition(",")
    return counted(n, singular, plural or None)


@register.filter
def truncate_math(text: str | None, length: int) -> str:
    """Shorten text to about length characters without cutting a $...$ formula in half."""
    text = " ".join((text or "").split())
    if len(text) <= length:
        return text
    head = text[: length - 1]
    # An odd number of unescaped dollars means the cut fell inside a formula: cut before it.
    dollars = [i for i, ch in enumerate(head) if ch == "$" and (i == 0 or head[i - 1] != "\\")]
    if len(dollars) % 2:
        head = head[: dollars[-1]]
    return head.rstrip() + "…"


@register.filter
def duration(seconds: float | None) -> str:
    """Time spent as "40 s", "12 min" or "2 h 05 min"."""
    total = round(float(seconds or 0))
    if total < 60:
        return f"{total} s"
    minutes = total // 60
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


@register.filter
def vote_answer(vote: Any) -> str:
    """A graded or pointwise vote's grade or scores as read ("A>B", "A 4 · B 2"); "" otherwise."""
    return answer_text(
        getattr(vote, "grade", None), getattr(vote, "score_a", None), getattr(vote, "score_b", None)
    )


@register.filter
def label_figures(label: Any) -> str:
    """A graded label's median grade or a pointwise label's mean scores; "" for pairwise."""
    median = getattr(label, "median_grade", None)
    if median is not None:
        return f"median grade {median:+g}"
    mean_a, mean_b = getattr(label, "mean_score_a", None), getattr(label, "mean_score_b", None)
    if mean_a is not None and mean_b is not None:
        return f"mean score A {mean_a:.2f} · B {mean_b:.2f}"
    return ""
