"""The dataset card of a version: a Markdown summary generated from its frozen manifest.

Counts per split and criterion, the agreement figures, the aggregation rule and the provenance
(project, build, options, files and checksums), then the lead's notes. Plain Python, no Django:
the version page renders the same text it offers for download.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.text import counted

SPLIT_NAMES = {"open_ended": "Open-ended", "reasoning": "Reasoning"}
STAT_NAMES = (
    ("cohen", "Cohen's κ (mean over annotator pairs)"),
    ("fleiss", "Fleiss' κ"),
    ("alpha", "Krippendorff's α (nominal)"),
)


def md_cell(value: Any) -> str:
    """A value safe in a Markdown table cell (no pipe, no line break, no HTML)."""
    text = " ".join(str(value).split())
    for ch, repl in (("\\", "\\\\"), ("|", "\\|"), ("<", "&lt;"), (">", "&gt;")):
        text = text.replace(ch, repl)
    return text


def _table(header: list[str], rows: list[list[Any]], right: set[int] = frozenset()) -> list[str]:
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |"]
    lines.append("|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _stat(stat: Mapping[str, Any] | None) -> str:
    if not stat:
        return "not recorded"
    value = stat.get("value")
    if value is None:
        return f"n/a ({stat.get('undefined_reason') or 'undefined'})"
    text = f"{value:.3f}"
    ci = stat.get("ci")
    if ci and None not in ci:
        text += f" (95% CI {ci[0]:.3f}–{ci[1]:.3f})"
    return text


def _agreement_notes(stat: Mapping[str, Any] | None) -> str:
    if not stat:
        return ""
    bits = []
    if stat.get("pairs_used") is not None:
        bits.append(f"{counted(stat['pairs_used'], 'annotator pair')} used")
    if stat.get("min_overlap") is not None:
        bits.append(f"a pair needs {counted(stat['min_overlap'], 'shared item')}")
    if stat.get("items") is not None:
        bits.append(counted(stat["items"], "item"))
    return "; ".join(bits)


def dataset_card(
    manifest: Mapping[str, Any],
    *,
    criterion_names: Mapping[tuple[str, str], str] | None = None,
    notes: str = "",
) -> str:
    """The card as Markdown. ``criterion_names`` maps (split, key) to the criterion's name."""
    names = criterion_names or {}
    project = manifest.get("project") or {}
    counts = manifest.get("counts") or {}
    per_split = counts.get("per_split") or {}
    options = manifest.get("options") or {}
    rule = manifest.get("aggregation_rule") or {}
    agreement = manifest.get("agreement") or {}
    labels = manifest.get("labels") or {}
    out = [
        f"# {project.get('name', project.get('slug', 'Dataset'))}: dataset version "
        f"{manifest.get('version')}",
        "",
        "Criterion-level human preferences between two responses to a multimodal prompt: one "
        "row per kept (prompt, criterion), with the preferred response (`model_a` or `model_b`).",
        "",
        "## Contents",
        "",
        *_table(
            ["", "Count"],
            [
                ["Rows (prompt × criterion)", f"{counts.get('rows', 0):,}"],
                ["Prompts", f"{counts.get('prompts', 0):,}"],
                ["Images", f"{counts.get('images', 0):,}"],
                ["Prompts with a criterion conflict", _share(counts.get("conflict_share"))],
            ],
            right={1},
        ),
        "## Rows per split and criterion",
        "",
    ]
    rows = []
    for split, stats in sorted(per_split.items()):
        label = SPLIT_NAMES.get(split, split)
        for key, n in sorted((stats.get("per_criterion") or {}).items()):
            rows.append([label, names.get((split, key), key), f"`{key}`", f"{n:,}"])
        rows.append(
            [
                f"**{label}, all**",
                f"{counted(stats.get('prompts', 0), 'prompt')}, "
                f"{_share(stats.get('conflict_share'))} with a conflict",
                "",
                f"**{stats.get('rows', 0):,}**",
            ]
        )
    out += _table(["Split", "Criterion", "Key", "Rows"], rows, right={3})

    out += ["## Agreement", ""]
    if labels.get("provenance") == "published":
        out += [
            "The labels are the published ones: there are no votes to measure agreement on.",
            "",
        ]
    elif not agreement:
        out += ["No agreement figures were recorded when this version was built.", ""]
    else:
        stat_rows = []
        for split, figures in sorted(agreement.items()):
            label = SPLIT_NAMES.get(split, split)
            for key, name in STAT_NAMES:
                stat = figures.get(key)
                stat_rows.append([label, name, _stat(stat), _agreement_notes(stat)])
        out += _table(["Split", "Statistic", "Value", "Basis"], stat_rows)
        out += ["Categories: A, B, tie. Figures of the aggregation the version was built from.", ""]

    out += ["## Aggregation rule", ""]
    if rule:
        out.append(f"Rule `{rule.get('name', '')}`, for each (sample, criterion):")
        out.append("")
        for kind, text in (rule.get("kept") or {}).items():
            out.append(f"- kept ({kind}): {text}")
        for kind, text in (rule.get("dropped") or {}).items():
            out.append(f"- dropped ({kind}): {text}")
        for key in ("review", "conflict"):
            if rule.get(key):
                out.append(f"- {key}: {rule[key]}")
        out.append("")

    out += ["## Provenance", ""]
    facts = [
        ["Project", f"{project.get('name', '')} (`{project.get('slug', '')}`)"],
        ["Version", str(manifest.get("version", ""))],
        [
            "Built",
            f"{manifest.get('created', '')} by {manifest.get('created_by') or 'the command line'}",
        ],
        ["Annotators per sample", str(options.get("annotators_per_sample", ""))],
        ["Individual votes included", "yes" if options.get("include_votes") else "no"],
        ["Seed (calibration) samples included", "yes" if options.get("include_seeds") else "no"],
    ]
    if options.get("include_contested"):
        contested = (manifest.get("counts") or {}).get("contested") or {}
        facts.append(
            ["Contested split (dropped labels, with votes)", f"{contested.get('rows', 0)} rows"]
        )
    if project.get("label_scale") and project["label_scale"] != "pairwise":
        facts.append(["Label scale", f"{project['label_scale']}: {project.get('scale_rule', '')}"])
    if labels.get("provenance") == "published":
        facts.append(
            ["Labels", f"published release: {', '.join(labels.get('source_files') or [])}"]
        )
    facts.append(["Data checksum (SHA-256)", f"`{manifest.get('data_sha256', '')}`"])
    out += _table(["", ""], facts)
    files = manifest.get("files") or []
    if files:
        out += _table(
            ["File", "Kind", "Bytes", "SHA-256"],
            [[f["name"], f["kind"], f"{f.get('size', 0):,}", f"`{f['sha256']}`"] for f in files],
            right={2},
        )
    columns = manifest.get("columns") or []
    if columns:
        out += ["Columns: " + ", ".join(f"`{c}`" for c in columns) + ".", ""]
    if notes.strip():
        out += ["## Notes", "", notes.strip(), ""]
    return "\n".join(out)
