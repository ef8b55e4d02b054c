"""A hand-made version for the paired comparison: one criterion separates two judges.

Reasoning split, 12 prompts, each with logic (model_a), grounding (model_b) and hallucination
(model_a). ``strong`` is right everywhere; ``weak`` is wrong on every logic row and on q00's
grounding row; ``weak-twin`` predicts as ``weak`` does. Worked out by hand (strong vs weak):

- logic: b = 12, c = 0, exact McNemar p = 2 * 0.5**12 = 0.00048828125;
  grounding: b = 1, c = 0, p = 1; hallucination: b = c = 0, p = 1;
- PAcc 100 vs 0, CMR 100 vs 11/24 = 45.83, TOS 100 vs 100 (weak still gives opposite valid
  verdicts on a conflicting pair of every prompt), Avg 100 vs 63.89, Overall 100 vs 63.89;
- every bootstrap replicate of PAcc, CMR, Avg and Overall favours strong: p = 2 / (n_boot + 1);
  TOS differs in none: p = 1;
- Holm over the 8 figures: logic 8 * p = 0.00390625; the four bootstrap figures 7 * p (ties
  keep the larger multiplier); grounding, hallucination and TOS 1. So logic, PAcc, CMR, Avg
  and Overall: "A better"; grounding, hallucination, TOS: "not distinguishable".
"""

from __future__ import annotations

from tests.judging.web_data import A, B, make_version, prediction_lines, predictions_file

PROMPTS = [f"q{i:02d}" for i in range(12)]
CRITERIA = {"logic": A, "grounding": B, "hallucination": A}
ROWS = [(p, "reasoning", c, pref) for p in PROMPTS for c, pref in CRITERIA.items()]
STRONG = {f"{p}__{c}": pref for p, _, c, pref in ROWS}
WEAK = {**STRONG, **{f"{p}__logic": B for p in PROMPTS}, "q00__grounding": A}
LOGIC_P = 2 * 0.5**12


def bootstrap_p(n_boot: int) -> float:
    return 2 / (n_boot + 1)


def paired_version(project, lead, *, judges=("strong", "weak", "weak-twin")):
    """The version with the given judges' predictions uploaded."""
    from judging.services.scoring import judge_run_upload

    version = make_version(project, ROWS)
    source = {"strong": STRONG, "weak": WEAK, "weak-twin": WEAK}
    for judge in judges:
        lines = prediction_lines(source[judge])
        judge_run_upload(version=version, judge=judge, file=predictions_file(lines), by=lead)
    return version
