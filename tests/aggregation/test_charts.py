"""The dashboard's SVG charts: well-formed, escaped, honest about undefined values."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from aggregation.charts import (
    Bar,
    BarGroup,
    HeatMap,
    Segment,
    Series,
    StackRow,
    ci_bars_svg,
    heat_color,
    heat_map_svg,
    lines_svg,
    stacked_bars_svg,
)

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script> & "quotes"'


def texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def titles(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{NS}title")]


def test_ci_bars_draw_values_whiskers_and_na():
    svg = ci_bars_svg(
        [
            BarGroup(
                "Clarity", [Bar("κ", 0.72, (0.6, 0.8)), Bar("α", None, note="single category")]
            ),
        ],
        title="Agreement",
        colors={"κ": "#123456", "α": "#654321"},
    )
    root = ET.fromstring(svg)
    assert root.get("role") == "img" and root.get("aria-label") == "Agreement"
    assert "0.72" in texts(svg) and "n/a" in texts(svg)
    assert "Clarity · α: n/a (single category)" in titles(svg)
    whiskers = [p for p in root.iter(f"{NS}path")]
    assert len(whiskers) == 1  # only the defined bar has a CI
    # The axis stays 0..1 when nothing is negative.
    assert "0.0" in texts(svg) and "1.0" in texts(svg) and "-0.2" not in texts(svg)


def test_ci_bars_extend_below_zero_for_negative_kappa():
    svg = ci_bars_svg(
        [BarGroup("Logic", [Bar("κ", -0.3, (-0.45, -0.1))])], title="t", colors={"κ": "#000"}
    )
    assert "-0.6" in texts(svg) and "-0.30" in texts(svg)
    ET.fromstring(svg)


def test_labels_and_titles_are_escaped():
    svg = ci_bars_svg([BarGroup(HOSTILE, [Bar(HOSTILE, 0.5)])], title=HOSTILE, colors={})
    assert "<script>" not in svg
    root = ET.fromstring(svg)  # would raise on unescaped markup
    assert root.get("aria-label") == HOSTILE
    stacked = stacked_bars_svg([StackRow(HOSTILE, [Segment(HOSTILE, 1, '"red')])], title=HOSTILE)
    heat = heat_map_svg(HeatMap([HOSTILE, "b"], [[None, 0.5], [0.5, None]]), title=HOSTILE)
    for chart in (stacked, heat):
        assert "<script>" not in chart
        assert HOSTILE in "".join(titles(chart)) or HOSTILE in "".join(texts(chart))


def test_stacked_bars_show_shares_of_the_row_total():
    svg = stacked_bars_svg(
        [
            StackRow("Open-ended", [Segment("kept", 3, "#0a0"), Segment("dropped", 1, "#a00")]),
            StackRow("Reasoning", [Segment("kept", 0, "#0a0")], note="nothing aggregated"),
        ],
        title="Outcomes",
    )
    assert "Open-ended · kept: 3 (75.0%)" in titles(svg)
    assert "Open-ended · dropped: 1 (25.0%)" in titles(svg)
    assert "75%" in texts(svg) and "4" in texts(svg)
    # An empty row is "n/a" with its reason, not a zero-width bar.
    assert "nothing aggregated" in titles(svg)
    assert "n/anothing aggregated" in texts(svg) or "nothing aggregatedn/a" in texts(svg)


def test_long_labels_are_clipped_with_full_text_on_hover():
    name = "Factual Correctness / No Hallucination in every single detail"
    svg = stacked_bars_svg([StackRow(name, [Segment("A", 1, "#00f")])], title="t")
    assert name in titles(svg)
    assert any(t.endswith("…") for t in texts(svg))


def test_heat_map_cells_legend_and_undefined_pairs():
    svg = heat_map_svg(
        HeatMap(
            ["ann1", "ann2", "ann3"],
            [[None, 0.81, None], [0.81, None, -0.1], [None, -0.1, None]],
            [[0, 40, 3], [40, 0, 12], [3, 12, 0]],
        ),
        title="κ",
    )
    assert "0.81" in texts(svg) and "-0.10" in texts(svg)
    assert "ann1 × ann2: κ = 0.810, 40 shared items" in titles(svg)
    assert any(t.startswith("ann1 × ann3: n/a") and "3 shared items" in t for t in titles(svg))
    root = ET.fromstring(svg)
    assert root.find(f".//{NS}linearGradient") is not None  # the legend's scale
    # Negative agreement gets a red outline so it is not mistaken for "low but positive".
    assert 'stroke="#b42318"' in svg


def test_heat_color_scale():
    assert heat_color(0) == "#f7fbff"
    assert heat_color(1) == "#08306b"
    assert heat_color(-0.5) == heat_color(0)
    assert heat_color(2) == heat_color(1)


def test_empty_charts_say_so():
    assert "no data yet" in ci_bars_svg([], title="t", colors={})
    assert "no data yet" in stacked_bars_svg([], title="t")
    assert "no pairs yet" in heat_map_svg(HeatMap([], []), title="t")


def test_heat_map_greys_values_on_too_few_shared_items():
    svg = heat_map_svg(
        HeatMap(
            ["a", "b", "c"],
            [[None, 0.9, 0.5], [0.9, None, 0.2], [0.5, 0.2, None]],
            [[30, 4, 25], [4, 30, 25], [25, 25, 30]],
        ),
        title="κ",
        few_below=10,
    )
    hover = titles(svg)
    assert "a × b: κ = 0.900 on only 4 shared items, too few to read" in hover
    assert "a × c: κ = 0.500, 25 shared items" in hover
    root = ET.fromstring(svg)
    grey = [r for r in root.iter(f"{NS}rect") if r.get("fill") == "#f3f4f6"]
    assert [r.get("width") for r in grey if r.get("width") == "40"] == ["40", "40"]  # a × b
    assert any(r.get("width") == "14" for r in grey)  # the legend's "few" swatch
    assert "few" in texts(svg)


def test_lines_draw_one_polyline_per_series_with_hover_values():
    svg = lines_svg(
        ["Dec 1", "Dec 2", "Dec 3"],
        [Series("ann1", [0, 12, 7]), Series(HOSTILE, [3, 0, 0])],
        title="Votes per day",
        unit=" votes",
    )
    root = ET.fromstring(svg)
    assert len(list(root.iter(f"{NS}polyline"))) == 2
    hover = titles(svg)
    assert "ann1 · Dec 2: 12 votes" in hover and f"{HOSTILE} · Dec 1: 3 votes" in hover
    assert "<script>" not in svg
    labels = texts(svg)
    assert "Dec 3" in labels and "15" in labels  # the newest day and a grid value up to 12


def test_lines_without_series_say_so():
    svg = lines_svg(["Dec 1", "Dec 2"], [], title="Votes per day")
    assert "no votes in this period" in texts(svg)
