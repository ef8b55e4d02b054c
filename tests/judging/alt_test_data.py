"""A dataset version that keeps the annotators' votes, for the judge statistics tests."""

from __future__ import annotations

import numpy as np

from aggregation.models import DatasetVersion
from annotation.models import Project
from tests.judging.web_data import A, B, qid, version_from_records

CRITERIA = ("completeness", "clarity")


def voted_rows(n_prompts: int, *, annotators: int = 3, seed: int = 0) -> list[dict]:
    """Kept rows with their votes: a strict majority for the label, at most one tie vote."""
    rng = np.random.default_rng(seed)
    names = [f"annotator_{i:02d}" for i in range(1, annotators + 1)]
    rows = []
    for p in range(n_prompts):
        for criterion in CRITERIA:
            label = A if rng.random() < 0.6 else B
            choices = [label] * annotators
            if annotators >= 3 and rng.random() < 0.3:
                choices[int(rng.integers(annotators))] = "tie"
            prompt = f"p{p}"
            rows.append(
                {
                    "question_id": qid(prompt, criterion),
                    "prompt_id": prompt,
                    "split": "open_ended",
                    "criterion": criterion,
                    "question": "What does the image show?",
                    "preference": label,
                    "provenance": "human",
                    "votes": [
                        {"annotator": n, "choice": c, "rationale": "", "unsure": False}
                        for n, c in zip(names, choices, strict=True)
                    ],
                }
            )
    return rows


def version_with_votes(
    project: Project, rows: list[dict], *, number: int = 1, manifest: dict | None = None
) -> DatasetVersion:
    """A ready version of ``rows`` built with the individual votes kept."""
    version = version_from_records(
        project, rows, number=number, status=DatasetVersion.Status.BUILDING
    )
    # The options are set while building: a ready version is frozen.
    DatasetVersion.objects.filter(pk=version.pk).update(include_votes=True, manifest=manifest or {})
    DatasetVersion.objects.filter(pk=version.pk).update(status=DatasetVersion.Status.READY)
    version.refresh_from_db()
    return version


def random_verdicts(rows: list[dict], seed: int = 1) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    return {r["question_id"]: (A if rng.random() < 0.5 else B) for r in rows}
