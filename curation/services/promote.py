"""Promotion: the kept candidate pairs become annotation Samples of their project, in one step.

The pairs are written as a file of our sample format (with their images beside it) and handed to
the sample import, so promoted samples get exactly the import's checks, slots
(``annotation.services.assignment.slots_create``) and idempotence: promoting the same pairs
again changes nothing. Each sample's metadata holds its provenance under ``curation``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.files.storage import default_storage

from annotation.importing.service import ImportReport, samples_import
from annotation.models import Project

from ..models import CandidatePair, PairDecision
from ..pairing import stratified_pick
from .verdicts import CurationError

Progress = Callable[..., None]


def _provenance(pair: CandidatePair, decisions: list[PairDecision], seed: int) -> dict[str, Any]:
    return {
        "prompt_id": pair.prompt.prompt_id,
        "response_a": {"model": pair.response_a.model, "sample": pair.response_a.sample_index},
        "response_b": {"model": pair.response_b.model, "sample": pair.response_b.sample_index},
        "pairing": pair.how,
        "filters": {d.filter: d.reason for d in decisions},
        "promotion_seed": seed,
    }


def pairs_promote(
    *,
    project: Project,
    count: int | None = None,
    seed: int = 0,
    calibration_seeds: int = 0,
    progress: Progress | None = None,
) -> ImportReport:
    """Promote the kept pairs (all, or ``count`` stratified by split and source) to Samples.

    ``calibration_seeds`` of the promoted pairs (spread over the splits) become seed samples
    for the calibration round. Raises :class:`CurationError` when there is nothing to promote,
    and the import's ``ImportRejected`` when a sample exists with other content.
    """
    kept = list(
        CandidatePair.objects.filter(project=project, removed_by="")
        .select_related("prompt", "response_a", "response_b")
        .order_by("position")
    )
    if not kept:
        raise CurationError("No kept pairs to promote: run the curation first.")
    if count is not None and count <= 0:
        raise CurationError("Promote at least one pair (or leave the number empty for all).")
    chosen_idx = stratified_pick(
        [(p.prompt.split, p.prompt.source) for p in kept],
        len(kept) if count is None else count,
        seed=seed,
    )
    chosen = [kept[i] for i in chosen_idx]
    if calibration_seeds < 0 or calibration_seeds > len(chosen):
        raise CurationError(
            f"Calibration seeds must be between 0 and the {len(chosen)} promoted pairs."
        )
    seeds = set(stratified_pick([p.prompt.split for p in chosen], calibration_seeds, seed=seed + 1))
    decisions: dict[int, list[PairDecision]] = {}
    for decision in PairDecision.objects.filter(pair__in=chosen).order_by("pair_id", "order"):
        decisions.setdefault(decision.pair_id, []).append(decision)
    with tempfile.TemporaryDirectory(prefix="promote-") as folder:
        root = Path(folder)
        (root / "images").mkdir()
        data = root / "pairs.jsonl"
        with data.open("w", encoding="utf-8") as out:
            for index, pair in enumerate(chosen):
                prompt = pair.prompt
                image = root / "images" / Path(prompt.image.name).name
                if not image.exists():
                    with default_storage.open(prompt.image.name, "rb") as handle:
                        image.write_bytes(handle.read())
                line = {
                    "id": pair.external_id,
                    "split": prompt.split,
                    "question": prompt.question,
                    "image": f"images/{image.name}",
                    "response_a": pair.response_a.text,
                    "response_b": pair.response_b.text,
                    "model_a": pair.response_a.model,
                    "model_b": pair.response_b.model,
                    "source": prompt.source,
                    "pair_type": pair.kind,
                    "reference_answer": prompt.reference_answer,
                    "is_seed": index in seeds,
                    "metadata": {"curation": _provenance(pair, decisions.get(pair.pk, []), seed)},
                }
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        return samples_import(project=project, path=data, progress=progress)
