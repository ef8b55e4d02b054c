"""The judge panel against the humans on the audit share (the dashboard's "Judge panel" section).

The audit share's samples always get the full protocol, so there the panel's pre-labels
(``PanelLabel``) can be checked against the human labels without bias. Two figures:

- per criterion, the panel's agreement with the kept human labels: among the audit items whose
  label is kept and on which the panel named a side (routable), the share where it named the
  humans' side, with a 95% CI from the sample-cluster bootstrap; and its coverage (the share of
  kept labels where the panel named a side);
- the routing policy applied to the audit share after the fact: on each routable audit item the
  first formal vote (the lowest vote id: ids follow the order votes are stored) plays the
  verifier; agreeing, the panel's side is kept, else the full-protocol label; the count of kept
  labels that then differ from the full-protocol labels.

Items count when they have exactly k counted formal votes (those of the current slot holders,
as the aggregation counts them). The numbers come from ``aggregation.assisted``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.audit import audit_mask
from annotation.models import Criterion, PanelLabel, Project, Sample, SampleStatus
from annotation.splits import LABELS as SPLIT_LABELS

from ..assisted import AuditCounterfactual, audit_counterfactual, full_labels, panel_agreement
from ..rules import PREF_A, PREF_B, PREF_NONE
from ..services.aggregate import _formal_votes as counted_formal_votes
from ..services.aggregate import _load_votes as load_votes


@dataclass(frozen=True)
class AgreementRow:
    """The panel against the kept human labels of one criterion (or all of them)."""

    label: str
    split: str
    labels: int
    covered: int
    agreed: int
    agreement: float | None
    ci: tuple[float, float] | None
    coverage: float | None


@dataclass(frozen=True)
class PanelAudit:
    """The dashboard's panel figures on the audit share."""

    audit_share: float
    audit_samples: int
    items: int  # audit items with k counted votes
    panel_items: int  # of which the panel pre-labeled
    overall: AgreementRow | None = None
    rows: list[AgreementRow] = field(default_factory=list)
    counterfactual: AuditCounterfactual | None = None

    @property
    def has_panel(self) -> bool:
        return self.panel_items > 0


def _number(value: Any) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value


def _rows(
    result: Any, labels: list[tuple[str, str]], *, all_rows: bool = True
) -> list[AgreementRow]:
    return [
        AgreementRow(
            label=label,
            split=split,
            labels=int(result.labels[i]),
            covered=int(result.covered[i]),
            agreed=int(result.agreed[i]),
            agreement=_number(result.agreement[i]),
            ci=None if np.isnan(result.low[i]) else (float(result.low[i]), float(result.high[i])),
            coverage=_number(result.coverage[i]),
        )
        for i, (label, split) in enumerate(labels)
        if all_rows or result.labels[i]
    ]


