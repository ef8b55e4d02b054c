"""Score judges' prediction files and format the results in the paper's table layout.

``score_judges`` builds one JSON-serialisable payload with every figure and count; the
formatters render it per split as a text table, a Markdown table (rows = judges, columns PAcc /
CMR / TOS / Avg, then each criterion, as in the published tables) or JSON. ``compare_judges``
and ``render_compare`` do the same for the paired comparison of two judges. No Django here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.text import counted
from judging.metrics import (
    ScoreInput,
    criteria_in_order,
    encode_predictions,
    majority_vote_codes,
    score_runs,
)
from judging.paired import HEADLINE_LABELS, N_BOOT, p_text, paired_compare
from judging.predictions import ParsedPredictions

HEADLINE = (("PAcc", "pacc"), ("CMR", "cmr"), ("TOS", "tos"), ("Avg", "avg"))
FORMATS = ("table", "json", "markdown")


@dataclass(frozen=True)
class JudgeInput:
    """One judge's parsed predictions file."""

    name: str
    source: str
    parsed: ParsedPredictions


def judge_name(path: str | Path, parsed: ParsedPredictions) -> str:
    """The ``judge`` field of the file, else the file name without its extension."""
    return parsed.judge or Path(path).name.split(".")[0]


MISSING_POLICIES = ("wrong", "skip")
_SKIPPED_SHOWN = 20


def score_judges(
    rows: ScoreInput,
    judges: Sequence[JudgeInput],
    *,
    dataset: str,
    split: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    missing: str = "wrong",
) -> dict:
    """Every figure of every judge (runs majority-voted), per split, never pooled.

    ``missing="wrong"`` (the published evaluation's rule) scores a dataset row without any
    prediction as wrong; ``missing="skip"`` leaves such rows out (a partial run) and names them.
    ``dataset_warnings`` repeats what the rows' reader noticed (tie labels, prompts in two splits).
    """
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {', '.join(MISSING_POLICIES)}, got {missing!r}")
    scope = np.ones(len(rows), dtype=bool) if split is None else rows.split == split
    scored = rows if split is None else rows.take(scope)
    splits = scored.splits
    out: dict[str, Any] = {
        "dataset": dataset,
        "splits": {s: {"rows": int((scored.split == s).sum()), "criteria": []} for s in splits},
        "bootstrap": {"n_boot": n_boot, "seed": seed, "unit": "prompt"},
        "missing": missing,
        "dataset_warnings": list(rows.warnings),
        "judges": {},
    }
    for judge in judges:
        arrays = [a[scope] for a in judge.parsed.run_list()]
        judge_rows, skipped = scored, {}
        if missing == "skip":
            present = ~np.logical_and.reduce([np.equal(a, None) for a in arrays])
            skipped = {
                s: scored.question_id[~present & (scored.split == s)].tolist() for s in splits
            }
            judge_rows = scored.take(present)
            arrays = [a[present] for a in arrays]
        result = score_runs(judge_rows, arrays, n_boot=n_boot, seed=seed)
        entry: dict[str, Any] = {
            "source": judge.source,
            "runs": judge.parsed.run_indices,
            "parse": judge.parsed.stats(),
            "scores": result["vote"],
            "skipped": skipped,
        }
        if result["n_runs"] > 1:
            entry["per_run"] = {
                str(r): scores
                for r, scores in zip(judge.parsed.run_indices, result["runs"], strict=True)
            }
        out["judges"][judge.name] = entry
    for s in splits:
        keys = {
            k
            for j in out["judges"].values()
            if s in j["scores"]
            for k in j["scores"][s]["per_criterion"]
        }
        out["splits"][s]["criteria"] = criteria_in_order(s, sorted(keys))
    return out


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def split_table(payload: dict, split: str, *, runs: bool = False) -> tuple[list[str], list[list]]:
    """Header and rows of one split: a row per judge (and per run when ``runs``)."""
    criteria = payload["splits"][split]["criteria"]
    header = ["Judge", *(h for h, _ in HEADLINE), *criteria]
    body: list[list[str]] = []

    def row(label: str, scores: dict | None) -> list[str]:
        if scores is None:  # every row of the split was skipped (--missing skip)
            return [label, *("n/a" for _ in header[1:])]
        head = [_cell(scores[key]["value"]) for _, key in HEADLINE]
        per = scores["per_criterion"]
        return [label, *head, *(_cell(per[c]["acc"]) if c in per else "n/a" for c in criteria)]

    for name, judge in payload["judges"].items():
        n_runs = len(judge["runs"])
        label = name if n_runs == 1 else f"{name} (vote of {n_runs})"
        body.append(row(label, judge["scores"].get(split)))
        if runs and n_runs > 1:
            for r, scores in judge["per_run"].items():
                body.append(row(f"  {name} run {r}", scores.get(split)))
    return header, body


