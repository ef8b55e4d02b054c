"""The leaderboard table as a CSV file or a LaTeX (booktabs) table.

Plain Python on plain records (no Django), so the escaping is tested on its own. Figures are
percentages with two decimals, as on the page; an undefined figure (n/a) is an empty CSV cell
and "--" in LaTeX. The CSV is written by the spreadsheet-safe writer (judge and criterion names
are untrusted).

Each judge may carry its paired test against the judge ranked just above it on the sort column
(:mod:`judging.paired`): the CSV gives that judge, the figure compared, whether the two are
distinguishable (Holm, alpha 0.05) and the Holm-adjusted p; the LaTeX table adds a last column
"yes (p)" / "no (p)" when any judge has one.

The judge's statistics stored on its scorecard follow in the CSV, per criterion
(:func:`statistics_cells`): the alternative annotator test's outcome and winning rate, the judge's
position consistency and κ across runs beside the annotators' κ, and the prediction-powered
estimates with their intervals and effective labels; the LaTeX table adds "Replaces an annotator"
(criteria passed of those tested).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.csv_safe import csv_writer

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}


@dataclass(frozen=True)
class BoardColumn:
    label: str  # as in the table header, e.g. "PAcc" or "Completeness"
    group: str  # "metrics" (PAcc, CMR, TOS, Avg) or "criteria"


@dataclass(frozen=True)
class BoardRow:
    judge: str
    values: Sequence[float | None]  # one per column
    cis: Sequence[Sequence[float] | None]  # 95% CI per column, or None
    runs: int
    template_hash: str
    last_run: str  # ISO date, or ""
    invalid: int
    above: str = ""  # the judge ranked just above, when the two were tested
    compared_on: str = ""  # the figure tested (the sort column's label)
    distinct: bool | None = None  # distinguishable from ``above`` after Holm
    p_holm: float | None = None
    #: The scorecard's statistics as export cells (``statistics_cells``), in column order.
    statistics: Mapping[str, str] = field(default_factory=dict)
    #: Criteria where the judge passed the Alt-Test, of those tested (None: not tested).
    replaces: tuple[int, int] | None = None


def _number(value: Any, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _alt_test_cells(alt: Mapping[str, Any]) -> dict[str, str]:
    cells: dict[str, str] = {}
    per = alt.get("per_criterion") or {}
    for key in alt.get("criteria") or []:
        entry = per.get(key) or {}
        outcome = (
            "refused"
            if entry.get("refused")
            else {True: "passed", False: "failed"}.get(entry.get("passed"), "")
        )
        cells[f"{key} Alt-Test"] = outcome
        cells[f"{key} Alt-Test winning rate"] = _number(entry.get("winning_rate"), 4)
    return cells


def _reliability_cells(reliability: Mapping[str, Any]) -> dict[str, str]:
    cells: dict[str, str] = {}
    per = reliability.get("per_criterion") or {}
    for key in reliability.get("criteria") or []:
        entry = per.get(key) or {}
        cells[f"{key} position consistency"] = _number(entry.get("position_consistency"), 2)
        cells[f"{key} judge kappa across runs"] = _number(entry.get("self_agreement"), 4)
        cells[f"{key} annotators kappa"] = _number(entry.get("annotator_kappa"), 4)
    return cells


def _ppi_cells(ppi: Mapping[str, Any]) -> dict[str, str]:
    cells: dict[str, str] = {}
    targets = {**(ppi.get("per_criterion") or {})}
    if ppi.get("pacc"):
        targets["PAcc"] = ppi["pacc"]
    for key, entry in targets.items():
        low, high = entry.get("ci") or (None, None)
        cells[f"{key} PPI"] = _figure(entry.get("estimate"))
        cells[f"{key} PPI CI low"], cells[f"{key} PPI CI high"] = _figure(low), _figure(high)
        cells[f"{key} PPI effective labels"] = _number(entry.get("effective_n"), 1)
    return cells


def statistics_cells(figures: Mapping[str, Any]) -> dict[str, str]:
    """A scorecard's judge statistics as export cells, per criterion: the Alt-Test's outcome and
    winning rate, the judge's position consistency and κ across runs beside the annotators' κ,
    and the prediction-powered estimates (figures a scorecard lacks give no cell)."""
    return {
        **_alt_test_cells(figures.get("alt_test") or {}),
        **_reliability_cells(figures.get("reliability") or {}),
        **_ppi_cells(figures.get("ppi") or {}),
    }


def replaces_count(figures: Mapping[str, Any]) -> tuple[int, int] | None:
    """(criteria passed, criteria tested) of the Alt-Test, or None when it was not run."""
    alt = figures.get("alt_test") or {}
    if not alt or alt.get("refused"):
        return None
    tested = len(alt.get("passed") or []) + len(alt.get("failed") or [])
    return (len(alt.get("passed") or []), tested) if tested else None


def _p(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def _verdict(row: BoardRow) -> str:
    return "" if row.distinct is None else ("yes" if row.distinct else "no")


def latex_escape(text: str) -> str:
    """``text`` safe in LaTeX body text: every special character spelled out."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _figure(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def board_csv(columns: Sequence[BoardColumn], rows: Sequence[BoardRow]) -> str:
    """One line per judge: each figure with its CI bounds, then the runs' details."""
    out = io.StringIO()
    writer = csv_writer(out)
    header = ["judge"]
    for column in columns:
        header += [column.label, f"{column.label} CI low", f"{column.label} CI high"]
    paired = ["judge above", "compared on", "distinguishable from above", "Holm p vs above"]
    details = ["runs voted", "invalid or missing", "template hash", "last run"]
    extra = list(dict.fromkeys(key for row in rows for key in row.statistics))
    writer.writerow([*header, *details, *paired, *extra])
    for row in rows:
        cells = [row.judge]
        for value, ci in zip(row.values, row.cis, strict=True):
            low, high = ci if ci else (None, None)
            cells += [_figure(value), _figure(low), _figure(high)]
        cells += [str(row.runs), str(row.invalid), row.template_hash, row.last_run]
        cells += [row.above, row.compared_on, _verdict(row), _p(row.p_holm)]
        cells += [row.statistics.get(key, "") for key in extra]
        writer.writerow(cells)
    return out.getvalue()


