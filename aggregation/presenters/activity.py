"""The dashboard's alerts and throughput chart, as text and SVG (no database)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from aggregation.selectors.activity import Throughput
from annotation import tiecap

from .. import charts
from .dashboard import NARROW, both_widths

# An annotator who has used this share of the tie allowance is warned before the refusals start.
NEAR_TIE_CAP = 0.8
# Below this Cohen's κ against the others (on enough items) an annotator reads the criteria
# differently from the team: worth a look at their rationales, or another calibration round.
LOW_KAPPA = 0.4


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 vote``, ``2 votes`` (``many`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def dashboard_alerts(
    annotators: list[dict[str, Any]], agreement: list[dict[str, Any]], *, cap: Decimal
) -> list[dict[str, Any]]:
    """What needs the lead's attention: tie caps reached or near, low agreement.

    ``annotators`` and ``agreement`` are the presented dashboard rows (with ``stat`` texts).
    Each alert: ``level`` (bad / warn), ``text``, and ``annotator_id`` for the drill-down.
    """
    alerts: list[dict[str, Any]] = []
    cap_text = f"{float(cap) * 100:g}%"
    for a in annotators:
        ties, votes = a["ties"], a["done"]
        counts = f"{plural(ties, 'tie')} in {plural(votes, 'vote')}"
        if tiecap.at_cap(ties=ties, votes=votes, cap=cap):
            alerts.append(
                {
                    "level": "bad",
                    "annotator_id": a["id"],
                    "username": a["username"],
                    "text": f"is at the tie cap: {counts} (cap {cap_text}); "
                    "further ties are refused until more votes are cast.",
                }
            )
        elif (a["tie_cap_used"] or 0) >= NEAR_TIE_CAP:
            alerts.append(
                {
                    "level": "warn",
                    "annotator_id": a["id"],
                    "username": a["username"],
                    "text": f"is near the tie cap: {counts} (cap {cap_text}).",
                }
            )
        for ag in a["agreement"]:
            stat = ag["stat"]
            if stat["undefined"] or stat.get("few") or stat["value"] >= LOW_KAPPA:
                continue
            items = f" over {plural(stat['n'], 'item')}" if stat.get("n") else ""
            alerts.append(
                {
                    "level": "warn",
                    "annotator_id": a["id"],
                    "username": a["username"],
                    "text": f"agrees little with the others on {ag['label']}: Cohen's κ "
                    f"{stat['text']}{items} (below {LOW_KAPPA}).",
                }
            )
    for row in agreement:
        stat = row["overall"]["cohen"]
        if not stat["undefined"] and not stat.get("few") and stat["value"] < LOW_KAPPA:
            alerts.append(
                {
                    "level": "warn",
                    "annotator_id": None,
                    "username": "",
                    "text": f"Agreement on {row['label']} is low: Cohen's κ {stat['text']} "
                    f"(below {LOW_KAPPA}); the criteria may need another calibration round.",
                }
            )
    return alerts


def throughput_present(data: Throughput) -> dict[str, Any]:
    """The votes-per-day chart and the table beside it (one row per annotator, one column a day)."""
    labels = [f"{d:%b} {d.day}" for d in data.days]
    lines = [charts.Series(name, values) for name, values in data.series.items()]
    chart = both_widths(
        lambda narrow: charts.lines_svg(
            labels,
            lines,
            title="Formal votes per day per annotator",
            unit=" votes",
            width=NARROW if narrow else 640,
            height=260 if narrow else 220,
        )
    )
    rows = [
        {
            "username": name,
            "user_id": data.user_ids[name],
            # Newest first: on a phone the recent days are the ones in view.
            "counts": list(zip(data.days, values, strict=True))[::-1],
            "total": sum(values),
        }
        for name, values in data.series.items()
    ]
    return {
        "chart": chart,
        "days": data.days,
        "labels": labels[::-1],
        "rows": rows,
        "totals": data.totals,
        "total": sum(data.totals),
    }
