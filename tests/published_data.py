"""Small files in the layout of the published Multi-Crit release, generated for the tests.

- ``write_parquet``: one Parquet shard with the release's columns; ``image`` is the Hugging Face
  Image struct ``{bytes, path}``.
- ``write_flat_jsonl``: the flattened JSONL of the official repository: no image bytes, an
  ``image_path`` relative to an images folder, and the split spelled ``openEnded``.
- ``critic_lines``: official judge outputs, ``{"question_id", "critic"}`` with raw judge text.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

from PIL import Image

from judging.metrics import CRITERIA_ORDER

COLUMNS = (
    "question_id",
    "image_path",
    "question",
    "pred_a",
    "pred_b",
    "model_a",
    "model_b",
    "split",
    "criterion",
    "preference",
    "prompt_id",
)
MODELS = ("model-one", "model-two", "model-three")


def png(seed: int) -> bytes:
    rng = random.Random(seed)
    color = tuple(rng.randrange(256) for _ in range(3))
    out = io.BytesIO()
    Image.new("RGB", (16 + seed % 7, 12), color).save(out, format="PNG")
    return out.getvalue()


def published_rows(n_open: int = 4, n_reasoning: int = 4, *, seed: int = 0) -> list[dict]:
    """Rows of the release: one per (prompt, criterion), content repeated on every row."""
    rng = random.Random(seed)
    rows = []
    for split, count in (("open_ended", n_open), ("reasoning", n_reasoning)):
        for i in range(count):
            prompt = f"{split[:4]}-{i:03d}"
            model_a = rng.choice(MODELS)
            # every third pair is a same-model pair (two samples of one model)
            model_b = model_a if i % 3 == 2 else rng.choice([m for m in MODELS if m != model_a])
            criteria = CRITERIA_ORDER[split]
            kept = criteria if i % 4 else criteria[: 2 + i % 3]  # some prompts lack criteria
            image_seed = seed * 1000 + len(rows)
            for criterion in kept:
                rows.append(
                    {
                        "question_id": f"{prompt}_{criterion}",
                        "image_path": f"{split}/{prompt}.png",
                        "question": f"What does picture {prompt} show?",
                        "pred_a": f"Answer one for {prompt}.",
                        "pred_b": f"Answer two for {prompt}, longer.",
                        "model_a": model_a,
                        "model_b": model_b,
                        "split": split,
                        "criterion": criterion,
                        "preference": rng.choice(("model_a", "model_b")),
                        "prompt_id": prompt,
                        "_image": png(image_seed),
                    }
                )
    return rows


def _shared_image(rows: list[dict]) -> dict[str, bytes]:
    images: dict[str, bytes] = {}
    for row in rows:
        images.setdefault(row["prompt_id"], row["_image"])
    return {row["image_path"]: images[row["prompt_id"]] for row in rows}


def write_parquet(rows: list[dict], path: Path, *, split_label: str | None = None) -> Path:
    """One Parquet shard (HF Image struct in ``image``); ``split_label`` overrides the split."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    images = _shared_image(rows)
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    columns = {
        "image": pa.array(
            [{"bytes": images[r["image_path"]], "path": r["image_path"]} for r in rows],
            type=image_type,
        )
    }
    for name in COLUMNS:
        values = [split_label or r["split"] if name == "split" else r[name] for r in rows]
        columns[name] = pa.array(values, type=pa.string())
    pq.write_table(pa.table(columns), path)
    return path


def write_flat_jsonl(rows: list[dict], path: Path, images_dir: Path) -> Path:
    """Flattened JSONL, ``openEnded`` spelling, images written under ``images_dir``."""
    for image_path, data in _shared_image(rows).items():
        target = images_dir / image_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    spelled = {"open_ended": "openEnded", "reasoning": "reasoning"}
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            record = {name: row[name] for name in COLUMNS}
            record["split"] = spelled[row["split"]]
            handle.write(json.dumps(record) + "\n")
    return path


def critic_text(rng: random.Random, verdict: int | None) -> str:
    """A raw judge output ending (or not) in one of the styles judges write."""
    body = rng.choice(
        [
            "Response 1 is better at grounding, but that is not the criterion.\nLet me weigh.",
            "Both responses answer.\n\nResponse 2 is more detailed.",
            "The first response misreads the figure.",
        ]
    )
    if verdict is None:
        ending = rng.choice(["I cannot decide.", "Response 3 is better.", "Both are fine."])
    else:
        ending = rng.choice(
            [
                f"Response {verdict} is better.",
                f"**Response {verdict}** is better",
                f"RESPONSE {verdict} IS BETTER.",
                f"Final verdict: Response {verdict} is better.\n\n",
            ]
        )
    return f"{body}\n{ending}"


def critic_lines(rows: list[dict], *, seed: int = 1, drop: int = 0) -> list[dict]:
    """Official judge outputs for the rows: mostly parseable, some not, ``drop`` rows missing."""
    rng = random.Random(seed)
    lines = []
    for row in rows[drop:]:
        roll = rng.random()
        verdict = None if roll < 0.1 else (1 if rng.random() < 0.55 else 2)
        lines.append({"question_id": row["question_id"], "critic": critic_text(rng, verdict)})
    return lines


def write_jsonl(lines: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path
