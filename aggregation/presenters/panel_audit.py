"""The dashboard's judge panel section: the agreement chart of the panel on the audit share."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString

from .. import charts
from ..selectors.panel_audit import AgreementRow, PanelAudit
from .dashboard import FEW_ITEMS, NARROW, both_widths

SERIES = "Panel agrees with the humans"
COLORS = {SERIES: "#6a4c93"}


def _bar(row: AgreementRow) -> charts.Bar:
    if row.agreement is None:
        note = "the panel named no side on a kept label"
    else:
        note = f"{row.agreed} of {row.covered}" + (
            f"; 95% CI {row.ci[0]:.2f} to {row.ci[1]:.2f}" if row.ci else ""
        )
    few = row.agreement is not None and row.covered < FEW_ITEMS
    if few:
        note = f"only {row.covered} items, too few to read; {note}"
    return charts.Bar(series=SERIES, value=row.agreement, ci=row.ci, note=note, few=few)


def panel_audit_chart(figures: PanelAudit) -> SafeString:
    """Bars with bootstrap CIs: the panel's agreement per criterion, all criteria first."""
    rows = [figures.overall, *figures.rows] if figures.overall else figures.rows
    groups = [charts.BarGroup(label=r.label, bars=[_bar(r)]) for r in rows]
    return both_widths(
        lambda narrow: charts.ci_bars_svg(
            groups,
            title="The judge panel's agreement with the kept human labels, audit share",
            colors=COLORS,
            width=NARROW if narrow else 640,
            label_width=150 if narrow else 240,
        )
    )


def panel_audit_present(figures: PanelAudit) -> dict[str, Any]:
    """What the section's template reads."""
    return {
        "figures": figures,
        "chart": panel_audit_chart(figures) if figures.has_panel else "",
        "few_items": FEW_ITEMS,
    }