def panel_audit_figures(*, project: Project, n_boot: int = 1000, seed: int = 0) -> PanelAudit:
    """The panel's agreement with the humans and the routing counterfactual on the audit
    share."""
    share = float(project.audit_share)
    k = project.annotators_per_sample
    formal = Sample.objects.filter(project=project, is_seed=False, status=SampleStatus.ACTIVE)
    samples = list(formal.order_by("id").values_list("id", "external_id"))
    ids = np.array([s for s, _ in samples], dtype=np.int64)
    in_audit = audit_mask(project.audit_seed, [e for _, e in samples], share)
    audit_ids = ids[in_audit]
    criteria = list(Criterion.objects.filter(project=project))
    empty = PanelAudit(audit_share=share, audit_samples=len(audit_ids), items=0, panel_items=0)
    if not criteria or not PanelLabel.objects.filter(sample__project=project).exists():
        return empty  # no panel yet: the votes are not read
    # The same queries whatever the data (an empty IN list would skip one): -1 is no sample.
    audit_list = audit_ids.tolist() or [-1]
    crit_ids = np.array([c.pk for c in criteria], dtype=np.int64)
    n_crit = len(criteria)
    # Every counted formal vote of the audit samples, as arrays (as the aggregation reads them).
    parts = []
    for split in dict.fromkeys(c.split for c in criteria):
        queryset = counted_formal_votes(
            project, split, [c for c in criteria if c.split == split]
        ).filter(sample_id__in=audit_list)
        parts.append(load_votes(queryset))
    vote_id = np.concatenate([p["id"] for p in parts])
    table_sample = np.concatenate([p["sample"] for p in parts])
    table_crit = np.concatenate([p["crit"] for p in parts])
    table_code = np.concatenate([p["code"] for p in parts])
    keep = np.isin(table_sample, audit_ids)
    vote_id, table_sample, table_crit, table_code = (
        vote_id[keep],
        table_sample[keep],
        table_crit[keep],
        table_code[keep],
    )
    sample_pos = np.searchsorted(audit_ids, table_sample)
    crit_order = np.argsort(crit_ids)
    crit_pos = crit_order[np.searchsorted(crit_ids[crit_order], table_crit)]
    keys = sample_pos * n_crit + crit_pos
    order = np.lexsort((vote_id, keys))
    keys, codes = keys[order], table_code[order]
    item_keys, starts, sizes = np.unique(keys, return_index=True, return_counts=True)
    full = sizes == k
    item_keys, starts = item_keys[full], starts[full]
    panel = list(
        PanelLabel.objects.filter(sample_id__in=audit_list).values_list(
            "sample_id", "criterion_id", "choice", "routable"
        )
    )
    if not len(item_keys):
        return empty
    votes = codes[starts[:, None] + np.arange(k)[None, :]].astype(np.int8)
    _, human = full_labels(votes, k)
    # The panel's label of each item.
    panel_choice = np.full(len(item_keys), PREF_NONE, dtype=np.int8)
    routable = np.zeros(len(item_keys), dtype=bool)
    labeled = np.zeros(len(item_keys), dtype=bool)
    if panel:
        p_sample = np.array([row[0] for row in panel], dtype=np.int64)
        p_crit = np.array([row[1] for row in panel], dtype=np.int64)
        p_side = np.array(
            [PREF_A if row[2] == "A" else PREF_B if row[2] == "B" else PREF_NONE for row in panel],
            dtype=np.int8,
        )
        p_routable = np.array([bool(row[3]) for row in panel], dtype=bool)
        at_crit = np.minimum(np.searchsorted(crit_ids[crit_order], p_crit), n_crit - 1)
        live = crit_ids[crit_order][at_crit] == p_crit  # a removed criterion's label: left out
        p_keys = np.searchsorted(audit_ids, p_sample) * n_crit + crit_order[at_crit]
        at = np.minimum(np.searchsorted(item_keys, p_keys), len(item_keys) - 1)
        found = live & (item_keys[at] == p_keys)
        labeled[at[found]] = True
        routable[at[found]] = p_routable[found]
        panel_choice[at[found]] = np.where(p_routable[found], p_side[found], PREF_NONE)
    if not labeled.any():
        return PanelAudit(
            audit_share=share, audit_samples=len(audit_ids), items=len(item_keys), panel_items=0
        )
    votes, human, panel_choice, routable, item_keys = (
        votes[labeled],
        human[labeled],
        panel_choice[labeled],
        routable[labeled],
        item_keys[labeled],
    )
    sample_index, crit_index = np.divmod(item_keys, n_crit)
    names = [(f"{SPLIT_LABELS.get(c.split, c.split)} · {c.name}", c.split) for c in criteria]
    per_criterion = panel_agreement(
        sample_index,
        crit_index,
        human,
        panel_choice,
        n_samples=len(audit_ids),
        n_criteria=n_crit,
        n_boot=n_boot,
        seed=seed,
    )
    overall = panel_agreement(
        sample_index,
        np.zeros_like(crit_index),
        human,
        panel_choice,
        n_samples=len(audit_ids),
        n_criteria=1,
        n_boot=n_boot,
        seed=seed,
    )
    return PanelAudit(
        audit_share=share,
        audit_samples=len(audit_ids),
        items=int(full.sum()),
        panel_items=int(labeled.sum()),
        overall=_rows(overall, [("All criteria", "")])[0],
        rows=_rows(per_criterion, names, all_rows=False),
        counterfactual=audit_counterfactual(votes, panel_choice, routable, k),
    )
