"""The lead's dashboard as text: statistics with hover text, the κ matrix cells and the charts.

The selectors in :mod:`aggregation.selectors.dashboard` return numbers; this module turns
them into what the template shows, without touching the database.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from aggregation.selectors.dashboard import STATISTICS, Dashboard
from core.text import counted

from .. import charts

# A statistic on fewer (sample, criterion) items than this is shown greyed with its count, not
# coloured as a reading: on a handful of items κ swings from chance to perfect by luck.
FEW_ITEMS = 10

SERIES_COLORS = {"κ (Cohen)": "#1f5fbf", "Fleiss' κ": "#2a9d8f", "α (Krippendorff)": "#e09f3e"}
SERIES_NAMES = {"cohen": "κ (Cohen)", "fleiss": "Fleiss' κ", "alpha": "α (Krippendorff)"}
OUTCOME_COLORS = {
    "kept_unanimous": "#1f7a3f",
    "kept_majority_tie": "#74b488",
    "dropped_split": "#b42318",
    "dropped_ties": "#e07a5f",
    "dropped_missing": "#9aa1ab",
}


def stat_display(
    stat: dict[str, Any] | None, *, digits: int = 2, items: int | None = None
) -> dict[str, Any]:
    """A statistic object of AgreementSnapshot.figures as text plus hover text; n/a stays n/a.

    ``few`` marks a value on fewer than FEW_ITEMS items (its own count, else ``items``).
    """
    if not stat:
        return {
            "text": "n/a",
            "title": "not computed yet: run the aggregation",
            "value": None,
            "ci": None,
            "undefined": True,
        }
    value = stat.get("value")
    if value is None:
        reason = stat.get("undefined_reason") or "undefined"
        return {"text": "n/a", "title": reason, "value": None, "ci": None, "undefined": True}
    ci = stat.get("ci")
    bits = []
    if ci and None not in ci:
        bits.append(f"95% CI {ci[0]:.{digits}f} to {ci[1]:.{digits}f}")
    if stat.get("pairs_used") is not None:
        bits.append(
            f"{counted(stat['pairs_used'], 'pair')} used, {stat.get('pairs_skipped', 0)} skipped"
        )
    if stat.get("min_overlap") is not None:
        bits.append(f"pairs need {counted(stat['min_overlap'], 'shared item')}")
    if stat.get("smallest_overlap") is not None:
        bits.append(f"smallest overlap used {stat['smallest_overlap']}")
    if stat.get("weighted_value") is not None:
        bits.append(f"overlap-weighted {stat['weighted_value']:.{digits}f}")
    if stat.get("items") is not None:
        bits.append(counted(stat["items"], "item"))
    if stat.get("items_excluded"):
        bits.append(f"{counted(stat['items_excluded'], 'item')} left out")
    n = stat.get("items", items)
    few = n is not None and n < FEW_ITEMS
    if few:
        bits.insert(0, f"only {counted(n, 'item')}: too few to read")
    return {
        "text": f"{value:.{digits}f}",
        "title": " · ".join(bits),
        "value": value,
        "ci": ci if ci and None not in ci else None,
        "undefined": False,
        "few": few,
        "n": n,
    }


def _stats(raw: dict[str, Any], items: int | None = None) -> dict[str, dict[str, Any]]:
    """Each statistic of STATISTICS as :func:`stat_display` shows it."""
    return {name: stat_display(raw.get(name), items=items) for name, _ in STATISTICS}


def matrix_cell(name: str, other: str, value: float | None, shared: int | None) -> dict[str, Any]:
    """One off-diagonal cell of the pairwise κ matrix: the value as text, the overlap as title."""
    if value is None:
        return {
            "text": "n/a",
            "title": f"{name} × {other}: {shared or 0} shared items, undefined",
            "undefined": True,
            "shared": shared,
        }
    few = shared is not None and shared < FEW_ITEMS
    return {
        "text": f"{value:.2f}",
        "title": f"{name} × {other}: {shared} shared item{'' if shared == 1 else 's'}"
        + (", too few to read" if few else ""),
        "undefined": False,
        "shared": shared,
        "few": few,
    }


def pairwise_matrix(pairwise: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the pairwise κ matrix; a missing value or overlap counts as undefined."""
    names = pairwise["annotators"]
    kappa, overlap = pairwise["kappa"], pairwise["overlap"]
    matrix = []
    for i, name in enumerate(names):
        cells = []
        for j, other in enumerate(names):
            if i == j:
                cells.append(
                    {"text": "", "title": "", "undefined": False, "diagonal": True, "shared": None}
                )
                continue
            value = kappa[i][j] if i < len(kappa) and j < len(kappa[i]) else None
            shared = overlap[i][j] if i < len(overlap) and j < len(overlap[i]) else None
            cells.append(matrix_cell(name, other, value, shared))
        matrix.append({"name": name, "cells": cells})
    return matrix


def agreement_row_present(row: dict[str, Any]) -> dict[str, Any]:
    """An agreement row of the selector with its statistics as text and the κ matrix."""
    return {
        **row,
        "overall": _stats(row["raw_overall"], row.get("items")),
        "per_criterion": [
            {**c, "stats": _stats(c["raw"], c.get("items"))} for c in row["per_criterion"]
        ],
        "matrix": pairwise_matrix(row["pairwise"]),
    }


