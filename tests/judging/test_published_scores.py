"""Scores on files in the published layout equal an independent reading of the published rule."""

from __future__ import annotations

import io
import json
import re
from collections import defaultdict
from itertools import combinations

import numpy as np
import pytest
from django.core.management import call_command

from tests.published_data import (
    critic_lines,
    published_rows,
    write_flat_jsonl,
    write_jsonl,
    write_parquet,
)


def pct(values: list) -> float:
    """round(100 * mean, 2) of a NumPy mean, as the published code computes a figure."""
    return float(round(np.mean(values) * 100, 2))


def reference_scores(rows: list[dict], outputs: list[dict]) -> dict[str, dict]:
    """The published evaluation written out in plain Python, independent of judging/."""
    critic: dict[str, str] = {}
    for line in outputs:
        critic.setdefault(line["question_id"], line["critic"])  # first row of a duplicate

    def verdict(text: str | None) -> str | None:
        if text is None:
            return None
        found = re.findall(
            r"[*]*response (\d+)[*]* is better", "\n".join(text.strip().split("\n")[-3:]).lower()
        )
        return {"1": "model_a", "2": "model_b"}.get(found[0]) if found else None

    out = {}
    for split in ("open_ended", "reasoning"):
        by_criterion: dict[str, list[bool]] = defaultdict(list)
        by_prompt: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
        for row in rows:
            if row["split"] != split:
                continue
            pred = verdict(critic.get(row["question_id"]))
            by_criterion[row["criterion"]].append(pred == row["preference"])
            by_prompt[row["prompt_id"]].append((row["preference"], pred))
        acc = {c: pct(v) for c, v in by_criterion.items()}
        pacc = [all(h == p for h, p in items) for items in by_prompt.values()]
        pairs = matched = 0
        conflict_prompts = sensitive = 0
        for items in by_prompt.values():
            conflicts = [(x, y) for x, y in combinations(items, 2) if x[0] != y[0]]
            if not conflicts:
                continue
            conflict_prompts += 1
            pairs += len(conflicts)
            matched += sum(x[0] == x[1] and y[0] == y[1] for x, y in conflicts)
            sensitive += any(
                x[1] is not None and y[1] is not None and x[1] != y[1] for x, y in conflicts
            )
        out[split] = {
            "per_criterion": acc,
            # round() of a NumPy mean rounds as NumPy does, as the published code's figures
            "avg": float(round(np.mean(list(acc.values())), 2)),
            "pacc": pct(pacc),
            "cmr": pct([1] * matched + [0] * (pairs - matched)) if pairs else None,
            "tos": pct([1] * sensitive + [0] * (conflict_prompts - sensitive))
            if conflict_prompts
            else None,
        }
    return out


