"""Server-side SVG charts of the lead's dashboard (no Django, no JavaScript).

Every function returns a self-contained ``<svg>`` string in which each label and hover text is
escaped here, so the caller may mark it safe. Undefined values are drawn as "n/a" with their
reason on hover, never as a zero-length bar. The page always shows the same numbers in a table.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"


@dataclass(frozen=True)
class Bar:
    """One bar of a group: a statistic (``series``) with its value and 95% CI."""

    series: str
    value: float | None
    ci: Sequence[float] | None = None
    note: str = ""  # hover text: the CI and counts, or why the value is undefined
    few: bool = False  # computed on too few items to read: drawn pale, its value greyed


@dataclass(frozen=True)
class BarGroup:
    label: str
    bars: Sequence[Bar]


@dataclass(frozen=True)
class Segment:
    name: str
    value: float
    color: str


@dataclass(frozen=True)
class StackRow:
    label: str
    segments: Sequence[Segment]
    note: str = ""


@dataclass(frozen=True)
class HeatMap:
    labels: Sequence[str]
    values: Sequence[Sequence[float | None]]
    overlap: Sequence[Sequence[int]] = field(default_factory=list)


def _attr(text: str) -> str:
    return escape(str(text), quote=True)


def _open(width: float, height: float, title: str, css_class: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="100%" role="img" aria-label="{_attr(title)}" class="chart {css_class}" '
        f'font-family="{FONT}" font-size="12">',
        f"<title>{escape(title)}</title>",
    ]


def _label_width(labels: Sequence[str], requested: int | None) -> int:
    """Room for the longest label at about 6.8 px per character (12 px system font)."""
    if requested is not None:
        return requested
    longest = max((len(label) for label in labels), default=8)
    return int(min(260, max(90, 6.8 * longest + 18)))


def _clip(label: str, room: float) -> str:
    """The label, shortened with an ellipsis when it would not fit in ``room`` pixels."""
    limit = max(4, int(room / 6.8))
    return label if len(label) <= limit else label[: limit - 1].rstrip() + "…"


def _legend(
    items: Sequence[tuple[str, str]], *, left: float, right: float
) -> tuple[list[str], int]:
    """Swatches wrapped onto as many 18 px lines as needed; returns the parts and the height."""
    parts: list[str] = []
    x, y = left, 6
    for name, color in items:
        item_w = 26 + 6.6 * len(name)
        if x + item_w > right and x > left:
            x, y = left, y + 18
        parts.append(
            f'<rect x="{x:.1f}" y="{y}" width="12" height="12" rx="2" fill="{_attr(color)}"/>'
            f'<text x="{x + 17:.1f}" y="{y + 10}" fill="#333">{escape(name)}</text>'
        )
        x += item_w
    return parts, y + 20


def _nice_floor(value: float, step: float) -> float:
    return math.floor(value / step + 1e-9) * step


def ci_bars_svg(
    groups: Sequence[BarGroup],
    *,
    title: str,
    colors: Mapping[str, str],
    domain: tuple[float, float] = (0.0, 1.0),
    width: int = 640,
    label_width: int | None = None,
    bar_height: int = 12,
    tick_step: float = 0.2,
) -> str:
    """Grouped horizontal bars (one group per label, one bar per series) with CI whiskers.

    The domain's lower end extends below zero (in ``tick_step`` steps) when a value or a CI
    bound is negative, so a kappa below chance is visible rather than clipped.
    """
    lo, hi = domain
    for group in groups:
        for bar in group.bars:
            for v in [bar.value, *(bar.ci or [])]:
                if v is not None and math.isfinite(v):
                    lo = min(lo, _nice_floor(v, tick_step))
    lo = max(lo, -1.0)
    label_width = _label_width([g.label for g in groups], label_width)
    value_width = 44
    plot_left, plot_width = label_width, width - label_width - value_width
    axis_h, gap = 22, 10
    n_series = max((len(g.bars) for g in groups), default=1)
    group_h = n_series * (bar_height + 3) + gap

    def x(v: float) -> float:
        return plot_left + plot_width * (max(lo, min(hi, v)) - lo) / (hi - lo)

    # Legend: one swatch per series, in first-seen order.
    seen: list[str] = []
    for group in groups:
        for bar in group.bars:
            if bar.series not in seen:
                seen.append(bar.series)
    legend, legend_h = _legend(
        [(name, colors.get(name, "#888")) for name in seen], left=plot_left, right=width
    )
    height = legend_h + axis_h + group_h * max(len(groups), 1)
    parts = _open(width, height, title, "chart-bars")
    parts.extend(legend)
    top = legend_h
    bottom_axis = height - axis_h
    steps = round((hi - lo) / tick_step)
    for i in range(steps + 1):
        tick = lo + i * tick_step
        tx = x(tick)
        stroke = "#9aa1ab" if abs(tick) < 1e-9 else "#e3e6ea"
        parts.append(
            f'<line x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{bottom_axis}" stroke="{stroke}"/>'
            f'<text x="{tx:.1f}" y="{bottom_axis + 15}" text-anchor="middle" fill="#5b6270">'
            f"{tick:.1f}</text>"
        )
    if not groups:
        parts.append(
            f'<text x="{plot_left + plot_width / 2:.1f}" y="{top + 20}" text-anchor="middle" '
            'fill="#5b6270">no data yet</text>'
        )
    for gi, group in enumerate(groups):
        gy = top + gi * group_h + gap / 2
        block_h = len(group.bars) * (bar_height + 3)
        parts.append(
            f'<text x="{plot_left - 10}" y="{gy + block_h / 2 + 4:.1f}" text-anchor="end" '
            f'fill="#1d1f23"><title>{escape(group.label)}</title>'
            f"{escape(_clip(group.label, label_width - 14))}</text>"
        )
        for bi, bar in enumerate(group.bars):
            y = gy + bi * (bar_height + 3)
            color = _attr(colors.get(bar.series, "#888"))
            hover = f"{group.label} · {bar.series}: " + (
                f"{bar.value:.3f}" if bar.value is not None else "n/a"
            )
            if bar.note:
                hover += f" ({bar.note})"
            parts.append(f"<g><title>{escape(hover)}</title>")
            if bar.value is None or not math.isfinite(bar.value):
                parts.append(
                    f'<rect x="{x(0):.1f}" y="{y:.1f}" width="{plot_width * 0.25:.1f}" '
                    f'height="{bar_height}" fill="url(#na)" stroke="#c4c8ce" '
                    'stroke-dasharray="3 2"/>'
                    f'<text x="{x(0) + 6:.1f}" y="{y + bar_height - 2:.1f}" fill="#5b6270" '
                    'font-style="italic">n/a</text>'
                )
            else:
                x0, x1 = sorted((x(0), x(bar.value)))
                pale = (
                    ' fill-opacity="0.3" stroke="#9aa1ab" stroke-dasharray="2 2"' if bar.few else ""
                )
                parts.append(
                    f'<rect x="{x0:.1f}" y="{y:.1f}" width="{max(x1 - x0, 1):.1f}" '
                    f'height="{bar_height}" rx="2" fill="{color}"{pale}/>'
                )
                if bar.ci and len(bar.ci) == 2 and all(v is not None for v in bar.ci):
                    c0, c1 = x(bar.ci[0]), x(bar.ci[1])
                    cy = y + bar_height / 2
                    parts.append(
                        f'<path d="M{c0:.1f} {cy:.1f}H{c1:.1f}M{c0:.1f} {cy - 4:.1f}'
                        f'V{cy + 4:.1f}M{c1:.1f} {cy - 4:.1f}V{cy + 4:.1f}" '
                        'stroke="#1d1f23" stroke-width="1.4" fill="none"/>'
                    )
                ink = "#9aa1ab" if bar.few else "#1d1f23"
                parts.append(
                    f'<text x="{plot_left + plot_width + 8}" y="{y + bar_height - 2:.1f}" '
                    f'fill="{ink}" font-variant-numeric="tabular-nums">{bar.value:.2f}</text>'
                )
            parts.append("</g>")
    parts.insert(
        2,
        '<defs><pattern id="na" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#f3f4f6"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#d5d8dd" stroke-width="2"/></pattern></defs>',
    )
    parts.append("</svg>")
    return "".join(parts)


def stacked_bars_svg(
    rows: Sequence[StackRow],
    *,
    title: str,
    width: int = 640,
    label_width: int | None = None,
    row_height: int = 26,
) -> str:
    """One 100% bar per row, split into its segments (share of the row's total)."""
    label_width = _label_width([r.label for r in rows], label_width)
    total_width = width - label_width - 50
    names: dict[str, str] = {}
    for row in rows:
        for seg in row.segments:
            names.setdefault(seg.name, seg.color)
    legend, legend_h = _legend(list(names.items()), left=label_width, right=width)
    height = legend_h + row_height * max(len(rows), 1) + 6
    parts = _open(width, height, title, "chart-stacked")
    parts.extend(legend)
    if not rows:
        parts.append(
            f'<text x="{label_width + total_width / 2:.1f}" y="{legend_h + 16}" '
            'text-anchor="middle" fill="#5b6270">no data yet</text>'
        )
    for ri, row in enumerate(rows):
        y = legend_h + ri * row_height + 3
        h = row_height - 8
        total = sum(max(s.value, 0) for s in row.segments)
        parts.append(
            f'<text x="{label_width - 10}" y="{y + h / 2 + 4:.1f}" text-anchor="end" '
            f'fill="#1d1f23"><title>{escape(row.label)}</title>'
            f"{escape(_clip(row.label, label_width - 14))}</text>"
        )
        if total <= 0:
            parts.append(
                f'<rect x="{label_width}" y="{y}" width="{total_width}" height="{h}" '
                'fill="url(#na)" stroke="#c4c8ce" stroke-dasharray="3 2"/>'
                f'<text x="{label_width + 6}" y="{y + h - 4}" fill="#5b6270" '
                f'font-style="italic"><title>{escape(row.note or "nothing counted yet")}</title>'
                "n/a</text>"
            )
            continue
        cx = float(label_width)
        for seg in row.segments:
            if seg.value <= 0:
                continue
            w = total_width * seg.value / total
            share = 100 * seg.value / total
            hover = f"{row.label} · {seg.name}: {seg.value:g} ({share:.1f}%)"
            parts.append(
                f"<g><title>{escape(hover)}</title>"
                f'<rect x="{cx:.1f}" y="{y}" width="{w:.1f}" height="{h}" '
                f'fill="{_attr(seg.color)}"/>'
            )
            if w > 34:
                parts.append(
                    f'<text x="{cx + w / 2:.1f}" y="{y + h / 2 + 4:.1f}" text-anchor="middle" '
                    f'fill="#fff" font-size="11">{share:.0f}%</text>'
                )
            parts.append("</g>")
            cx += w
        parts.append(
            f'<text x="{label_width + total_width + 8}" y="{y + h / 2 + 4:.1f}" fill="#5b6270" '
            f'font-variant-numeric="tabular-nums">{total:g}</text>'
        )
    parts.insert(
        2,
        '<defs><pattern id="na" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#f3f4f6"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#d5d8dd" stroke-width="2"/></pattern></defs>',
    )
    parts.append("</svg>")
    return "".join(parts)


# A sequential blue scale for kappa in [0, 1]; negative values share the lowest colour and a
# red outline, because below-chance agreement is a finding the lead must not miss.
_STOPS = [
    (0.0, (247, 251, 255)),
    (0.4, (158, 202, 225)),
    (0.7, (49, 130, 189)),
    (1.0, (8, 48, 107)),
]


def heat_color(value: float) -> str:
    """The fill for a kappa value (clamped to [0, 1])."""
    v = max(0.0, min(1.0, value))
    for (p0, c0), (p1, c1) in itertools.pairwise(_STOPS):
        if v <= p1:
            t = (v - p0) / (p1 - p0)
            rgb = [round(a + (b - a) * t) for a, b in zip(c0, c1, strict=True)]
            return "#{:02x}{:02x}{:02x}".format(*rgb)
    return "#08306b"


def heat_map_svg(
    data: HeatMap, *, title: str, cell: int = 40, label_width: int = 110, few_below: int = 0
) -> str:
    """An annotator x annotator matrix of kappa values with a colour legend.

    A value computed on fewer than ``few_below`` shared items is not coloured as a reading:
    its cell is pale grey with the value in grey and the count on hover.
    """
    n = len(data.labels)
    top = label_width
    legend_w = 90
    width = label_width + cell * max(n, 1) + legend_w
    # Room below the matrix for the legend's n/a and "few" swatches when the matrix is small.
    height = top + max(cell * max(n, 1) + 10, cell * max(n, 1) * 0.8 + 50)
    parts = _open(width, height, title, "chart-heat")
    if not n:
        parts.append(
            f'<text x="{label_width}" y="{top + 20}" fill="#5b6270">no pairs yet</text></svg>'
        )
        return "".join(parts)
    for i, name in enumerate(data.labels):
        cy = top + i * cell + cell / 2 + 4
        cx = label_width + i * cell + cell / 2
        parts.append(
            f'<text x="{label_width - 8}" y="{cy:.1f}" text-anchor="end" fill="#1d1f23">'
            f"{escape(name)}</text>"
            f'<text transform="translate({cx + 4:.1f},{top - 8}) rotate(-55)" fill="#1d1f23">'
            f"{escape(name)}</text>"
        )
    for i in range(n):
        for j in range(n):
            x = label_width + j * cell
            y = top + i * cell
            value = data.values[i][j] if i < len(data.values) and j < len(data.values[i]) else None
            shared = (
                data.overlap[i][j]
                if data.overlap and i < len(data.overlap) and j < len(data.overlap[i])
                else None
            )
            if i == j:
                parts.append(
                    f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#eef0f3" '
                    'stroke="#fff"/>'
                )
                continue
            pair = f"{data.labels[i]} × {data.labels[j]}"
            counts = f", {shared} shared items" if shared is not None else ""
            if value is None or not math.isfinite(value):
                hover = f"{pair}: n/a (too few shared items or a single category{counts})"
                parts.append(
                    f"<g><title>{escape(hover)}</title>"
                    f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="url(#na-heat)" '
                    'stroke="#fff"/>'
                    f'<text x="{x + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle" '
                    'fill="#5b6270" font-size="10">n/a</text></g>'
                )
                continue
            if shared is not None and shared < few_below:
                hover = f"{pair}: κ = {value:.3f} on only {shared} shared items, too few to read"
                parts.append(
                    f"<g><title>{escape(hover)}</title>"
                    f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#f3f4f6" '
                    'stroke="#fff"/>'
                    f'<text x="{x + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle" '
                    f'fill="#9aa1ab" font-size="10">{value:.2f}</text></g>'
                )
                continue
            fill = heat_color(value)
            ink = "#fff" if value >= 0.55 else "#1d1f23"
            outline = ' stroke="#b42318" stroke-width="2"' if value < 0 else ' stroke="#fff"'
            parts.append(
                f"<g><title>{escape(f'{pair}: κ = {value:.3f}{counts}')}</title>"
                f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}"{outline}/>'
                f'<text x="{x + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle" '
                f'fill="{ink}" font-size="11">{value:.2f}</text></g>'
            )
    # Legend: a vertical gradient from 1 (top) to 0 (bottom), plus the n/a swatch.
    lx = label_width + cell * n + 24
    lh = cell * n * 0.8
    parts.append(
        '<defs><linearGradient id="heat-scale" x1="0" y1="1" x2="0" y2="0">'
        + "".join(f'<stop offset="{p:.2f}" stop-color="{heat_color(p)}"/>' for p, _ in _STOPS)
        + '</linearGradient><pattern id="na-heat" width="6" height="6" '
        'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<rect width="6" height="6" fill="#f3f4f6"/><line x1="0" y1="0" x2="0" y2="6" '
        'stroke="#d5d8dd" stroke-width="2"/></pattern></defs>'
        f'<rect x="{lx}" y="{top}" width="14" height="{lh:.1f}" fill="url(#heat-scale)" '
        'stroke="#c4c8ce"/>'
    )
    for tick in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
        ty = top + lh * (1 - tick)
        parts.append(
            f'<text x="{lx + 20}" y="{ty + 4:.1f}" fill="#5b6270" font-size="10">{tick:.1f}</text>'
        )
    parts.append(
        f'<rect x="{lx}" y="{top + lh + 10:.1f}" width="14" height="14" fill="url(#na-heat)" '
        'stroke="#c4c8ce"/>'
        f'<text x="{lx + 20}" y="{top + lh + 21:.1f}" fill="#5b6270" font-size="10">n/a</text>'
        f'<text x="{lx}" y="{top - 10}" fill="#5b6270" font-size="10">κ</text>'
    )
    if few_below:
        parts.append(
            f"<g><title>fewer than {few_below} shared items: too few to read</title>"
            f'<rect x="{lx}" y="{top + lh + 30:.1f}" width="14" height="14" fill="#f3f4f6" '
            'stroke="#c4c8ce"/>'
            f'<text x="{lx + 20}" y="{top + lh + 41:.1f}" fill="#5b6270" font-size="10">few</text>'
            "</g>"
        )
    parts.append("</svg>")
    return "".join(parts)


