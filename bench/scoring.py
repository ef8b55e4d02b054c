"""Time the judge metrics on a large synthetic dataset (default 200,000 prompts x 5 criteria).

    .venv/bin/python bench/scoring.py [--prompts N] [--runs R] [--n-boot B] [--file]

Prints seconds for: integer coding of the rows, one score without and with the prompt bootstrap,
a majority vote over R runs, scoring every run plus the vote, and (``--file``) reading a
predictions JSONL file of the same size.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judging.metrics import (
    CRITERIA_ORDER,
    ScoreInput,
    encode_predictions,
    majority_vote_codes,
    score_runs,
    score_split,
)
from judging.predictions import DatasetIndex, read_predictions

SPLIT = "open_ended"


def synthetic(n_prompts: int, rng: np.random.Generator) -> ScoreInput:
    criteria = np.array(CRITERIA_ORDER[SPLIT])
    prompt = np.char.add("p", np.repeat(np.arange(n_prompts), len(criteria)).astype(str))
    criterion = np.tile(criteria, n_prompts)
    return ScoreInput(
        question_id=np.char.add(np.char.add(prompt, "__"), criterion),
        prompt_id=prompt,
        split=np.full(len(prompt), SPLIT),
        criterion=criterion,
        preference=np.where(rng.random(len(prompt)) < 0.55, "model_a", "model_b"),
    )


def judge_run(rows: ScoreInput, rng: np.random.Generator) -> np.ndarray:
    right = rng.random(len(rows)) < 0.7
    flipped = np.where(rows.preference == "model_a", "model_b", "model_a")
    out = np.where(right, rows.preference, flipped).astype(object)
    out[rng.random(len(rows)) < 0.02] = "invalid"
    return out


def timed(label: str, fn):
    start = time.perf_counter()
    value = fn()
    print(f"{label:<58} {time.perf_counter() - start:8.3f} s", flush=True)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--file", action="store_true", help="also time reading a JSONL file")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    rows = synthetic(args.prompts, rng)
    runs = [judge_run(rows, rng) for _ in range(args.runs)]
    n = len(rows)
    print(f"{n:,} rows ({args.prompts:,} prompts x {n // args.prompts} criteria), {args.runs} runs")

    timed("integer-code the rows (np.unique, once per dataset)", lambda: rows.split_codes(SPLIT))
    codes = timed("encode one run's labels", lambda: encode_predictions(runs[0]))
    result = timed(
        "score one run, no bootstrap", lambda: score_split(rows, codes, split=SPLIT, n_boot=0)
    )
    result = timed(
        f"score one run, bootstrap {args.n_boot} prompt resamples",
        lambda: score_split(rows, codes, split=SPLIT, n_boot=args.n_boot),
    )
    matrix = np.stack([encode_predictions(r) for r in runs])
    timed(f"majority vote over {args.runs} runs", lambda: majority_vote_codes(matrix))
    timed(
        f"score {args.runs} runs + their vote, no bootstrap",
        lambda: score_runs(rows, list(matrix), n_boot=0),
    )
    timed(
        f"score {args.runs} runs + their vote, bootstrap {args.n_boot}",
        lambda: score_runs(rows, list(matrix), n_boot=args.n_boot),
    )
    print(
        "figures of one run: PAcc {pacc} CI {pci}, CMR {cmr}, TOS {tos}, Avg {avg}".format(
            pacc=result["pacc"]["value"],
            pci=result["pacc"]["ci"],
            cmr=result["cmr"]["value"],
            tos=result["tos"]["value"],
            avg=result["avg"]["value"],
        )
    )
    if args.file:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "judge.jsonl"
            with path.open("w") as handle:
                for qid, label in zip(rows.question_id.tolist(), runs[0].tolist(), strict=True):
                    handle.write(json.dumps({"question_id": qid, "prediction": label}) + "\n")
            index = timed("index the dataset for predictions files", lambda: DatasetIndex(rows))
            timed(
                f"read a {n:,}-line predictions JSONL file",
                lambda: read_predictions(path, dataset_index=index),
            )


if __name__ == "__main__":
    main()