def _split_title(payload: dict, split: str) -> str:
    counts: dict = next(
        (j["scores"][split]["counts"] for j in payload["judges"].values() if split in j["scores"]),
        {},
    )
    return (
        f"{split}: prompts {counts.get('prompts', 0):,} · rows {counts.get('rows', 0):,} · "
        f"prompts with a conflict {counts.get('conflict_prompts', 0):,} · "
        f"conflicting pairs {counts.get('conflict_pairs', 0):,}"
    )


def _notes(payload: dict, split: str) -> list[str]:
    notes = []
    skip = payload.get("missing") == "skip"
    for name, judge in payload["judges"].items():
        skipped = judge.get("skipped", {}).get(split, [])
        s = judge["scores"].get(split)
        if s is None:
            notes.append(f"{name}: no predictions in this split; all its rows skipped")
            continue
        c, d = s["counts"], s["diagnostics"]
        missing = (
            f"missing {c['missing']}"
            if skip
            else f"missing {c['missing']} (counted as wrong; --missing skip leaves them out)"
        )
        notes.append(
            f"{name}: invalid {c['invalid']}, {missing}; same verdict on every "
            f"criterion in {_cell(d['same_verdict_share'])}% of prompts; predicts A "
            f"{_cell(d['pred_a_share'])}% (humans {_cell(d['human_a_share'])}%)"
        )
        if skip and skipped:
            shown = ", ".join(skipped[:_SKIPPED_SHOWN])
            more = (
                f" and {len(skipped) - _SKIPPED_SHOWN} more"
                if len(skipped) > _SKIPPED_SHOWN
                else ""
            )
            rows = counted(len(skipped), "row")
            notes.append(f"{name}: {rows} without a prediction skipped: {shown}{more}")
    return notes


def format_table(payload: dict, *, runs: bool = False) -> str:
    """Aligned plain-text tables, one per split."""
    blocks = []
    for split in payload["splits"]:
        header, body = split_table(payload, split, runs=runs)
        widths = [max(len(str(r[i])) for r in [header, *body]) for i in range(len(header))]

        def line(cells: list[str], widths: list[int] = widths) -> str:
            first = cells[0].ljust(widths[0])
            rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
            return "  ".join([first, *rest]).rstrip()

        rule = "  ".join("-" * w for w in widths)
        lines = [_split_title(payload, split), line(header), rule, *map(line, body)]
        blocks.append("\n".join([*lines, "", *_notes(payload, split)]))
    return "\n\n".join(blocks) + "\n"


def format_markdown(payload: dict, *, runs: bool = False) -> str:
    """GitHub-flavoured Markdown tables, one section per split."""
    blocks = []
    for split in payload["splits"]:
        header, body = split_table(payload, split, runs=runs)
        lines = [
            f"### {_split_title(payload, split)}",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "|".join([":---", *["---:"] * (len(header) - 1)]) + "|",
            *("| " + " | ".join(r).replace("|  ", "| ") + " |" for r in body),
            "",
            *(f"- {n}" for n in _notes(payload, split)),
        ]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def format_json(payload: dict) -> str:
    """Every figure and count, indented JSON."""
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def render(payload: dict, fmt: str, *, runs: bool = False) -> str:
    """The payload in one of ``FORMATS``."""
    if fmt == "json":
        return format_json(payload)
    if fmt == "markdown":
        return format_markdown(payload, runs=runs)
    if fmt == "table":
        return format_table(payload, runs=runs)
    raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")


