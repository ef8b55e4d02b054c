"""The contested split of a dataset version: every dropped (sample, criterion), never lost.

Built on request (``include_contested``) beside the version's data files, by a writer of its own:
one JSONL file, one line per label the aggregation rule dropped (A/B split, two or more ties,
fewer votes than required) on an active sample, in the export's row order. A line is a row of
the published format without a preference, with the drop reason and every counted vote::

    {"question_id": "p17__logic", "prompt_id": "p17", "split": "reasoning", "criterion": "logic",
     "question": "...", "image_path": "images/p17.png", "pred_a": "...", "pred_b": "...",
     "model_a": "m1", "model_b": "m2", "preference": null, "drop_reason": "dropped_split",
     "votes": [{"annotator": "annotator_01", "choice": "model_a", "rationale": "...",
                "unsure": false}, ...]}

The votes name annotators by pseudonym, so the file is the lead's alone (as a ``votes`` column).
The rows are not DatasetRow records: a version's rows are its kept labels, which judges are
scored on; judges' verdicts on the contested rows are only counted (``judging``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db.models import QuerySet

from annotation.models import Project, Vote
from annotation.pseudonyms import Pseudonyms

from ..models import CriterionLabel, Outcome
from .rows import image_relpath, question_id_for
from .writers import JsonlWriter

CONTESTED_FILE = "{stem}-contested.jsonl"
DROP_REASON_FIELD = "drop_reason"
_CHUNK = 500


@dataclass
class ContestedResult:
    """The contested file and its counts: rows per split and per drop reason."""

    path: Path
    rows: int = 0
    per_split: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))

    def counts(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "per_split": {
                split: {"rows": sum(c.values()), "per_reason": dict(sorted(c.items()))}
                for split, c in sorted(self.per_split.items())
            },
        }


def contested_labels(*, project: Project, include_seeds: bool) -> QuerySet[CriterionLabel]:
    """The dropped labels of the project's active samples, in the export's row order."""
    dropped = [o for o in Outcome.values if o not in Outcome.kept()]
    labels = CriterionLabel.objects.filter(
        sample__project=project, sample__status="active", outcome__in=dropped
    )
    if not include_seeds:
        labels = labels.filter(sample__is_seed=False)
    return labels.order_by(
        "sample__split", "sample__external_id", "criterion__order", "criterion__key"
    )


def contested_build(
    *, project: Project, path: Path, include_seeds: bool, pseudonyms: Pseudonyms
) -> ContestedResult:
    """Write the contested split of ``project`` to ``path`` (JSONL, keys sorted)."""
    result = ContestedResult(path=path)
    values = contested_labels(project=project, include_seeds=include_seeds).values_list(
        "outcome",
        "vote_ids",
        "criterion__key",
        "sample__external_id",
        "sample__split",
        "sample__question",
        "sample__response_a",
        "sample__response_b",
        "sample__model_a",
        "sample__model_b",
        "sample__image",
    )
    writer = JsonlWriter(path)
    try:
        chunk: list[tuple] = []
        for row in values.iterator(chunk_size=2000):
            chunk.append(row)
            if len(chunk) >= _CHUNK:
                writer.write(_rows(chunk, pseudonyms, result))
                chunk = []
        if chunk:
            writer.write(_rows(chunk, pseudonyms, result))
    finally:
        writer.close()
    return result


def _rows(chunk: list[tuple], pseudonyms: Pseudonyms, result: ContestedResult) -> list[dict]:
    ids = [int(i) for row in chunk for i in (row[1] or [])]
    votes = {
        v["id"]: v
        for v in Vote.objects.filter(id__in=ids).values(
            "id", "annotator_id", "choice", "rationale", "unsure"
        )
    }
    out = []
    for (
        outcome,
        vote_ids,
        criterion,
        prompt,
        split,
        question,
        a,
        b,
        model_a,
        model_b,
        image,
    ) in chunk:
        out.append(
            {
                "question_id": question_id_for(prompt, criterion),
                "prompt_id": prompt,
                "split": split,
                "criterion": criterion,
                "question": question,
                "image_path": image_relpath(prompt, image or ""),
                "pred_a": a,
                "pred_b": b,
                "model_a": model_a,
                "model_b": model_b,
                "preference": None,
                DROP_REASON_FIELD: outcome,
                "votes": pseudonyms.votes(
                    [votes[int(i)] for i in vote_ids or [] if int(i) in votes]
                ),
            }
        )
        result.rows += 1
        result.per_split[split][outcome] += 1
    return out
