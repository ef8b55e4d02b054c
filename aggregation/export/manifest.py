"""The manifest of a dataset version: what it holds, how it was made, and the files' checksums.

The data files (JSONL, zip, Parquet) are reproducible: building again from the same labels gives
the same bytes. The manifest itself is not (it holds the version number and the build time), so
its ``files`` section, and ``data_sha256`` which digests it, are the reproducibility witness.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from annotation.pseudonyms import pseudonym_position

MANIFEST_NAME = "manifest.json"
FORMAT = "multi-crit-studio/dataset@1"

# Protocol section 5 (aggregation.rules): k = annotators_per_sample votes, categories A, B, tie.
AGGREGATION_RULE: dict[str, Any] = {
    "name": "unanimous_or_majority_plus_tie",
    "kept": {
        "kept_unanimous": "every vote prefers the same response (k = 3: A, A, A or B, B, B)",
        "kept_majority_tie": "one response named, by a strict majority, the other votes ties "
        "(k = 3: A, A, tie or B, B, tie)",
    },
    "dropped": {
        "dropped_missing": "fewer than k votes",
        "dropped_split": "votes for both A and B",
        "dropped_ties": "ties without a strict majority (k = 3: two or more ties)",
    },
    "review": "labels and samples the lead discarded on review are left out",
    "conflict": "a prompt has a conflict when two of its kept criteria prefer opposite responses",
    "provenance": {
        "human": "the full protocol: k votes",
        "early_stopped": "early stopping: the votes so far could no longer make a kept label, "
        "so the remaining ones were not asked (the label equals the full protocol's)",
        "panel_human": "judge-assisted routing: a unanimous, position-consistent judge panel and "
        "one human verifier chose the same response (kept, unanimous)",
        "panel_overruled": "judge-assisted routing: the verifier disagreed with the panel, so the "
        "item got the full protocol and the rule above on its human votes",
    },
    "audit_share": "samples drawn reproducibly from the audit seed always get the full "
    "protocol; with early stopping or routing on, Fleiss' kappa and alpha are computed on them "
    "only",
}


def data_sha256(files: list[dict[str, Any]]) -> str:
    """One digest over the data files' kinds and checksums (their names hold the version)."""
    lines = sorted(f"{f['kind']} {f['sha256']}" for f in files if f["reproducible"])
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def manifest_build(
    *,
    project: dict[str, Any],
    version: int,
    created: str,
    created_by: str | None,
    options: dict[str, Any],
    rule: dict[str, Any],
    counts: dict[str, Any],
    agreement: dict[str, Any],
    files: list[dict[str, Any]],
    columns: list[str],
    criteria_history: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Assemble the manifest; ``files`` are ``{"name", "kind", "size", "sha256"}`` entries.

    ``criteria_history`` lists every change to the project's criteria up to the build (added,
    removed, restored, edited, reordered: who, when, what, and the votes that existed then).
    """
    entries = [{**f, "reproducible": True} for f in sorted(files, key=lambda f: f["kind"])]
    return {
        "format": FORMAT,
        "project": project,
        "version": version,
        "created": created,
        "created_by": created_by,
        "options": options,
        "aggregation_rule": rule,
        "columns": columns,
        "counts": counts,
        "agreement": agreement,
        "criteria_history": criteria_history or [],
        "files": entries,
        "data_sha256": data_sha256(entries),
        "reproducibility": (
            "The files listed here are byte-identical when the version is built again from the "
            "same labels and review decisions; compare data_sha256. This manifest is not: it "
            "holds the version number and the build time."
        ),
    }


def agreement_pseudonymised(agreement: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """The agreement figures per split with annotators renamed by ``names`` (username -> pseudonym).

    The per-annotator figures and the pairwise table name annotators; both are renamed, and the
    table is reordered by pseudonym so that its order says nothing about the usernames.
    """
    out: dict[str, Any] = {}
    for split, figures in agreement.items():
        figures = dict(figures)
        if "per_annotator" in figures:
            figures["per_annotator"] = dict(
                sorted(
                    ((names[user], stats) for user, stats in figures["per_annotator"].items()),
                    key=lambda item: pseudonym_position(item[0]),
                )
            )
        pairwise = figures.get("pairwise")
        if pairwise:
            users = list(pairwise.get("annotators") or [])
            order = sorted(range(len(users)), key=lambda i: pseudonym_position(names[users[i]]))
            figures["pairwise"] = {
                **pairwise,
                "annotators": [names[users[i]] for i in order],
                **{
                    key: [[pairwise[key][i][j] for j in order] for i in order]
                    for key in ("kappa", "overlap")
                    if key in pairwise
                },
            }
        out[split] = figures
    return out


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    return (json.dumps(manifest, ensure_ascii=False, sort_keys=True, indent=2) + "\n").encode()
