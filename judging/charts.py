"""Server-side SVG charts of the scorecard page (no Django, no JavaScript).

Each function returns a self-contained ``<svg>`` string; every label is escaped here, so the
caller may mark the result safe. The page always shows the same numbers in a table as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None  # percent; None draws an "n/a" row
    ci: Sequence[float] | None = None
    note: str = ""  # small text after the value, e.g. "412 / 600"


def _fmt(value: float) -> str:
    return f"{value:.2f}"


def _fit(label: str, width: int) -> str:
    # About 7 px per character at 13 px; a longer label is cut (the tooltip has it whole).
    room = max(4, (width - 14) // 7)
    return label if len(label) <= room else label[: room - 1].rstrip() + "…"


def bar_chart_svg(
    bars: Sequence[Bar],
    *,
    title: str,
    reference: float | None = None,
    reference_label: str = "",
    width: int = 720,
    label_width: int = 210,
    row_height: int = 34,
) -> str:
    """Horizontal percentage bars (0-100) with 95% CI whiskers and an optional reference line."""
    value_width = 150
    plot_left = label_width
    plot_width = width - label_width - value_width
    top, bottom = 26, 26
    height = top + bottom + row_height * max(len(bars), 1)

    def x(pct: float) -> float:
        return plot_left + plot_width * max(0.0, min(100.0, pct)) / 100.0

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" '
        'class="chart">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in (0, 25, 50, 75, 100):
        tx = x(tick)
        parts.append(
            f'<line x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" y2="{height - bottom + 4}" '
            'class="grid"/>'
            f'<text x="{tx:.1f}" y="{height - bottom + 18}" class="tick" '
            f'text-anchor="middle">{tick}%</text>'
        )
    for i, bar in enumerate(bars):
        y = top + i * row_height
        mid = y + row_height / 2
        parts.append(
            f'<text x="{plot_left - 10}" y="{mid + 4:.1f}" class="label" text-anchor="end">'
            f"{escape(_fit(bar.label, label_width))}<title>{escape(bar.label)}</title></text>"
        )
        if bar.value is None:
            parts.append(f'<text x="{plot_left + 6}" y="{mid + 4:.1f}" class="na">n/a</text>')
            continue
        bar_h = row_height * 0.56
        tip = f"{bar.label}: {_fmt(bar.value)}%"
        if bar.ci:
            tip += f" (95% CI {_fmt(bar.ci[0])}-{_fmt(bar.ci[1])})"
        parts.append(
            f'<rect x="{plot_left}" y="{mid - bar_h / 2:.1f}" '
            f'width="{max(x(bar.value) - plot_left, 0.5):.1f}" height="{bar_h:.1f}" rx="3" '
            f'class="bar"><title>{escape(tip)}</title></rect>'
        )
        if bar.ci:
            lo, hi = x(bar.ci[0]), x(bar.ci[1])
            parts.append(
                f'<line x1="{lo:.1f}" y1="{mid:.1f}" x2="{hi:.1f}" y2="{mid:.1f}" class="ci"/>'
                f'<line x1="{lo:.1f}" y1="{mid - 6:.1f}" x2="{lo:.1f}" y2="{mid + 6:.1f}" '
                'class="ci"/>'
                f'<line x1="{hi:.1f}" y1="{mid - 6:.1f}" x2="{hi:.1f}" y2="{mid + 6:.1f}" '
                'class="ci"/>'
            )
        value_text = f"{_fmt(bar.value)}%"
        if bar.note:
            value_text += f' <tspan class="note">{escape(bar.note)}</tspan>'
        parts.append(
            f'<text x="{plot_left + plot_width + 12}" y="{mid + 4:.1f}" class="value">'
            f"{value_text}</text>"
        )
    if reference is not None:
        rx = x(reference)
        parts.append(
            f'<line x1="{rx:.1f}" y1="{top - 10}" x2="{rx:.1f}" y2="{height - bottom + 4}" '
            'class="reference"/>'
        )
        if reference_label:
            parts.append(
                f'<text x="{rx + 4:.1f}" y="{top - 12}" class="reference-label">'
                f"{escape(reference_label)}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)
