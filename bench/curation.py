"""Time pairing and the first two curation filters on synthetic generations.

    .venv/bin/python bench/curation.py [--prompts 10000] [--models 5] [--samples 5] [--seed 0]

Builds prompts x models x samples responses (reasoning prompts, about 60 words each, every
response ending in a stated answer), then times, in this process and without a database:
cross-model pairing (2 per prompt), same-model pairing (TF-IDF cosine, one pair per prompt and
model), the length filter (words) and the correctness filter (the answer extractor on every
response of a surviving pair). Prints seconds per step and the peak resident memory above the
baseline after the data was built.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from curation.answers import answer_check
from curation.filters import correctness_filter, length_filter
from curation.pairing import Prompt, Response, cross_model_pairs, same_model_pairs

TEXT = (
    "the triangle has sides of length three and four so by the theorem of pythagoras the "
    "hypotenuse squared equals nine plus sixteen which is twenty five and its root gives five "
    "we check the figure again the angle at the base looks right and the labels agree"
)
WORDS = TEXT.split()


def peak_mb() -> float:
    """Peak resident memory of this process in MB (Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build(prompts: int, models: int, samples: int, seed: int) -> list[Prompt]:
    rng = np.random.default_rng(seed)
    out = []
    key = 0
    for p in range(prompts):
        responses = []
        for m in range(models):
            for s in range(samples):
                n = int(rng.integers(40, 80))
                words = rng.choice(len(WORDS), size=n)
                answer = 5 if rng.random() < 0.6 else int(rng.integers(1, 9))
                text = " ".join(WORDS[i] for i in words) + f"\nThe answer is {answer}."
                responses.append(Response(key, f"model-{m}", s, text))
                key += 1
        out.append(Prompt(f"p{p:06d}", tuple(responses)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    started = time.perf_counter()
    prompts = build(args.prompts, args.models, args.samples, args.seed)
    n_responses = args.prompts * args.models * args.samples
    print(
        f"built {args.prompts:,} prompts, {n_responses:,} responses "
        f"in {time.perf_counter() - started:.1f} s"
    )
    base = peak_mb()
    rows = []

    def step(name, fn):
        t = time.perf_counter()
        result = fn()
        rows.append((name, time.perf_counter() - t))
        return result

    cross = step(
        "cross-model pairing (2 per prompt)",
        lambda: cross_model_pairs(prompts, pairs_per_prompt=2, seed=args.seed),
    )
    same = step(
        "same-model pairing (TF-IDF cosine)", lambda: same_model_pairs(prompts, seed=args.seed)
    )
    pairs = cross + same
    length = step(
        "length filter (words)",
        lambda: length_filter([p.a.text for p in pairs], [p.b.text for p in pairs]),
    )
    alive = [p for p, ok in zip(pairs, length.passed.tolist(), strict=True) if ok]

    def correctness():
        checks = {}
        for p in alive:
            for r in (p.a, p.b):
                if r.key not in checks:
                    checks[r.key] = answer_check(r.text, "5")
        return correctness_filter(
            [checks[p.a.key].correct for p in alive],
            [checks[p.b.key].correct for p in alive],
            answers_a=[checks[p.a.key].extracted for p in alive],
            answers_b=[checks[p.b.key].extracted for p in alive],
            reference=["5"] * len(alive),
            by=["answer extractor"] * len(alive),
        )

    kept = step("correctness filter (answer extractor)", correctness)
    total = sum(seconds for _, seconds in rows)
    print("\n| step | seconds |\n|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} |")
    print(f"| total | {total:.2f} |")
    print(
        f"\npairs: {len(cross):,} cross-model + {len(same):,} same-model = {len(pairs):,}; "
        f"after length {len(alive):,}; after correctness {int(kept.passed.sum()):,}"
    )
    print(f"peak memory: {peak_mb():.0f} MB (+{peak_mb() - base:.0f} MB over the built data)")


if __name__ == "__main__":
    main()
