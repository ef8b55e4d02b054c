"""``manage.py score_judge``: the paper's tables in three formats, on files and on a version."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from aggregation.models import DatasetVersion
from tests.judging.web_data import version_from_records

DATA = Path(__file__).parent / "data"
ROWS = str(DATA / "rows.jsonl")
ALPHA = str(DATA / "judge_alpha.jsonl")
BETA = str(DATA / "judge_beta.csv")


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("score_judge", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_json_has_every_figure_and_count():
    out, _ = run(ROWS, ALPHA, BETA, "--format", "json", "--n-boot", "200", "--seed", "3")
    payload = json.loads(out)
    assert payload["dataset"] == "rows.jsonl"
    assert payload["bootstrap"] == {"n_boot": 200, "seed": 3, "unit": "prompt"}
    assert payload["splits"]["open_ended"]["criteria"] == [
        "completeness",
        "visual-grounding",
        "hallucination",
        "clarity",
    ]
    alpha = payload["judges"]["judge_alpha"]
    assert alpha["runs"] == [1]
    open_ended = alpha["scores"]["open_ended"]
    assert open_ended["pacc"]["value"] == 33.33
    assert open_ended["cmr"]["value"] == 50.0
    assert open_ended["tos"]["value"] == 100.0
    assert open_ended["avg"]["value"] == 75.0
    assert open_ended["overall"]["value"] == 71.43
    assert open_ended["pacc"]["ci"] is not None
    reasoning = alpha["scores"]["reasoning"]
    assert [reasoning[k]["value"] for k in ("pacc", "cmr", "tos", "avg")] == [0.0, 0.0, 0.0, 50.0]
    assert reasoning["counts"]["invalid"] == 1
    assert alpha["parse"]["unparsable_rows"][0]["question_id"] == "r2__efficiency"

    beta = payload["judges"]["beta-judge"]
    assert beta["runs"] == [1, 2, 3]
    assert beta["scores"]["open_ended"]["pacc"]["value"] == 100.0  # the vote of 3 runs
    third = beta["per_run"]["3"]["open_ended"]
    assert (third["tos"]["value"], third["cmr"]["value"]) == (0.0, 0.0)  # always "Response 1"
    assert third["counts"]["invalid"] == 1
    assert beta["parse"]["invalid"] == 1


def test_table_layout():
    out, err = run(ROWS, ALPHA, BETA, "--n-boot", "0", "--runs")
    lines = out.splitlines()
    assert lines[0] == (
        "open_ended: prompts 3 · rows 7 · prompts with a conflict 1 · conflicting pairs 4"
    )
    assert lines[1].split() == [
        "Judge",
        "PAcc",
        "CMR",
        "TOS",
        "Avg",
        "completeness",
        "visual-grounding",
        "hallucination",
        "clarity",
    ]
    assert lines[3].split() == [
        "judge_alpha",
        "33.33",
        "50.00",
        "100.00",
        "75.00",
        "100.00",
        "50.00",
        "50.00",
        "100.00",
    ]
    assert lines[4].split()[:4] == ["beta-judge", "(vote", "of", "3)"]
    assert lines[7].split() == [
        "beta-judge",
        "run",
        "3",
        "33.33",
        "0.00",
        "0.00",
        "37.50",
        "100.00",
        "50.00",
        "0.00",
        "0.00",
    ]
    reasoning = out[out.index("reasoning: ") :].splitlines()
    assert reasoning[1].split() == [
        "Judge",
        "PAcc",
        "CMR",
        "TOS",
        "Avg",
        "grounding",
        "logic",
        "efficiency",
    ]
    assert reasoning[3].split() == [
        "judge_alpha",
        "0.00",
        "0.00",
        "0.00",
        "50.00",
        "100.00",
        "50.00",
        "0.00",
    ]
    assert "judge_alpha: invalid 1, missing 0" in out
    # unparsable predictions are listed on stderr with their line
    assert "judge_alpha: 1 prediction could not be read (scored as invalid):" in err
    assert "line 11 (r2__efficiency, run 1): 'tie'" in err
    assert "line 92 (o1__hallucination, run 3)" in err


def test_markdown_for_one_split_with_lenient(tmp_path):
    out, err = run(
        ROWS, ALPHA, "--format", "markdown", "--split", "reasoning", "--lenient", "--n-boot", "0"
    )
    assert out.startswith("### reasoning: prompts 2 · rows 4")
    assert "| Judge | PAcc | CMR | TOS | Avg | grounding | logic | efficiency |" in out
    assert "|:---|---:|---:|---:|---:|---:|---:|---:|" in out
    assert "| judge_alpha | 0.00 | 0.00 | 0.00 | 50.00 | 100.00 | 50.00 | 0.00 |" in out
    assert "open_ended" not in out
    assert "warning: 7 lines of another split than 'reasoning' skipped" in err


def test_other_split_rows_without_lenient_fail():
    with pytest.raises(CommandError, match=r"judge_alpha\.jsonl: 7 errors; nothing was scored"):
        run(ROWS, ALPHA, "--split", "reasoning")


def test_tos_and_cmr_show_na_without_conflicts(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(
            json.dumps(
                {"prompt_id": "p", "split": "reasoning", "criterion": c, "preference": "model_b"}
            )
            + "\n"
            for c in ("logic", "grounding")
        )
    )
    preds = tmp_path / "solo.csv"
    preds.write_text(
        "question_id,output\np__logic,Response 2 is better.\np__grounding,Response 1 is better.\n"
    )
    out, _ = run(str(rows), str(preds), "--n-boot", "0")
    assert out.splitlines()[3].split() == ["solo", "0.00", "n/a", "n/a", "50.00", "0.00", "100.00"]
    assert out.splitlines()[1].split()[5:] == ["grounding", "logic"]


def make_version(project) -> DatasetVersion:
    records = map(json.loads, (DATA / "rows.jsonl").read_text().splitlines())
    return version_from_records(project, records, number=2)


@pytest.mark.django_db
def test_scores_a_dataset_version(project):
    version = make_version(project)
    out, _ = run(f"{project.slug}:v2", ALPHA, "--format", "json", "--n-boot", "0")
    payload = json.loads(out)
    assert payload["dataset"] == "test-project:v2"
    scores = payload["judges"]["judge_alpha"]["scores"]
    assert scores["open_ended"]["pacc"]["value"] == 33.33
    assert scores["reasoning"]["avg"]["value"] == 50.0
    by_id, _ = run(str(version.pk), ALPHA, "--format", "json", "--n-boot", "0")
    assert json.loads(by_id)["judges"] == payload["judges"]


@pytest.mark.django_db
def test_unknown_version():
    with pytest.raises(CommandError, match="no dataset version 'nope:v1'"):
        run("nope:v1", ALPHA)


def test_errors(tmp_path):
    with pytest.raises(CommandError, match="is neither a dataset file nor a version"):
        run(str(tmp_path / "absent.jsonl"), ALPHA)
    copy = tmp_path / "judge_alpha.csv"
    copy.write_text("question_id,prediction\no1__clarity,A\n")
    with pytest.raises(CommandError, match="judge 'judge_alpha' is given twice"):
        run(ROWS, ALPHA, str(copy))
    bad = tmp_path / "bad.jsonl"
    shutil.copy(ALPHA, bad)
    with bad.open("a") as handle:
        handle.write('{"question_id": "zzz", "prediction": "model_a"}\n')
    with pytest.raises(CommandError, match=r"bad\.jsonl: line 12, field 'question_id': unknown"):
        run(ROWS, str(bad))
    out, err = run(ROWS, str(bad), "--lenient", "--n-boot", "0")
    assert "1 line with an unknown id skipped" in err
    assert "bad " in out
    worse = tmp_path / "worse.jsonl"
    shutil.copy(bad, worse)
    with worse.open("a") as handle:
        handle.write('{"question_id": "o1__clarity", "prediction": "model_a", "run": "x"}\n')
    with pytest.raises(CommandError, match=r"worse\.jsonl: 2 errors; nothing was scored\."):
        run(ROWS, str(worse))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("score_judge", ROWS, str(worse), stdout=io.StringIO(), stderr=err)
    assert err.getvalue().splitlines() == [
        f"{worse}: line 12, question_id: unknown question id 'zzz'",
        f"{worse}: line 13, run: must be a whole number, got 'x'",
    ]
    with pytest.raises(CommandError, match="--n-boot must be 0 or more"):
        run(ROWS, ALPHA, "--n-boot", "-1")


def _rows_with_a_tie_and_a_prompt_in_two_splits(tmp_path: Path) -> Path:
    rows = [
        ("p", "open_ended", "completeness", "model_a"),
        ("p", "open_ended", "clarity", "model_b"),
        ("p", "open_ended", "hallucination", "tie"),
        ("p", "reasoning", "logic", "model_a"),
        ("p", "reasoning", "efficiency", "model_a"),
        ("q", "reasoning", "logic", "model_b"),
        ("q", "reasoning", "efficiency", "tie"),
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "".join(
            json.dumps({"prompt_id": p, "split": s, "criterion": c, "preference": x}) + "\n"
            for p, s, c, x in rows
        )
    )
    return path


def test_a_tie_and_a_prompt_in_two_splits_are_scored_with_warnings(tmp_path):
    data = _rows_with_a_tie_and_a_prompt_in_two_splits(tmp_path)
    verdicts = {
        "p__completeness": 1,
        "p__clarity": 2,
        "p__hallucination": 1,
        "p__logic": 1,
        "p__efficiency": 1,
        "q__logic": 2,
        "q__efficiency": 2,
    }
    judge = tmp_path / "judge.jsonl"
    judge.write_text(
        "".join(
            json.dumps({"question_id": q, "critic": f"Because.\nResponse 0{n} is better."}) + "\n"
            for q, n in verdicts.items()
        )
    )
    out, err = run(str(data), str(judge), "--format", "json", "--n-boot", "0")
    assert (
        "rows.jsonl: warning: 2 rows with a human tie label (line 3, line 7): a tie equals no "
        "verdict of a judge, so each counts as wrong"
    ) in err
    assert (
        "rows.jsonl: warning: 1 prompt with rows in both splits, accepted as the published "
        "evaluation reads each split on its own: 'p' (open_ended at line 1, reasoning at line 4)"
    ) in err
    scores = json.loads(out)["judges"]["judge"]["scores"]
    open_ended, reasoning = scores["open_ended"], scores["reasoning"]
    # open-ended: p's tie row is wrong, so p is not all correct; its A/B pair is matched
    assert open_ended["overall"]["value"] == 66.67
    headline = [open_ended[k]["value"] for k in ("pacc", "cmr", "tos", "avg")]
    assert headline == [0.0, 100.0, 100.0, 66.67]
    # reasoning: p (logic, efficiency) all correct; q's tie row is wrong and conflicts with none
    assert reasoning["pacc"] == {"value": 50.0, "ci": None, "correct_prompts": 1, "prompts": 2}
    assert reasoning["counts"]["conflict_pairs"] == 0
    assert reasoning["tos"]["value"] is None and reasoning["cmr"]["value"] is None
    assert reasoning["per_criterion"]["efficiency"]["acc"] == 50.0
    assert reasoning["avg"]["value"] == 75.0
    # the warnings are in the JSON and on the parse stats too
    payload = json.loads(out)
    assert [w[:30] for w in payload["dataset_warnings"]] == [
        "2 rows with a human tie label ",
        "1 prompt with rows in both spl",
    ]
    assert payload["judges"]["judge"]["parse"]["warnings"] == payload["dataset_warnings"]


# --- --compare ---------------------------------------------------------------------------------


def _paired_files(tmp_path: Path) -> tuple[str, str]:
    from tests.judging.paired_data import STRONG, WEAK
    from tests.judging.web_data import jsonl, prediction_lines

    paths = []
    for name, predictions in (("strong", STRONG), ("weak", WEAK)):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(jsonl(prediction_lines(predictions)))
        paths.append(str(path))
    return paths[0], paths[1]


@pytest.mark.django_db
def test_compare_prints_the_paired_figures_of_the_api(tmp_path, project, lead):
    from judging.paired import N_BOOT
    from tests.judging.paired_data import LOGIC_P, bootstrap_p, paired_version

    paired_version(project, lead, judges=())
    strong, weak = _paired_files(tmp_path)
    out, _ = run(f"{project.slug}:v1", strong, weak, "--compare", "--format", "json")
    payload = json.loads(out)
    assert (payload["judge_a"], payload["judge_b"]) == ("strong", "weak")
    paired = payload["splits"]["reasoning"]
    assert (paired["n_boot"], paired["seed"], paired["family"]) == (N_BOOT, 0, 8)
    logic = next(f for f in paired["criteria"] if f["key"] == "logic")
    assert (logic["only_a"], logic["only_b"], logic["p"], logic["p_holm"]) == (
        12, 0, LOGIC_P, 8 * LOGIC_P,
    )  # fmt: skip
    verdicts = {f["key"]: f["verdict"] for f in [*paired["criteria"], *paired["headline"]]}
    assert verdicts == {
        "grounding": "not distinguishable", "logic": "A better",
        "hallucination": "not distinguishable", "pacc": "A better", "cmr": "A better",
        "tos": "not distinguishable", "avg": "A better", "overall": "A better",
    }  # fmt: skip
    pacc = paired["headline"][0]
    assert pacc["p"] == pytest.approx(bootstrap_p(N_BOOT)) and pacc["ci"] == [100.0, 100.0]

    table, _ = run(f"{project.slug}:v1", strong, weak, "--compare")
    lines = table.splitlines()
    assert lines[0].startswith("reasoning: A = strong, B = weak")
    assert "Holm over 8 figures, alpha 0.05" in lines[0]
    rows = {line.split()[0]: line.split() for line in lines[1:] if line.strip()}
    assert rows["logic"] == [
        "logic",
        "100.00",
        "0.00",
        "12",
        "0",
        "0.0005",
        "0.0039",
        "A",
        "better",
    ]
    assert rows["grounding"][1:7] == ["100.00", "91.67", "1", "0", "1.0000", "1.0000"]
    # The same draws as the compare page and the API (seed 0): the same interval.
    assert rows["CMR"] == ["CMR", "100.00", "45.83", "54.17", "50.00", "to", "62.50", "0.0010",
                           "0.0070", "A", "better"]  # fmt: skip
    assert rows["TOS"] == ["TOS", "100.00", "100.00", "0.00", "0.00", "to", "0.00", "1.0000",
                           "1.0000", "not", "distinguishable"]  # fmt: skip

    markdown, _ = run(f"{project.slug}:v1", strong, weak, "--compare", "--format", "markdown")
    assert "| logic | 100.00 | 0.00 | 12 | 0 | 0.0005 | 0.0039 | A better |" in markdown
    assert "| PAcc | 100.00 | 0.00 | 100.00 | 100.00 to 100.00 |" in markdown


def test_compare_needs_exactly_two_files():
    with pytest.raises(CommandError, match="exactly two predictions files"):
        run(ROWS, ALPHA, "--compare")
    with pytest.raises(CommandError, match="drop --missing skip"):
        run(ROWS, ALPHA, BETA, "--compare", "--missing", "skip")
