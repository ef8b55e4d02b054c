"""Coverage and width of prediction-powered judge evaluation (PPI++) at the benchmark's size.

    .venv/bin/python bench/ppi.py [--prompts 300] [--share 0.15] [--runs 1000] [--seed 0]

Each run draws one split of ``--prompts`` prompts with 3 or 4 criteria each (about 1,000 rows):
human preferences, a judge right on a criterion with its own probability (0.62 to 0.85, a little
more often on easy prompts) and a reference (a judge panel) agreeing with the humans on 88% of
the rows. A random ``--share`` of the prompts keeps its human labels. Per criterion and for PAcc
it compares the 95% PPI++ interval and the human-only interval of the same labeled rows with the
figure on every human label of the pool. Prints per target the coverage of both and the mean
widths, then the two summary lines over every (run, target): the PPI coverage and the ratio of
the mean PPI width to the mean human-only width.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judging.metrics import CRITERIA_ORDER, A, B
from judging.ppi import ppi_accuracy, ppi_pacc, prompt_outcomes

CRITERIA = CRITERIA_ORDER["reasoning"][:4]
JUDGE_ACCURACY = np.array([0.85, 0.74, 0.68, 0.62])
REFERENCE_AGREEMENT = 0.88


def draw(n_prompts: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One split: prompt and criterion codes, human, judge and reference verdict codes."""
    n_crit = rng.integers(3, 5, size=n_prompts)
    prompt = np.repeat(np.arange(n_prompts), n_crit)
    criterion = np.concatenate([rng.permutation(len(CRITERIA))[:k] for k in n_crit])
    human = np.where(rng.random(len(prompt)) < 0.5, A, B).astype(np.int8)
    ease = rng.normal(0.0, 0.08, n_prompts)[prompt]
    right = rng.random(len(prompt)) < np.clip(JUDGE_ACCURACY[criterion] + ease, 0, 1)
    judge = np.where(right, human, A + B - human).astype(np.int8)
    agree = rng.random(len(prompt)) < REFERENCE_AGREEMENT
    reference = np.where(agree, human, A + B - human).astype(np.int8)
    return {
        "prompt": prompt,
        "criterion": criterion,
        "human": human,
        "judge": judge,
        "reference": reference,
    }


def one_run(n_prompts: int, share: float, rng: np.random.Generator) -> np.ndarray:
    """Per target (criteria, then PAcc): PPI covered, human covered, PPI width, human width."""
    d = draw(n_prompts, rng)
    picked = np.zeros(n_prompts, dtype=bool)
    picked[rng.choice(n_prompts, size=round(share * n_prompts), replace=False)] = True
    labeled = picked[d["prompt"]]
    args = (d["human"], d["judge"], d["reference"], labeled)
    acc = ppi_accuracy(d["criterion"], *args, len(CRITERIA))
    pacc = ppi_pacc(d["prompt"], *args, n_prompts)
    y = d["judge"] == d["human"]
    truth_acc = np.bincount(d["criterion"], weights=y) / np.bincount(d["criterion"])
    y_p, _, _ = prompt_outcomes(d["prompt"], y, y, labeled, n_prompts)
    truth = np.append(truth_acc, y_p.mean())
    low, high = np.append(acc.low, pacc.low), np.append(acc.high, pacc.high)
    h_low = np.append(acc.human_low, pacc.human_low)
    h_high = np.append(acc.human_high, pacc.human_high)
    return np.stack(
        [
            (low <= truth) & (truth <= high),
            (h_low <= truth) & (truth <= h_high),
            high - low,
            h_high - h_low,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=300)
    parser.add_argument("--share", type=float, default=0.15)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    results = np.stack([one_run(args.prompts, args.share, rng) for _ in range(args.runs)])
    covered, h_covered, width, h_width = (results[:, i, :] for i in range(4))
    print(
        f"{args.runs:,} runs of {args.prompts} prompts x 3-4 criteria, {args.share:.0%} of "
        f"the prompts labeled, reference agreeing with the humans on {REFERENCE_AGREEMENT:.0%}"
    )
    print(f"{'target':<14} {'PPI cover':>9} {'human cover':>11} {'PPI width':>9} {'human':>7}")
    for i, name in enumerate([*CRITERIA, "PAcc"]):
        print(
            f"{name:<14} {covered[:, i].mean():>9.1%} {h_covered[:, i].mean():>11.1%} "
            f"{width[:, i].mean():>9.3f} {h_width[:, i].mean():>7.3f}"
        )
    print(f"coverage {100 * covered.mean():.1f}%")
    print(f"width ratio {width.mean() / h_width.mean():.2f}")


if __name__ == "__main__":
    main()
