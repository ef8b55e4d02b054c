"""The curation funnel as text (command output) and as a server-side SVG chart (the page)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aggregation.charts import Segment, StackRow, stacked_bars_svg
from annotation.splits import LABELS as SPLIT_LABELS

FILTER_LABELS = {
    "length": "length",
    "correctness": "correctness",
    "ensemble": "ensemble",
}
COLORS = {"length": "#c2410c", "correctness": "#a16207", "ensemble": "#7c3aed", "kept": "#15803d"}


def row_label(row: dict[str, Any]) -> str:
    """``Reasoning · MathVista``; the total row is ``All``."""
    if row["split"] == "all":
        return "All"
    split = SPLIT_LABELS.get(row["split"], row["split"])
    return f"{split} · {row['source'] or '(no source)'}"


def funnel_columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The filters that ran, in order (the total row lists them)."""
    return list(rows[-1]["removed"]) if rows else []


def funnel_text(rows: Sequence[dict[str, Any]]) -> str:
    """A plain-text table: per split and source, pairs in, removed by each filter, out."""
    columns = funnel_columns(rows)
    header = ["split · source", "in", *[f"-{c}" for c in columns], "out"]
    body = [
        [row_label(r), str(r["in"]), *[str(r["removed"].get(c, 0)) for c in columns], str(r["out"])]
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = []
    for line in [header, *body]:
        cells = [line[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def funnel_svg(rows: Sequence[dict[str, Any]]) -> str:
    """One 100% bar per split and source (and the total): removed by each filter, then kept."""
    columns = funnel_columns(rows)
    stacks = [
        StackRow(
            label=row_label(r),
            segments=[
                *[
                    Segment(
                        f"removed: {FILTER_LABELS.get(c, c)}",
                        r["removed"].get(c, 0),
                        COLORS.get(c, "#64748b"),
                    )
                    for c in columns
                ],
                Segment("kept", r["out"], COLORS["kept"]),
            ],
            note="no pairs",
        )
        for r in rows
    ]
    return stacked_bars_svg(stacks, title="Curation funnel: where the pairs went")
