"""Randomised differential test: our scoring path against a plain reading of the published rules.

The reference below is written from the rules (protocol sections 7 and 9, and the parity notes
of the scoring issue), deliberately simple and independent of ``judging``:

- a verdict: strip the text, its last three lines (blank lines count), lowercased, the first
  match of ``[*]*response (\\d+)[*]* is better``, the number read with ``int()``; 1 is model_a, 2 is
  model_b, anything else is no verdict;
- each split on its own; within it, a repeated question id keeps its first row, then the rows
  are filed by prompt and criterion so that a later row replaces an earlier one;
- a judge output per question id, the first one kept; a row without one has no verdict;
- a row is right when the verdict equals the human preference (a ``tie`` never does);
- a figure is ``round(mean * 100, 2)`` of a NumPy mean (so NumPy rounds it); Avg is the rounded
  mean of the rounded criterion accuracies, in the protocol's criterion order;
- a conflicting pair is two rows of a prompt preferring model_a and model_b; TOS counts prompts
  with one where the two verdicts are valid and opposite, CMR the pairs with both rows right.

Random datasets and judge outputs (seeded) go through ``resolve_dataset``, ``read_predictions``
and ``score_judges``, the path of ``score_judge --lenient``, and every figure must be equal.
"""

from __future__ import annotations

import io
import itertools
import json
import random
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command

from judging.datasets import resolve_dataset
from judging.predictions import DatasetIndex, read_predictions
from judging.report import JudgeInput, score_judges

CRITERIA = {
    "open_ended": (
        "completeness",
        "visual-grounding",
        "hallucination",
        "expressiveness",
        "clarity",
    ),
    "reasoning": ("grounding", "logic", "hallucination", "exploration", "efficiency"),
}
SPELLINGS = {
    "open_ended": ("open_ended", "open-ended", "openEnded", "Open_Ended"),
    "reasoning": ("reasoning", "Reasoning"),
}
# Decimal digits of a few scripts: ASCII, Arabic-Indic, extended Arabic-Indic, Devanagari,
# fullwidth and mathematical bold; int() reads every one of them.
DIGIT_ZEROS = (0x30, 0x660, 0x6F0, 0x966, 0xFF10, 0x1D7CE)
CASES = 300


# -- the reference ------------------------------------------------------------------------------


def split_of(label: str) -> str:
    name = label.strip().lower().replace("_", "-")
    return "open_ended" if name in ("open-ended", "openended") else name


def verdict(text: str | None) -> str | None:
    if text is None:
        return None
    last_three = "\n".join(text.strip().split("\n")[-3:]).lower()
    found = re.search(r"[*]*response (\d+)[*]* is better", last_three)
    if found is None:
        return None
    try:
        number = int(found.group(1))
    except ValueError:
        return None
    return {1: "model_a", 2: "model_b"}.get(number)


def figure(values: list) -> float:
    return float(round(np.mean(values) * 100, 2))


def reference(rows: list[dict], outputs: list[dict]) -> tuple[dict, int]:
    """The figures per split, and how many Avgs Python's rounding would have given otherwise."""
    first_output: dict[str, str] = {}
    for line in outputs:
        first_output.setdefault(line["question_id"], line["critic"])
    result, differ = {}, 0
    for split in ("open_ended", "reasoning"):
        seen: set[str] = set()
        filed: dict[str, dict[str, dict]] = {}
        for row in rows:
            if split_of(row["split"]) != split or row["question_id"] in seen:
                continue
            seen.add(row["question_id"])
            filed.setdefault(row["prompt_id"], {})[row["criterion"]] = row
        if not filed:
            continue
        kept = [row for prompt in filed.values() for row in prompt.values()]
        said = {row["question_id"]: verdict(first_output.get(row["question_id"])) for row in kept}

        def right(row: dict, said: dict = said) -> bool:
            return said[row["question_id"]] == row["preference"]

        accuracy = {}
        for criterion in CRITERIA[split]:
            these = [right(row) for row in kept if row["criterion"] == criterion]
            if these:
                accuracy[criterion] = figure(these)
        conflicts = 0
        noticed = []
        matched = []
        for prompt in filed.values():
            pairs = [
                (x, y)
                for x, y in itertools.combinations(prompt.values(), 2)
                if {x["preference"], y["preference"]} == {"model_a", "model_b"}
            ]
            if not pairs:
                continue
            conflicts += 1
            noticed.append(
                any(
                    said[x["question_id"]] in ("model_a", "model_b")
                    and said[y["question_id"]] in ("model_a", "model_b")
                    and said[x["question_id"]] != said[y["question_id"]]
                    for x, y in pairs
                )
            )
            matched += [right(x) and right(y) for x, y in pairs]
        avg = float(round(np.mean(list(accuracy.values())), 2))
        differ += avg != round(float(np.mean(list(accuracy.values()))), 2)
        result[split] = {
            "per_criterion": accuracy,
            "overall": figure([right(row) for row in kept]),
            "avg": avg,
            "pacc": figure([all(right(row) for row in p.values()) for p in filed.values()]),
            "tos": figure(noticed) if conflicts else None,
            "cmr": figure(matched) if matched else None,
        }
    return result, differ