# --- Two judges compared (score_judge --compare) ------------------------------------------


def _voted(judge: JudgeInput, scope: np.ndarray) -> np.ndarray:
    """The judge's verdict codes on the rows of ``scope`` (several runs majority-voted)."""
    runs = np.stack([encode_predictions(a[scope]) for a in judge.parsed.run_list()])
    return runs[0] if len(runs) == 1 else majority_vote_codes(runs)


def compare_judges(
    rows: ScoreInput,
    judge_a: JudgeInput,
    judge_b: JudgeInput,
    *,
    dataset: str,
    split: str | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> dict:
    """The paired comparison of judge A with judge B on each split (:mod:`judging.paired`)."""
    scope = np.ones(len(rows), dtype=bool) if split is None else rows.split == split
    scored = rows if split is None else rows.take(scope)
    a, b = _voted(judge_a, scope), _voted(judge_b, scope)
    return {
        "dataset": dataset,
        "judge_a": judge_a.name,
        "judge_b": judge_b.name,
        "bootstrap": {"n_boot": n_boot, "seed": seed, "unit": "prompt"},
        "splits": {
            s: paired_compare(scored, a, b, split=s, n_boot=n_boot, seed=seed).as_dict()
            for s in scored.splits
        },
    }


def _ci_cell(ci: list[float] | None) -> str:
    return "n/a" if not ci else f"{ci[0]:.2f} to {ci[1]:.2f}"


def _tested(f: dict) -> list[str]:
    return [p_text(f["p"]), p_text(f["p_holm"]), f["verdict"]]


def compare_tables(payload: dict, split: str) -> list[tuple[list[str], list[list[str]]]]:
    """The two tables of one split: per criterion (McNemar), then the headline differences."""
    paired = payload["splits"][split]
    crit = [
        [f["key"], _cell(f["a"]), _cell(f["b"]), str(f["only_a"]), str(f["only_b"]), *_tested(f)]
        for f in paired["criteria"]
    ]
    head = [
        [
            HEADLINE_LABELS[f["key"]],
            _cell(f["a"]),
            _cell(f["b"]),
            _cell(f["diff"]),
            _ci_cell(f["ci"]),
            *_tested(f),
        ]
        for f in paired["headline"]
    ]
    return [
        (["Criterion", "A", "B", "b", "c", "p", "Holm p", "Verdict"], crit),
        (["Figure", "A", "B", "A - B", "95% interval", "p", "Holm p", "Verdict"], head),
    ]


def _compare_title(payload: dict, split: str) -> str:
    paired = payload["splits"][split]
    return (
        f"{split}: A = {payload['judge_a']}, B = {payload['judge_b']} · exact McNemar per "
        f"criterion, paired bootstrap over prompts ({paired['n_boot']} draws, seed "
        f"{paired['seed']}) for the differences · Holm over {paired['family']} figures, "
        f"alpha {paired['alpha']}"
    )


def _aligned(header: list[str], body: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        middle = (c.rjust(w) for c, w in zip(cells[1:-1], widths[1:-1], strict=True))
        return "  ".join([first, *middle, cells[-1]]).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *map(line, body)]


def render_compare(payload: dict, fmt: str) -> str:
    """The paired comparison as aligned text tables, Markdown or JSON."""
    if fmt == "json":
        return format_json(payload)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    blocks = []
    for split in payload["splits"]:
        tables = compare_tables(payload, split)
        if fmt == "table":
            lines = [_compare_title(payload, split)]
            for header, body in tables:
                lines += ["", *_aligned(header, body)]
        else:
            lines = [f"### {_compare_title(payload, split)}"]
            for header, body in tables:
                lines += ["", "| " + " | ".join(header) + " |"]
                lines.append("|" + "|".join([":---", *["---:"] * (len(header) - 2), ":---"]) + "|")
                lines += ["| " + " | ".join(r) + " |" for r in body]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