def annotator_present(annotator: dict[str, Any]) -> dict[str, Any]:
    """An annotator row with their κ against the others, per split, as text."""
    return {
        **annotator,
        "agreement": [
            {**ag, "stat": stat_display(ag["cohen_vs_others"], items=ag.get("items"))}
            for ag in annotator["agreement"]
        ],
    }


def dashboard_present(figures: Dashboard) -> Dashboard:
    """The selector's figures with the text the template shows added; the numbers stay."""
    return replace(
        figures,
        annotators=[annotator_present(a) for a in figures.annotators],
        agreement=[agreement_row_present(r) for r in figures.agreement],
    )


# Phones get a narrower drawing of each chart (same numbers), so that its text stays readable
# instead of shrinking to a third; the stylesheet shows one or the other.
NARROW = 380


def both_widths(draw: Callable[[bool], str]) -> SafeString:
    """The desktop and the phone drawing of one chart, ``draw(narrow)`` each."""
    return mark_safe(
        f'<div class="chart-wide">{draw(False)}</div><div class="chart-narrow">{draw(True)}</div>'
    )


def _bar(stat: dict[str, Any] | None, series: str, items: int | None = None) -> charts.Bar:
    """One bar of the agreement chart: the value, its interval and the note under it."""
    stat = stat or {}
    value = stat.get("value")
    ci = stat.get("ci") if value is not None else None
    if value is None:
        note = stat.get("undefined_reason") or "not computed yet"
    else:
        note = f"95% CI {ci[0]:.2f} to {ci[1]:.2f}" if ci and None not in ci else "no CI"
    n = stat.get("items", items)
    few = value is not None and n is not None and n < FEW_ITEMS
    if few:
        note = f"only {n} item{'' if n == 1 else 's'}, too few to read; {note}"
    return charts.Bar(series=series, value=value, ci=ci, note=note, few=few)


def _agreement_chart(row: dict[str, Any]) -> SafeString:
    """The bars of every statistic, overall and per criterion, of one split."""
    groups = [
        charts.BarGroup(
            label="All criteria",
            bars=[
                _bar(row["raw_overall"][k], SERIES_NAMES[k], row.get("items"))
                for k, _ in STATISTICS
            ],
        )
    ] + [
        charts.BarGroup(
            label=c["name"],
            bars=[_bar(c["raw"][k], SERIES_NAMES[k], c.get("items")) for k, _ in STATISTICS],
        )
        for c in row["per_criterion"]
    ]
    return both_widths(
        lambda narrow: charts.ci_bars_svg(
            groups,
            title=f"Agreement per criterion, {row['label']}",
            colors=SERIES_COLORS,
            width=NARROW if narrow else 640,
            label_width=120 if narrow else None,
        )
    )


def _heat_map(row: dict[str, Any]) -> SafeString:
    """The pairwise Cohen's κ of one split as a heat map."""
    pairwise = row["pairwise"]
    return both_widths(
        lambda narrow: charts.heat_map_svg(
            charts.HeatMap(
                labels=pairwise["annotators"],
                values=pairwise["kappa"],
                overlap=pairwise["overlap"],
            ),
            title=f"Cohen's κ per annotator pair, {row['label']}",
            few_below=FEW_ITEMS,
            cell=30 if narrow else 40,
            label_width=70 if narrow else 110,
        )
    )


def _outcomes_chart(results: list[dict[str, Any]]) -> SafeString:
    """The labels kept and dropped, by reason, one row per split."""
    return both_widths(
        lambda narrow: charts.stacked_bars_svg(
            [
                charts.StackRow(
                    label=r["label"],
                    segments=[
                        charts.Segment(o["label"], o["n"], OUTCOME_COLORS[o["outcome"]])
                        for o in r["outcomes"]
                    ],
                )
                for r in results
            ],
            title="Labels kept and dropped, by reason",
            width=NARROW if narrow else 640,
            label_width=90 if narrow else None,
        )
    )


def _balance_chart(result: dict[str, Any]) -> SafeString:
    """The kept labels preferring A vs B, per criterion of one split."""
    return both_widths(
        lambda narrow: charts.stacked_bars_svg(
            [
                charts.StackRow(
                    label=b["criterion"].name,
                    segments=[
                        charts.Segment("A preferred", b["a"], "#1f5fbf"),
                        charts.Segment("B preferred", b["b"], "#7a3fb4"),
                    ],
                    note="no kept label for this criterion",
                )
                for b in result["balance"]
            ],
            title=f"Kept labels preferring A vs B, {result['label']}",
            width=NARROW if narrow else 560,
            label_width=120 if narrow else None,
        )
    )


def dashboard_charts(figures: Dashboard) -> dict[str, Any]:
    """The SVG charts of the page (already escaped by the chart functions)."""
    out: dict[str, Any] = {"agreement": {}, "heat": {}, "outcomes": None, "balance": {}}
    for row in figures.agreement:
        out["agreement"][row["split"]] = _agreement_chart(row)
        out["heat"][row["split"]] = _heat_map(row)
    if figures.results:
        out["outcomes"] = _outcomes_chart(figures.results)
        for r in figures.results:
            out["balance"][r["split"]] = _balance_chart(r)
    return out
