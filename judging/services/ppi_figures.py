"""The scorecard's prediction-powered figures, where a version holds such a pool.

A version holds one when its project routes items through the judge panel: the audit share's
samples (drawn at random from the audit seed) got the full protocol, so their rows carry human
labels; outside it a label may be the panel's side confirmed by one verifier. The panel's
pre-labels (``PanelLabel``, its side where every judge named one in both orders) are the
reference on every row. The figures then estimate the judge's accuracy against full-protocol
labels from the audit rows and the panel (``judging.ppi``); the labels outside the audit share
are not used as human labels.

Needs: the routing policy on, an audit share strictly between 0 and 1, panel labels on the
split's items and at least two audit rows and one row outside the audit share.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aggregation.models import DatasetVersion
from annotation.audit import audit_mask
from annotation.models import PanelLabel, RoutingPolicy

from ..metrics import MISSING, A, B, ScoreInput
from ..ppi import split_figures

_SIDE = {"A": A, "B": B}


def _reference(version: DatasetVersion, rows: ScoreInput, split: str) -> tuple[np.ndarray, str]:
    """The panel's verdict code per row (MISSING where it named no side) and the panel's name."""
    labels = list(
        PanelLabel.objects.filter(
            sample__project_id=version.project_id, sample__split=split, choice__in=list(_SIDE)
        ).values_list("sample__external_id", "criterion__key", "choice", "judges")
    )
    codes = np.full(len(rows), MISSING, dtype=np.int8)
    if not labels:
        return codes, ""
    side = {(prompt, key): _SIDE[choice] for prompt, key, choice, _ in labels}
    mask = rows.split == split
    positions = np.flatnonzero(mask)
    pairs = zip(rows.prompt_id[mask].tolist(), rows.criterion[mask].tolist(), strict=True)
    codes[positions] = [side.get(pair, MISSING) for pair in pairs]
    judges = sorted({name for *_, names in labels for name in names})
    return codes, "judge panel" + (f" ({', '.join(judges)})" if judges else "")


def scorecard_ppi(
    *, version: DatasetVersion, rows: ScoreInput, split: str, codes: np.ndarray
) -> dict[str, Any]:
    """``{"ppi": figures}`` for the judge's (voted) ``codes`` on ``split``, or ``{}`` when the
    version holds no such pool."""
    project = version.project
    share = float(project.audit_share)
    if project.routing_policy != RoutingPolicy.PANEL_VERIFIER or not 0.0 < share < 1.0:
        return {}
    mask = rows.split == split
    prompts, inverse = np.unique(rows.prompt_id[mask], return_inverse=True)
    audited = audit_mask(project.audit_seed, prompts.tolist(), share)[inverse]
    if audited.sum() < 2 or audited.all():
        return {}
    reference, name = _reference(version, rows, split)
    if not name:
        return {}
    labeled = np.zeros(len(rows), dtype=bool)
    labeled[np.flatnonzero(mask)] = audited
    figures = split_figures(rows, split, codes, reference, labeled, reference_name=name)
    return {"ppi": figures}
