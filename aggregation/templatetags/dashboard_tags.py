"""Number formatting of the dashboard and review pages; undefined figures stay "n/a"."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def pct(share: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage with ``digits`` decimals, or "n/a" when undefined."""
    if share is None:
        return "n/a"
    return f"{100 * share:.{int(digits)}f}%"


@register.filter
def width(share: float | None) -> str:
    """A share as a CSS width percentage, clamped to [0, 100]."""
    if share is None:
        return "0"
    return f"{max(0.0, min(100.0, 100 * share)):.1f}"


@register.filter
def seconds(value: float | None) -> str:
    """Seconds as "42 s" or "3 min 05 s"; "n/a" when there is nothing to measure."""
    if value is None:
        return "n/a"
    value = float(value)
    if value < 90:
        return f"{value:.0f} s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes} min {rest:02d} s"


@register.filter
def get(mapping: dict | None, key: object) -> object:
    """``mapping[key]`` in a template (None when missing)."""
    if not mapping:
        return None
    return mapping.get(key)


PROVENANCE_SHORT = {
    "human": "human",
    "early_stopped": "stopped early",
    "panel_human": "panel + human",
    "panel_overruled": "panel overruled",
}


@register.simple_tag
def provenance_short(provenance: str) -> str:
    """A label's provenance in a few words, for badges."""
    return PROVENANCE_SHORT.get(provenance, provenance)