def score(*args: str) -> tuple[dict, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("score_judge", *args, "--format", "json", "--n-boot", "0", stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def ours(payload: dict, judge: str) -> dict[str, dict]:
    scores = payload["judges"][judge]["scores"]
    return {
        split: {
            "per_criterion": {k: v["acc"] for k, v in s["per_criterion"].items()},
            **{key: s[key]["value"] for key in ("avg", "pacc", "cmr", "tos")},
        }
        for split, s in scores.items()
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_equal_the_reference_on_parquet_shards(tmp_path, seed):
    rows = published_rows(9, 11, seed=seed)
    open_rows = [r for r in rows if r["split"] == "open_ended"]
    reasoning_rows = [r for r in rows if r["split"] == "reasoning"]
    shards = [
        write_parquet(open_rows, tmp_path / "open_ended.parquet", split_label="open_ended"),
        write_parquet(reasoning_rows, tmp_path / "reasoning.parquet"),
    ]
    outputs = critic_lines(rows, seed=seed + 10, drop=3)  # three rows have no output
    # a duplicated question id keeps its first row (lenient reading, as the published code)
    outputs.append({"question_id": outputs[0]["question_id"], "critic": "Response 2 is better."})
    outputs.append({"question_id": outputs[0]["question_id"], "critic": "Response 1 is better."})
    path = write_jsonl(outputs, tmp_path / "judge.jsonl")
    payload, err = score(",".join(str(s) for s in shards), str(path), "--lenient")
    assert ours(payload, "judge") == reference_scores(rows, outputs)
    assert payload["missing"] == "wrong"
    assert "3 dataset rows have no prediction and count as wrong" in err
    assert "duplicating an earlier line" in err


def test_flattened_jsonl_with_openended_spelling(tmp_path):
    rows = published_rows(6, 6, seed=4)
    data = write_flat_jsonl(rows, tmp_path / "multicrit.jsonl", tmp_path / "images")
    assert '"split": "openEnded"' in data.read_text()
    outputs = critic_lines(rows, seed=5)
    # a predictions line may also carry the split, in any spelling
    outputs = [
        {**line, "split": "open-ended"} if "open" in line["question_id"] else line
        for line in outputs
    ]
    path = write_jsonl(outputs, tmp_path / "judge.jsonl")
    payload, _ = score(str(data), str(path))
    assert set(payload["splits"]) == {"open_ended", "reasoning"}
    assert ours(payload, "judge") == reference_scores(rows, outputs)


def test_missing_skip_leaves_out_and_names_the_rows(tmp_path):
    rows = published_rows(5, 5, seed=6)
    data = write_parquet(rows, tmp_path / "all.parquet")
    outputs = critic_lines(rows, seed=7, drop=4)
    path = write_jsonl(outputs, tmp_path / "partial.jsonl")
    skipped_ids = [r["question_id"] for r in rows[:4]]

    payload, _ = score(str(data), str(path), "--missing", "skip")
    kept = [r for r in rows if r["question_id"] not in skipped_ids]
    assert ours(payload, "partial") == reference_scores(kept, outputs)
    assert payload["missing"] == "skip"
    assert payload["judges"]["partial"]["skipped"]["open_ended"] == skipped_ids
    assert payload["judges"]["partial"]["skipped"]["reasoning"] == []

    out = io.StringIO()
    call_command(
        "score_judge", str(data), str(path), "--missing", "skip", "--n-boot", "0", stdout=out
    )
    assert f"partial: 4 rows without a prediction skipped: {', '.join(skipped_ids)}" in (
        out.getvalue()
    )
    out = io.StringIO()
    call_command("score_judge", str(data), str(path), "--n-boot", "0", stdout=out)
    assert "missing 4 (counted as wrong; --missing skip leaves them out)" in out.getvalue()


def test_two_shards_with_one_row_twice_is_an_error_naming_both(tmp_path):
    rows = published_rows(3, 0, seed=8)
    first = write_parquet(rows, tmp_path / "a.parquet")
    second = write_parquet(rows[:1], tmp_path / "b.parquet")
    path = write_jsonl(critic_lines(rows), tmp_path / "j.jsonl")
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=r"line 1 of b.parquet.*first on line 1 of a.parquet"):
        score(f"{first},{second}", str(path))


def test_lenient_keeps_the_first_of_a_repeated_dataset_row(tmp_path):
    rows = published_rows(4, 2, seed=9)
    repeated = [
        *rows,
        {**rows[0], "preference": "model_b" if rows[0]["preference"] == "model_a" else "model_a"},
    ]
    data = tmp_path / "rows.jsonl"
    write_jsonl([{k: v for k, v in r.items() if not k.startswith("_")} for r in repeated], data)
    outputs = critic_lines(rows, seed=3)
    path = write_jsonl(outputs, tmp_path / "judge.jsonl")
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="duplicate question id"):
        score(str(data), str(path))
    payload, err = score(str(data), str(path), "--lenient")
    assert ours(payload, "judge") == reference_scores(rows, outputs)
    assert "1 repeated dataset row left out (a repeated question id keeps its first row" in err
    assert f"first: line {len(rows) + 1}: row {rows[0]['question_id']!r} repeats" in err


def test_lenient_keeps_the_last_row_of_a_repeated_prompt_and_criterion(tmp_path):
    rows = [{k: v for k, v in r.items() if not k.startswith("_")} for r in published_rows(4, 2)]
    flipped = "model_b" if rows[0]["preference"] == "model_a" else "model_a"
    later = {**rows[0], "question_id": "again", "preference": flipped}
    data = write_jsonl([*rows, later], tmp_path / "rows.jsonl")
    outputs = [*critic_lines(rows, seed=3), {"question_id": "again", "critic": "Response 1 is..."}]
    path = write_jsonl(outputs, tmp_path / "judge.jsonl")
    payload, err = score(str(data), str(path), "--lenient")
    # the published code files rows by prompt, then criterion: the later row replaces the first
    kept = [later, *rows[1:]]
    assert ours(payload, "judge") == reference_scores(kept, outputs)
    assert f"first: line 1: row {rows[0]['question_id']!r} is replaced by line" in err
    # the first row's prediction names a row that is no longer there: skipped as unknown
    assert "1 line with an unknown id skipped" in err
