"""Time the sample import on a large file and show that it streams (bounded memory).

    DATABASE_URL=postgres://... .venv/bin/python bench/import_samples.py [--samples N]

Builds a throwaway test database (``test_<name>``, dropped at the end) and imports, in turn:
our JSONL format with N samples, the same file again (idempotent re-import, nothing written),
and a Multi-Crit Parquet file of N prompts x 3 criteria rows with embedded images. Prints the
seconds per import, the samples per second, and the growth of the process's peak memory
(resident set), which stays far below the size of the file's contents.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
from PIL import Image  # noqa: E402

CRITERIA = {
    "open_ended": ["completeness", "hallucination", "clarity"],
    "reasoning": ["logic", "grounding", "efficiency"],
}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def png(i: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (320, 240), (i * 37 % 256, i * 91 % 256, i * 53 % 256)).save(out, "PNG")
    return out.getvalue()


def write_jsonl(directory: Path, n: int) -> Path:
    images = directory / "img"
    images.mkdir()
    for i in range(50):
        (images / f"{i}.png").write_bytes(png(i))
    path = directory / "samples.jsonl"
    with open(path, "w") as handle:
        for i in range(n):
            split = "open_ended" if i % 2 else "reasoning"
            line = {
                "id": f"s{i}",
                "split": split,
                "question": f"Question {i}: what does the figure show? " * 4,
                "image": f"img/{i % 50}.png",
                "response_a": f"Response A to {i}. " * 40,
                "response_b": f"Response B to {i}, a little different. " * 30,
                "model_a": "model-x",
                "model_b": "model-y",
                "metadata": {"n": i},
            }
            handle.write(json.dumps(line) + "\n")
    return path


def write_parquet(directory: Path, n: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = directory / "rows.parquet"
    writer = None
    images = [png(i) for i in range(50)]
    for start in range(0, n, 1000):
        rows = []
        for i in range(start, min(n, start + 1000)):
            split = "open_ended" if i % 2 else "reasoning"
            for criterion in CRITERIA[split]:
                rows.append(
                    {
                        "prompt_id": f"p{i}",
                        "question_id": f"p{i}__{criterion}",
                        "split": split,
                        "criterion": criterion,
                        "question": f"Question {i}? " * 8,
                        "pred_a": f"Answer A {i}. " * 40,
                        "pred_b": f"Answer B {i}. " * 35,
                        "model_a": "m1",
                        "model_b": "m2",
                        "preference": "model_a" if (i + len(criterion)) % 2 else "model_b",
                        "image": {"bytes": images[i % 50], "path": None},
                    }
                )
        table = pa.Table.from_pylist(rows)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()
    return path


def timed(label: str, n: int, fn) -> None:
    before = peak_mb()
    started = time.perf_counter()
    report = fn()
    seconds = time.perf_counter() - started
    print(
        f"{label:<34} {seconds:8.1f} s  {n / seconds:8.0f} samples/s  "
        f"peak RSS +{peak_mb() - before:6.1f} MB   ({report.summary()})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=20_000)
    args = parser.parse_args()
    n = args.samples

    setup_test_environment()
    # As in production: with DEBUG on, Django keeps every executed query (and its data) in memory.
    settings.DEBUG = False
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings.MEDIA_ROOT = Path(tmp) / "media"
            from annotation.importing.service import samples_import
            from annotation.services.projects import project_create

            directory = Path(tmp)
            jsonl = write_jsonl(directory, n)
            (directory / "pq").mkdir()
            parquet = write_parquet(directory / "pq", n)
            print(
                f"{n} samples: JSONL {jsonl.stat().st_size / 2**20:.1f} MB, "
                f"Parquet {parquet.stat().st_size / 2**20:.1f} MB ({n * 3} rows); "
                f"peak RSS before imports {peak_mb():.0f} MB"
            )
            one = project_create(name="Bench JSONL", slug="bench-jsonl")
            timed("JSONL import", n, lambda: samples_import(project=one, path=jsonl))
            timed("JSONL re-import (unchanged)", n, lambda: samples_import(project=one, path=jsonl))
            two = project_create(name="Bench rows", slug="bench-rows")
            timed("Multi-Crit Parquet import", n, lambda: samples_import(project=two, path=parquet))
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