def _best(rows: Sequence[BoardRow], i: int) -> float | None:
    values = [r.values[i] for r in rows if r.values[i] is not None]
    return max(values) if len(values) > 1 else None


def board_latex(columns: Sequence[BoardColumn], rows: Sequence[BoardRow], *, caption: str) -> str:
    """A booktabs table: grouped headers, the best figure of each column in bold."""
    n_metrics = sum(1 for c in columns if c.group == "metrics")
    n_criteria = len(columns) - n_metrics
    spec = "l" + "r" * n_metrics + ("@{\\quad}" + "r" * n_criteria if n_criteria else "")
    best = [_best(rows, i) for i in range(len(columns))]
    paired = any(row.distinct is not None for row in rows)
    replaces = any(row.replaces is not None for row in rows)
    spec += "l" if paired else ""
    spec += "r" if replaces else ""
    lines = [
        "% Requires \\usepackage{booktabs}.",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{latex_escape(caption)}}}",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
    ]
    groups = [f"\\multicolumn{{{n_metrics}}}{{c}}{{Multi-criterion metrics}}"]
    rules = [f"\\cmidrule(lr){{2-{n_metrics + 1}}}"]
    if n_criteria:
        groups.append(f"\\multicolumn{{{n_criteria}}}{{c}}{{Accuracy per criterion}}")
        rules.append(f"\\cmidrule(lr){{{n_metrics + 2}-{n_metrics + n_criteria + 1}}}")
    groups += ["Paired test"] if paired else []
    groups += ["Alt-Test"] if replaces else []
    lines.append(" & " + " & ".join(groups) + " \\\\")
    lines.append(" ".join(rules))
    heads = ["Judge", *(latex_escape(c.label) for c in columns)]
    heads += ["Distinct from above"] if paired else []
    heads += ["Replaces an annotator"] if replaces else []
    lines.append(" & ".join(heads) + " \\\\")
    lines.append("\\midrule")
    for row in rows:
        cells = [latex_escape(row.judge)]
        for i, value in enumerate(row.values):
            text = "--" if value is None else f"{value:.2f}"
            if value is not None and value == best[i]:
                text = f"\\textbf{{{text}}}"
            cells.append(text)
        if paired:
            cells.append(
                f"{_verdict(row)} ({row.p_holm:.4f})" if row.distinct is not None else "--"
            )
        if replaces:
            cells.append(f"{row.replaces[0]}/{row.replaces[1]}" if row.replaces else "--")
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)
