"""Data builders for the judging web, service, API and job tests.

``HAND_ROWS`` is a small dataset whose figures are worked out by hand in ``HAND_EXPECTED`` for
the predictions ``HAND_PREDICTIONS`` (see the comments there).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping

from django.core.files.uploadedfile import SimpleUploadedFile

from aggregation.models import DatasetRow, DatasetVersion
from annotation.models import Project
from core.auth import generate_key, hash_key
from core.models import ApiToken

A, B = "model_a", "model_b"

# (prompt_id, split, criterion, human preference)
HAND_ROWS = [
    # p1: A, B, A -> conflicts (completeness, visual-grounding), (visual-grounding, hallucination)
    ("p1", "open_ended", "completeness", A),
    ("p1", "open_ended", "visual-grounding", B),
    ("p1", "open_ended", "hallucination", A),
    # p2: no conflict
    ("p2", "open_ended", "completeness", A),
    ("p2", "open_ended", "visual-grounding", A),
    # p3: one conflicting pair
    ("p3", "open_ended", "completeness", B),
    ("p3", "open_ended", "hallucination", A),
    # q1 (reasoning): one conflicting pair
    ("q1", "reasoning", "logic", A),
    ("q1", "reasoning", "grounding", B),
]

# The judge's verdicts: p1 completeness, visual-grounding right, hallucination wrong;
# p2 completeness right, visual-grounding wrong; p3 both right; q1 logic right, grounding wrong.
HAND_PREDICTIONS = {
    "p1__completeness": A,
    "p1__visual-grounding": B,
    "p1__hallucination": B,
    "p2__completeness": A,
    "p2__visual-grounding": B,
    "p3__completeness": B,
    "p3__hallucination": A,
    "q1__logic": A,
    "q1__grounding": A,
}

# Open-ended, by hand:
# completeness 3/3 = 100; visual-grounding 1/2 = 50; hallucination 1/2 = 50; Avg = 66.67;
# overall 5/7 = 71.43; PAcc: only p3 fully right = 1/3 = 33.33;
# conflict prompts p1, p3; both get opposite valid verdicts on a conflicting pair: TOS = 100;
# conflicting pairs (p1: c-vg right, vg-h wrong; p3: c-h right): CMR = 2/3 = 66.67;
# A predictions 3 of 7 valid = 42.86, human A 5/7 = 71.43; no prompt got one verdict on all.
HAND_EXPECTED_OPEN = {
    "pacc": 33.33,
    "cmr": 66.67,
    "tos": 100.0,
    "avg": 66.67,
    "overall": 71.43,
    "per_criterion": {"completeness": 100.0, "visual-grounding": 50.0, "hallucination": 50.0},
    "counts": {"rows": 7, "prompts": 3, "conflict_prompts": 2, "conflict_pairs": 3},
    "same_verdict_share": 0.0,
    "pred_a_share": 42.86,
    "human_a_share": 71.43,
}
# Reasoning: logic right, grounding wrong: PAcc 0, CMR 0, TOS 0 (both predicted A), Avg 50.
HAND_EXPECTED_REASONING = {"pacc": 0.0, "cmr": 0.0, "tos": 0.0, "avg": 50.0}


def qid(prompt_id: str, criterion: str) -> str:
    return f"{prompt_id}__{criterion}"


def version_from_records(
    project: Project,
    records: Iterable[Mapping],
    *,
    number: int = 1,
    status: str = DatasetVersion.Status.READY,
) -> DatasetVersion:
    """A dataset version whose DatasetRow rows hold the given full exported rows."""
    records = list(records)
    # Rows go in while the version is building: a ready version is frozen.
    version = DatasetVersion.objects.create(
        project=project,
        number=number,
        status=DatasetVersion.Status.BUILDING,
        row_count=len(records),
    )
    DatasetRow.objects.bulk_create(
        DatasetRow(
            version=version,
            question_id=record["question_id"],
            prompt_id=record["prompt_id"],
            split=record["split"],
            criterion=record["criterion"],
            preference=record["preference"],
            data=dict(record),
        )
        for record in records
    )
    if status != version.status:
        DatasetVersion.objects.filter(pk=version.pk).update(status=status)
        version.status = status
    return version


def make_version(
    project: Project,
    rows: Iterable[tuple[str, str, str, str]] = HAND_ROWS,
    *,
    number: int = 1,
    status: str = DatasetVersion.Status.READY,
) -> DatasetVersion:
    """A dataset version built from (prompt, split, criterion, preference) tuples."""
    records = (
        {
            "question_id": qid(prompt, criterion),
            "prompt_id": prompt,
            "split": split,
            "criterion": criterion,
            "question": f"What does image {prompt} show?",
            "image_path": f"images/{prompt}.png",
            "pred_a": "Response one.",
            "pred_b": "Response two.",
            "model_a": "model-x",
            "model_b": "model-y",
            "preference": preference,
        }
        for prompt, split, criterion, preference in rows
    )
    return version_from_records(project, records, number=number, status=status)


def jsonl(lines: Iterable[Mapping]) -> bytes:
    return "\n".join(json.dumps(dict(line)) for line in lines).encode() + b"\n"


def prediction_lines(predictions: Mapping[str, str] = HAND_PREDICTIONS, **extra) -> list[dict]:
    return [{"question_id": q, "prediction": p, **extra} for q, p in predictions.items()]


def predictions_upload(
    lines: Iterable[Mapping] | None = None, *, name: str = "predictions.jsonl"
) -> SimpleUploadedFile:
    """An uploaded JSONL predictions file (default: the hand-worked predictions)."""
    data = jsonl(prediction_lines() if lines is None else lines)
    return SimpleUploadedFile(name, data, content_type="application/jsonl")


def predictions_file(lines: Iterable[Mapping] | None = None, *, name: str = "p.jsonl"):
    handle = io.BytesIO(jsonl(prediction_lines() if lines is None else lines))
    handle.name = name
    return handle


def flipped(predictions: Mapping[str, str], *keys: str, to: str | None = None) -> dict:
    """The predictions with the given rows changed (flipped A/B, or set to ``to``)."""
    out = dict(predictions)
    for key in keys:
        out[key] = to if to is not None else (B if out[key] == A else A)
    return out


def make_token(user, *, scope: str = "read") -> str:
    key = generate_key()
    ApiToken.objects.create(
        user=user, name=f"{scope} token", prefix=key[:8], key_hash=hash_key(key), scope=scope
    )
    return key
