"""The exported row (protocol section 6); annotators are named by :mod:`annotation.pseudonyms`."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from annotation.ab import CHOICE_NAMES

# Field order of the Parquet schema; JSONL lines are written with sorted keys.
ROW_FIELDS: tuple[str, ...] = (
    "question_id",
    "prompt_id",
    "split",
    "criterion",
    "question",
    "image_path",
    "pred_a",
    "pred_b",
    "model_a",
    "model_b",
    "preference",
    "provenance",
)
VOTES_FIELD = "votes"
#: The fields a row takes from its sample (:func:`row_build`): the same for all its criteria rows.
SAMPLE_FIELDS: tuple[str, ...] = (
    "prompt_id",
    "split",
    "question",
    "image_path",
    "pred_a",
    "pred_b",
    "model_a",
    "model_b",
)

#: The columns a graded or pointwise project's rows add after ROW_FIELDS: the votes' grades
#: (or scores, in vote id order), the median grade (or mean score per response) and the soft
#: label (votes per grade, or per score and response).
SCALE_FIELDS: dict[str, tuple[str, ...]] = {
    "graded": ("grades", "median_grade", "soft_label"),
    "pointwise": ("scores_a", "scores_b", "mean_score_a", "mean_score_b", "soft_label"),
}
IMAGES_DIR = "images"

# How a row's label was gathered (aggregation.models.Provenance's values); a version of published
# labels says "published".
PROVENANCE_PUBLISHED = "published"

# A kept label prefers a side: a tie is never a preference.
PREFERENCE_NAMES = {key: name for key, name in CHOICE_NAMES.items() if name != "tie"}

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_EXT = re.compile(r"^[a-z0-9]{1,8}$")


def question_id_for(prompt_id: str, criterion: str) -> str:
    """The row id of a (prompt, criterion): ``<prompt_id>__<criterion>``."""
    return f"{prompt_id}__{criterion}"


def preference_name(preference: str) -> str:
    """Map a label's canonical ``A``/``B`` to the published ``model_a``/``model_b``."""
    try:
        return PREFERENCE_NAMES[preference]
    except KeyError:
        raise ValueError(f"a kept label must prefer A or B, got {preference!r}") from None


@lru_cache(maxsize=4096)  # a prompt's rows come together: its path is made once
def image_relpath(prompt_id: str, source_name: str) -> str | None:
    """``images/<prompt_id>.<ext>`` for the sample's stored image, or None without one.

    An id with characters unsafe in a path (``/``, ``..``, spaces) is rewritten and suffixed with
    a short hash of the original, so two ids never share a file and no path leaves ``images/``.
    """
    if not source_name:
        return None
    ext = source_name.rsplit(".", 1)[-1].lower() if "." in source_name else ""
    if not _EXT.match(ext):
        ext = "bin"
    stem = _UNSAFE.sub("_", prompt_id).lstrip(".")
    if stem != prompt_id or not stem:
        stem = f"{stem or 'sample'}-{hashlib.sha256(prompt_id.encode()).hexdigest()[:8]}"
    return f"{IMAGES_DIR}/{stem}.{ext}"


@dataclass(frozen=True)
class SampleFields:
    """What a row needs from its sample."""

    prompt_id: str
    split: str
    question: str
    pred_a: str
    pred_b: str
    model_a: str
    model_b: str
    image_name: str  # storage name of the image ("" when the sample has none)


def row_build(
    sample: SampleFields,
    *,
    criterion: str,
    preference: str,
    votes: list[dict[str, str]] | None = None,
    question_id: str | None = None,
    provenance: str = "human",
    scaled: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One exported row; ``votes`` (already pseudonymised) adds the optional ``votes`` column.

    ``question_id`` keeps a published row's own id (default ``<prompt_id>__<criterion>``).
    ``scaled`` adds a graded or pointwise project's columns (:func:`scale_fields_build`).
    """
    row: dict[str, Any] = {
        "question_id": question_id or question_id_for(sample.prompt_id, criterion),
        "prompt_id": sample.prompt_id,
        "split": sample.split,
        "criterion": criterion,
        "question": sample.question,
        "image_path": image_relpath(sample.prompt_id, sample.image_name),
        "pred_a": sample.pred_a,
        "pred_b": sample.pred_b,
        "model_a": sample.model_a,
        "model_b": sample.model_b,
        "preference": preference_name(preference),
        "provenance": provenance,
    }
    if scaled:
        row.update(scaled)
    if votes is not None:
        row[VOTES_FIELD] = votes
    return row


def scale_fields_build(
    scale: str, label: dict[str, Any], votes: list[dict[str, Any]]
) -> dict[str, Any]:
    """The SCALE_FIELDS of one row from its label's figures and its votes (by vote id)."""
    ordered = sorted(votes, key=lambda v: v["id"])
    if scale == "graded":
        return {
            "grades": [v["grade"] for v in ordered if v.get("grade") is not None],
            "median_grade": label.get("median_grade"),
            "soft_label": label.get("soft_label"),
        }
    if scale == "pointwise":
        scored = [v for v in ordered if v.get("score_a") is not None]
        return {
            "scores_a": [v["score_a"] for v in scored],
            "scores_b": [v["score_b"] for v in scored],
            "mean_score_a": label.get("mean_score_a"),
            "mean_score_b": label.get("mean_score_b"),
            "soft_label": label.get("soft_label"),
        }
    return {}


def has_conflict(preferences: Iterable[str]) -> bool:
    """A prompt has a conflict when two of its kept criteria prefer opposite responses."""
    seen = set(preferences)
    return "model_a" in seen and "model_b" in seen