# Distinct hues for up to ten series (the rest cycle), readable on white.
LINE_COLORS = (
    "#1f5fbf",
    "#e07a5f",
    "#2a9d8f",
    "#7a3fb4",
    "#e09f3e",
    "#b42318",
    "#3d5a80",
    "#6a994e",
    "#c05299",
    "#5b6270",
)


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float]


def lines_svg(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    width: int = 640,
    height: int = 220,
    unit: str = "",
) -> str:
    """One line per series over the same x labels (e.g. days), with a legend and a y axis.

    Every point carries its value on hover; the x labels are thinned to fit.
    """
    legend, legend_h = _legend(
        [(s.name, LINE_COLORS[i % len(LINE_COLORS)]) for i, s in enumerate(series)],
        left=44,
        right=width,
    )
    parts = _open(width, height + legend_h, title, "chart-lines")
    parts.extend(legend)
    left, right, top = 44, width - 12, legend_h + 8
    bottom = legend_h + height - 26
    peak = max((v for s in series for v in s.values), default=0)
    step = _nice_step(peak)
    top_value = max(step, math.ceil(peak / step) * step) if peak > 0 else 1
    n = len(labels)

    def px(i: int) -> float:
        return left + (right - left) * (i / (n - 1) if n > 1 else 0.5)

    def py(v: float) -> float:
        return bottom - (bottom - top) * (v / top_value)

    tick = 0.0
    while tick <= top_value + 1e-9:
        parts.append(
            f'<line x1="{left}" y1="{py(tick):.1f}" x2="{right}" y2="{py(tick):.1f}" '
            f'stroke="{"#9aa1ab" if tick == 0 else "#e3e6ea"}"/>'
            f'<text x="{left - 6}" y="{py(tick) + 4:.1f}" text-anchor="end" fill="#5b6270">'
            f"{tick:g}</text>"
        )
        tick += step
    every = max(1, math.ceil(n / max(2, (right - left) // 80)))
    for i, label in enumerate(labels):
        # The last label (the newest day) always shows, ending at the plot's edge.
        if (i % every == 0 and n - 1 - i >= every / 2) or i == n - 1:
            anchor = "end" if i == n - 1 and n > 1 else "middle"
            parts.append(
                f'<text x="{px(i):.1f}" y="{bottom + 16}" text-anchor="{anchor}" fill="#5b6270">'
                f"{escape(label)}</text>"
            )
    if not series:
        parts.append(
            f'<text x="{(left + right) / 2:.1f}" y="{(top + bottom) / 2:.1f}" '
            'text-anchor="middle" fill="#5b6270">no votes in this period</text>'
        )
    for si, s in enumerate(series):
        color = LINE_COLORS[si % len(LINE_COLORS)]
        points = " ".join(f"{px(i):.1f},{py(v):.1f}" for i, v in enumerate(s.values))
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2" '
            'stroke-linejoin="round"/>'
        )
        for i, v in enumerate(s.values):
            hover = f"{s.name} · {labels[i]}: {v:g}{unit}"
            parts.append(
                f'<circle cx="{px(i):.1f}" cy="{py(v):.1f}" r="3" fill="{color}">'
                f"<title>{escape(hover)}</title></circle>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _nice_step(peak: float) -> float:
    """A round grid step giving about four lines up to ``peak``."""
    if peak <= 0:
        return 1.0
    raw = peak / 4
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return float(max(1, factor * magnitude))
    return float(10 * magnitude)
