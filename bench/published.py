"""Time importing the published benchmark as a version and scoring official judge outputs.

    DATABASE_URL=postgres://... .venv/bin/python bench/published.py [--prompts N]

Builds a throwaway test database (dropped at the end) and Parquet shards in the release's layout
(a shard per split, N prompts x 5 criteria rows, the Image struct with embedded bytes), then
prints, each beside its floor measured in the same run:

- ``import_benchmark`` (import + freezing the version) beside the plain sample import of the
  same shards, and the re-run that finds the version unchanged;
- reading and scoring a ``critic`` outputs file for every row beside parsing the raw texts alone.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
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
    "open_ended": [
        "completeness",
        "visual-grounding",
        "hallucination",
        "expressiveness",
        "clarity",
    ],
    "reasoning": ["grounding", "logic", "hallucination", "exploration", "efficiency"],
}


def png(i: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (320, 240), (i * 37 % 256, i * 91 % 256, i * 53 % 256)).save(out, "PNG")
    return out.getvalue()


def write_shards(directory: Path, n: int) -> tuple[list[Path], list[str]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(0)
    images = [png(i) for i in range(50)]
    paths, qids = [], []
    for split, criteria in CRITERIA.items():
        rows = []
        for i in range(n // 2):
            prompt = f"{split}-{i}"
            for criterion in criteria:
                qids.append(f"{prompt}_{criterion}")
                rows.append(
                    {
                        "image": {"bytes": images[i % 50], "path": f"{prompt}.png"},
                        "question_id": qids[-1],
                        "image_path": f"{prompt}.png",
                        "question": f"What does picture {i} show?",
                        "pred_a": f"Answer one about picture {i}. " * 8,
                        "pred_b": f"Answer two about picture {i}. " * 9,
                        "model_a": "model-one",
                        "model_b": "model-two",
                        "split": split,
                        "criterion": criterion,
                        "preference": rng.choice(["model_a", "model_b"]),
                        "prompt_id": prompt,
                    }
                )
        path = directory / f"{split}.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
        paths.append(path)
    return paths, qids


def line(label: str, seconds: float, rows: int) -> None:
    print(f"{label:<40} {seconds:7.2f} s  {rows / seconds:9.0f} rows/s")


def timed(label: str, fn) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=4000)
    n = parser.parse_args().prompts

    setup_test_environment()
    settings.DEBUG = False
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings.MEDIA_ROOT = Path(tmp) / "media"
            from aggregation.services.benchmark import benchmark_import
            from annotation.importing.service import samples_import
            from judging.datasets import resolve_dataset
            from judging.parsing import parse_judge_output
            from judging.predictions import read_predictions
            from judging.report import JudgeInput, score_judges

            shards, qids = write_shards(Path(tmp), n)
            rows = len(qids)
            print(f"{n} prompts, {rows} rows in 2 Parquet shards")
            floor, _ = timed(
                "import", lambda: samples_import(project="floor", path=shards, slots=False)
            )
            full, result = timed("bench", lambda: benchmark_import(project="bench", paths=shards))
            again, second = timed("again", lambda: benchmark_import(project="bench", paths=shards))
            assert result.created and not second.created
            line("sample import alone (floor)", floor, rows)
            line("import_benchmark (import + version)", full, rows)
            print(f"{'import_benchmark again (unchanged)':<40} {again:7.2f} s")

            rng = random.Random(1)
            outputs = Path(tmp) / "critic.jsonl"
            texts = []
            with outputs.open("w") as handle:
                for qid in qids:
                    text = f"Comparing both.\n\n**Response {rng.choice('12')}** is better."
                    texts.append(text)
                    handle.write(json.dumps({"question_id": qid, "critic": text}) + "\n")
            parse, _ = timed("parse", lambda: [parse_judge_output(t) for t in texts])
            dataset, _ = resolve_dataset(f"bench:v{result.version.number}")

            def score():
                parsed = read_predictions(outputs, dataset_index=dataset)
                judge = JudgeInput(name="j", source=str(outputs), parsed=parsed)
                return score_judges(dataset, [judge], dataset="bench", n_boot=0)

            scoring, _ = timed("score", score)
            line("parsing the raw texts alone (floor)", parse, rows)
            line("read + parse + score (no bootstrap)", scoring, rows)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
