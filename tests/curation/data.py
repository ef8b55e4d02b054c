"""Generations files for the curation tests: prompts with responses of several models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.annotation.import_data import png_bytes

MODELS = ("model-a", "model-b", "model-c")


def response(model: str, text: str, sample: int = 0, **extra: Any) -> dict[str, Any]:
    return {"model": model, "sample": sample, "text": text, **extra}


def open_prompt(prompt_id: str, *, source: str = "WildVision", **extra: Any) -> dict[str, Any]:
    """An open-ended prompt with three models of similar length (all pass the length filter)."""
    return {
        "prompt_id": prompt_id,
        "split": "open_ended",
        "source": source,
        "question": f"Describe picture {prompt_id}.",
        "image": "images/red.png",
        "responses": [
            response(m, f"The picture {prompt_id} shows a red shape described by {m} here.")
            for m in MODELS
        ],
        **extra,
    }


def reasoning_prompt(
    prompt_id: str,
    answers: dict[str, str],
    *,
    reference: str = "12",
    source: str = "MathVista",
    **extra: Any,
) -> dict[str, Any]:
    """A reasoning prompt; ``answers`` maps each model to the final answer it states."""
    return {
        "prompt_id": prompt_id,
        "split": "reasoning",
        "source": source,
        "question": f"Find x in figure {prompt_id}.",
        "image": "images/red.png",
        "reference_answer": reference,
        "responses": [
            response(m, f"We add the two sides of the figure.\nThe answer is {a}.")
            for m, a in answers.items()
        ],
        **extra,
    }


def write_generations(folder: Path, prompts: list[dict[str, Any]], name: str = "gen.jsonl") -> Path:
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "images" / "red.png").write_bytes(png_bytes())
    path = folder / name
    path.write_text("".join(json.dumps(p) + "\n" for p in prompts), encoding="utf-8")
    return path