# -- random cases -------------------------------------------------------------------------------


def number_text(rng: random.Random, number: int) -> str:
    zero = rng.choice(DIGIT_ZEROS)
    digits = "".join(chr(zero + int(d)) for d in str(number))
    roll = rng.random()
    if roll < 0.15:
        digits = chr(zero) * rng.randint(1, 3) + digits  # leading zeros
    elif roll < 0.17:
        digits = "0" * 5000 + digits  # more digits than int() converts from text
    return digits


def judge_text(rng: random.Random) -> str:
    number = rng.choices([1, 2, 3, 0, 12], weights=[40, 40, 8, 4, 4])[0]
    sentence = rng.choice(
        [
            "Response {n} is better.",
            "response {n} is better",
            "**Response {n}** is better.",
            "**Response {n} is better.**",
            "RESPONSE {n} IS BETTER!",
            "Final answer: Response {n} is better, mostly.",
            "Response {n} is the better one.",  # no verdict sentence
        ]
    ).format(n=number_text(rng, number))
    lines = [rng.choice(["The first is vivid.", "The second misreads the chart.", ""])]
    lines += [sentence]
    lines += rng.choice([[], [""], ["", ""], ["Thanks."], ["", "", "Thanks."], ["  "]])
    if rng.random() < 0.1:
        other = "Response 2 is better." if number == 1 else "Response 1 is better."
        lines.insert(rng.randint(0, len(lines)), other)
    return "\n".join(lines) + rng.choice(["", "\n", "\n\n  "])


def random_case(rng: random.Random) -> tuple[list[dict], list[dict]]:
    """Dataset rows (in file order, repeats included) and the judge's output lines."""
    rows: list[dict] = []
    used = {s: rng.sample(CRITERIA[s], rng.choice([2, 4, 4, 5])) for s in CRITERIA}
    prompts = {s: [f"{s[:1]}{i}" for i in range(rng.randint(2, 9))] for s in CRITERIA}
    # some prompts of the open-ended split also have rows in the reasoning split
    prompts["reasoning"] += rng.sample(prompts["open_ended"], rng.randint(0, 2))
    for split, names in prompts.items():
        for prompt in names:
            kept = [c for c in used[split] if rng.random() < 0.85] or used[split][:1]
            for criterion in kept:
                preference = rng.choices(["model_a", "model_b", "tie"], weights=[45, 45, 10])[0]
                rows.append(
                    {
                        "question_id": f"{prompt}-{split[0]}-{criterion}",
                        "prompt_id": prompt,
                        "split": rng.choice(SPELLINGS[split]),
                        "criterion": criterion,
                        "question": f"What is in picture {prompt}?",
                        "preference": preference,
                    }
                )
    for k in range(rng.choice([0, 0, 1, 3])):  # repeats, read as --lenient reads them
        earlier = rng.choice(rows)
        again = {**earlier, "preference": rng.choice(["model_a", "model_b", "tie"])}
        if rng.random() < 0.5:
            again["question_id"] = f"{earlier['question_id']}-again{k}"  # same prompt, criterion
        rows.insert(rng.randint(rows.index(earlier) + 1, len(rows)), again)
    outputs = [
        {"question_id": row["question_id"], "critic": judge_text(rng)}
        for row in rows
        if rng.random() < 0.9
    ]
    outputs += [
        {"question_id": rng.choice(rows)["question_id"], "critic": judge_text(rng)}
        for _ in range(rng.choice([0, 0, 2]))
    ]
    rng.shuffle(outputs)
    return rows, outputs


