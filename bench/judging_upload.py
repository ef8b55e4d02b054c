"""Time the web upload path: read, check, store and score a judge's predictions file.

    DATABASE_URL=postgres://... .venv/bin/python bench/judging_upload.py [--prompts N] [--runs R]

Builds a throwaway test database (``test_<name>``, dropped at the end), a ready dataset version
of N prompts x 5 criteria of each split, then uploads R runs of one judge through
``judge_run_upload`` (each upload rescoring the judge over all its runs, majority-voted) and
reads the leaderboard rows. Prints seconds per step.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

import numpy as np  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from judging.metrics import CRITERIA_ORDER  # noqa: E402


def build_version(n_prompts: int, rng: np.random.Generator):
    from aggregation.export.rows import question_id_for
    from aggregation.models import DatasetRow, DatasetVersion
    from annotation.services.projects import project_create

    project = project_create(name="Bench", slug="bench")
    version = DatasetVersion.objects.create(project=project, number=1)
    rows = []
    for split, criteria in CRITERIA_ORDER.items():
        for p in range(n_prompts):
            prompt = f"{split[:4]}{p}"
            for criterion in criteria:
                preference = "model_a" if rng.random() < 0.55 else "model_b"
                qid = question_id_for(prompt, criterion)
                rows.append(
                    DatasetRow(
                        version=version,
                        question_id=qid,
                        prompt_id=prompt,
                        split=split,
                        criterion=criterion,
                        preference=preference,
                        data={"question_id": qid, "preference": preference},
                    )
                )
    DatasetRow.objects.bulk_create(rows, batch_size=5000)
    DatasetVersion.objects.filter(pk=version.pk).update(status="ready", row_count=len(rows))
    version.refresh_from_db()
    return version, [(r.question_id, r.preference) for r in rows]


def predictions_file(rows: list[tuple[str, str]], rng: np.random.Generator) -> io.BytesIO:
    flip = {"model_a": "model_b", "model_b": "model_a"}
    right = rng.random(len(rows)) < 0.7
    lines = [
        json.dumps({"question_id": qid, "prediction": pref if ok else flip[pref]})
        for (qid, pref), ok in zip(rows, right, strict=True)
    ]
    handle = io.BytesIO("\n".join(lines).encode())
    handle.name = "bench.jsonl"
    return handle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=10_000, help="prompts per split")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        from judging.selectors.leaderboard import leaderboard_rows
        from judging.services.scoring import judge_run_upload, scorecard_compute

        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        version, rows = build_version(args.prompts, rng)
        print(f"dataset version: {len(rows):,} rows built in {time.perf_counter() - t0:.2f} s")
        for run in range(1, args.runs + 1):
            handle = predictions_file(rows, rng)
            t0 = time.perf_counter()
            judge_run_upload(version=version, judge="bench-judge", file=handle, by=None)
            elapsed = time.perf_counter() - t0
            print(
                f"upload run {run}: {len(rows):,} predictions read, stored and scored "
                f"(vote over {run} run{'s' if run > 1 else ''}) in {elapsed:.2f} s"
            )
        t0 = time.perf_counter()
        cards = scorecard_compute(version=version, judge="bench-judge")
        print(f"rescore from the database: {time.perf_counter() - t0:.2f} s")
        t0 = time.perf_counter()
        board, _, _ = leaderboard_rows(version=version, split="open_ended", sort="-tos")
        print(f"leaderboard rows: {time.perf_counter() - t0:.3f} s")
        for card in cards:
            print(f"  {card.split}: PAcc {card.pacc} CMR {card.cmr} TOS {card.tos} Avg {card.avg}")
        assert board and board[0].judge == "bench-judge"
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
