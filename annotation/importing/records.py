"""One sample as read from a file: field validation and the content hash used for idempotence."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..models import Choice, PairType, Split
from ..splits import split_key
from .limits import FIELD_MAX_CHARS, metadata_problem, shown_value, text_problem

SPLITS = {value for value, _ in Split.choices}
PAIR_TYPES = {value for value, _ in PairType.choices}
PAIR_ALIASES = {"cross": PairType.CROSS_MODEL.value, "same": PairType.SAME_MODEL.value}
PREFERENCES = {
    "A": Choice.A.value,
    "B": Choice.B.value,
    "tie": Choice.TIE.value,
    "model_a": Choice.A.value,
    "model_b": Choice.B.value,
}
TEXT_FIELDS = (
    "external_id",
    "split",
    "question",
    "response_a",
    "response_b",
    "model_a",
    "model_b",
    "source",
    "reference_answer",
)
PAIR_HINT = "cross_model or same_model"
REQUIRED = ("external_id", "split", "question", "response_a", "response_b", "image")


@dataclass
class ImageRef:
    """Either a path relative to the data file or embedded bytes."""

    path: str | None = None
    data: bytes | None = None

    def describe(self) -> str:
        return self.path if self.path is not None else f"<{len(self.data or b'')} embedded bytes>"


@dataclass
class SampleRecord:
    line: int
    external_id: str
    split: str
    question: str
    response_a: str
    response_b: str
    image: ImageRef
    model_a: str = ""
    model_b: str = ""
    source: str = ""
    pair_type: str = PairType.CROSS_MODEL.value
    is_seed: bool = False
    reference_answer: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    references: dict[str, str] = field(default_factory=dict)

    def content_hash(self, image_sha256: str) -> str:
        """SHA-256 of everything the import stores, so an unchanged sample is recognised."""
        payload = {
            **self.model_fields(),
            "references": dict(sorted(self.references.items())),
            "image": image_sha256,
        }
        text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def model_fields(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "question": self.question,
            "response_a": self.response_a,
            "response_b": self.response_b,
            "model_a": self.model_a,
            "model_b": self.model_b,
            "source": self.source,
            "pair_type": self.pair_type,
            "is_seed": self.is_seed,
            "reference_answer": self.reference_answer,
            "metadata": self.metadata,
        }


def image_ref_parse(value: Any) -> tuple[ImageRef | None, str | None]:
    """Accept a relative path, raw bytes, or ``{"bytes": raw-or-base64, "path": ...}``."""
    if isinstance(value, str):
        return ImageRef(path=value), None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ImageRef(data=bytes(value)), None
    if isinstance(value, dict):
        data = value.get("bytes")
        if isinstance(data, (bytes, bytearray, memoryview)):
            return ImageRef(data=bytes(data)), None
        if isinstance(data, str) and data:
            try:
                return ImageRef(data=base64.b64decode(data, validate=True)), None
            except (binascii.Error, ValueError):
                return None, "image.bytes is not valid base64"
        if isinstance(value.get("path"), str):
            return ImageRef(path=value["path"]), None
        return None, 'expected a path, bytes or {"bytes": ...}'
    return None, 'expected a relative path, bytes or {"bytes": ...}'


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def sample_validate(
    data: dict[str, Any],
    *,
    line: int,
    criteria: dict[str, set[str]],
    names: dict[str, str] | None = None,
) -> tuple[SampleRecord | None, list[tuple[str, str]]]:
    """Check one sample dict (our field names); return the record or ``(field, message)`` list.

    ``criteria`` maps each split to its criterion keys; ``names`` renames fields in messages
    (the Multi-Crit row format calls ``response_a`` ``pred_a``).
    """
    names = names or {}
    problems: list[tuple[str, str]] = []

    def bad(name: str, message: str) -> None:
        problems.append((names.get(name, name), message))

    if "external_id" not in data and "id" in data:
        data = {**data, "external_id": data["id"]}
    for name in REQUIRED:
        value = data.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            bad(name, "missing field" if name not in data else "must not be empty")
    external_id = data.get("external_id")
    if isinstance(external_id, int) and not isinstance(external_id, bool):
        external_id = str(external_id)
    for name in TEXT_FIELDS:
        value = external_id if name == "external_id" else data.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            bad(name, f"must be text, got {type(value).__name__}")
            continue
        message = text_problem(value, max_chars=FIELD_MAX_CHARS.get(name))
        if message:
            bad(name, message)

    split = data.get("split")
    if isinstance(split, str) and split_key(split):
        split = split_key(split)  # openEnded, open-ended, ... are stored as open_ended
    if isinstance(split, str) and split and split not in SPLITS:
        bad("split", f"unknown split {split!r} (expected {' or '.join(sorted(SPLITS))})")
    if not isinstance(split, str):
        split = None  # reported above; nothing below may hash or compare it

    pair_type = data.get("pair_type")
    if not pair_type:
        # Two responses of one model are a same-model pair (protocol section 2).
        same = isinstance(data.get("model_a"), str) and data.get("model_a") == data.get("model_b")
        same = same and bool(data["model_a"].strip())
        pair_type = PairType.SAME_MODEL.value if same else PairType.CROSS_MODEL.value
    if not isinstance(pair_type, str):
        bad("pair_type", f"must be cross_model or same_model, got {shown_value(pair_type)}")
    else:
        pair_type = PAIR_ALIASES.get(pair_type, pair_type)
        if pair_type not in PAIR_TYPES:
            bad("pair_type", f"unknown pair type {shown_value(pair_type)} (expected {PAIR_HINT})")

    is_seed = data.get("is_seed", False)
    if is_seed is None:
        is_seed = False
    if not isinstance(is_seed, bool):
        bad("is_seed", "must be true or false")

    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        bad("metadata", "must be a JSON object")
        metadata = {}
    else:
        meta_problem = metadata_problem(metadata)
        if meta_problem:
            path, message = meta_problem
            bad(f"metadata.{path}" if path else "metadata", message)

    references: dict[str, str] = {}
    raw_refs = data.get("reference") or {}
    if not isinstance(raw_refs, dict):
        bad("reference", 'must be an object like {"completeness": "A"}')
        raw_refs = {}
    keys = criteria.get(split, set()) if split is not None else set()
    for key, value in raw_refs.items():
        key_problem = text_problem(str(key), max_chars=FIELD_MAX_CHARS["criterion"])
        if key_problem:
            bad("reference", f"criterion key {key_problem}")
        elif split in SPLITS and key not in keys:
            bad(f"reference.{key}", f"unknown criterion {key!r} for split {split}")
        elif not isinstance(value, str) or value not in PREFERENCES:
            bad(f"reference.{key}", f"preference must be A, B or tie, got {shown_value(value)}")
        else:
            references[key] = PREFERENCES[value]

    image, image_error = (None, None)
    if data.get("image") is not None:
        image, image_error = image_ref_parse(data["image"])
        if image_error:
            bad("image", image_error)

    if problems:
        return None, problems
    return (
        SampleRecord(
            line=line,
            external_id=external_id.strip(),
            split=split,
            question=data["question"],
            response_a=data["response_a"],
            response_b=data["response_b"],
            image=image,
            model_a=data.get("model_a") or "",
            model_b=data.get("model_b") or "",
            source=data.get("source") or "",
            pair_type=pair_type,
            is_seed=is_seed,
            reference_answer=data.get("reference_answer") or "",
            metadata=metadata,
            references=references,
        ),
        [],
    )