def write_rows(rows: list[dict], path: Path) -> Path:
    if path.suffix == ".parquet":
        pq.write_table(pa.table({k: [r[k] for r in rows] for k in rows[0]}), path)
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def write_outputs(outputs: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in outputs))
    return path


def ours(payload: dict) -> dict:
    return {
        split: {
            "per_criterion": {k: v["acc"] for k, v in s["per_criterion"].items()},
            **{key: s[key]["value"] for key in ("overall", "avg", "pacc", "tos", "cmr")},
        }
        for split, s in payload["judges"]["judge"]["scores"].items()
    }


def scored(data: Path, judge: Path) -> dict:
    """The path of ``score_judge --lenient``: dataset, predictions, scores."""
    rows, label = resolve_dataset(str(data), skipped=[])
    parsed = read_predictions(judge, dataset_index=DatasetIndex(rows), lenient=True)
    judges = [JudgeInput(name="judge", source=str(judge), parsed=parsed)]
    return ours(score_judges(rows, judges, dataset=label, n_boot=0))


def test_random_cases_score_as_the_published_rules(tmp_path):
    rng = random.Random(20260601)
    rounding_differs = ties = two_split_prompts = repeats = 0
    for case in range(CASES):
        rows, outputs = random_case(rng)
        suffix = ".parquet" if case % 10 == 0 else ".jsonl"
        data = write_rows(rows, tmp_path / f"rows{case}{suffix}")
        judge = write_outputs(outputs, tmp_path / f"judge{case}.jsonl")
        expected, differ = reference(rows, outputs)
        assert scored(data, judge) == expected, f"case {case}"
        rounding_differs += differ
        ties += any(r["preference"] == "tie" for r in rows)
        two_split_prompts += any(
            p.startswith("o")
            for p in {r["prompt_id"] for r in rows}
            & {r["prompt_id"] for r in rows if split_of(r["split"]) == "reasoning"}
        )
        repeats += len(rows) > len({(r["question_id"], split_of(r["split"])) for r in rows})
    # The cases reach what they are here for, the Avg that NumPy rounds otherwise than Python
    # among them.
    assert rounding_differs >= 1
    assert min(ties, two_split_prompts, repeats) >= 20


def test_the_parser_reads_unicode_digits_and_leading_zeros_as_published(tmp_path):
    rng = random.Random(5)
    texts = [judge_text(rng) for _ in range(3000)]
    rows = [
        {"question_id": f"q{i}", "prompt_id": f"p{i}", "split": "reasoning", "criterion": "logic"}
        | {"preference": "model_a"}
        for i in range(len(texts))
    ]
    outputs = [{"question_id": f"q{i}", "critic": t} for i, t in enumerate(texts)]
    data = write_rows(rows, tmp_path / "rows.jsonl")
    parsed = read_predictions(
        write_outputs(outputs, tmp_path / "judge.jsonl"),
        dataset_index=DatasetIndex(resolve_dataset(str(data))[0]),
    )
    labels = [None if x == "invalid" else x for x in parsed.run_list()[0].tolist()]
    assert labels == [verdict(t) for t in texts]
    read = [t for t, label in zip(texts, labels, strict=True) if label is not None]
    assert any(re.search(r"response [^\x00-\x7f]", t.lower()) for t in read)  # other scripts
    assert any(re.search(r"response \**0+[12]", t.lower()) for t in read)  # leading zeros


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_the_command_prints_the_reference_figures(tmp_path, seed):
    rows, outputs = random_case(random.Random(seed))
    data = write_rows(rows, tmp_path / "rows.jsonl")
    judge = write_outputs(outputs, tmp_path / "judge.jsonl")
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "score_judge",
        str(data),
        str(judge),
        "--lenient",
        "--format",
        "json",
        "--n-boot",
        "0",
        stdout=out,
        stderr=err,
    )
    assert ours(json.loads(out.getvalue())) == reference(rows, outputs)[0]
