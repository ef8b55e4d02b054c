"""Files for the import tests: small real images and JSONL / Parquet writers."""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image


def png_bytes(color: str = "red", size: tuple[int, int] = (40, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def jpeg_bytes(size: tuple[int, int] = (40, 30), orientation: int | None = None) -> bytes:
    out = io.BytesIO()
    image = Image.new("RGB", size, "blue")
    if orientation is None:
        image.save(out, format="JPEG")
    else:
        exif = Image.Exif()
        exif[0x0112] = orientation
        image.save(out, format="JPEG", exif=exif.tobytes())
    return out.getvalue()


def sample_line(external_id: str, **fields) -> dict:
    line = {
        "id": external_id,
        "split": "open_ended",
        "question": f"Describe picture {external_id}.",
        "image": "img/red.png",
        "response_a": "A red rectangle on a plain background.",
        "response_b": "A rectangle, coloured red, filling the frame.",
        "model_a": "model-x",
        "model_b": "model-y",
    }
    line.update(fields)
    return line


def write_jsonl(path: Path, lines: list, *, images: dict[str, bytes] | None = None) -> Path:
    """Write ``lines`` (dicts, or raw strings written as they are) and images beside them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    images = {"img/red.png": png_bytes()} if images is None else images
    for name, data in images.items():
        target = path.parent / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    with open(path, "w") as handle:
        for line in lines:
            handle.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return path


def multicrit_rows(prompt_id: str, prefs: dict[str, str], **fields) -> list[dict]:
    base = {
        "prompt_id": prompt_id,
        "question": f"Which figure is {prompt_id}?",
        "pred_a": "Response one, short.",
        "pred_b": "Response two, a bit longer.",
        "model_a": "m1",
        "model_b": "m2",
        "split": "open_ended",
    }
    base.update(fields)
    return [
        {**base, "question_id": f"{prompt_id}__{c}", "criterion": c, "preference": p}
        for c, p in prefs.items()
    ]
