"""The verifier fallback for uploaded outputs: an output the parser cannot read has its last
four lines read by a verifier judge config, and every row it decided is marked."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from core.models import Job
from judging.models import JudgeRun, Scorecard
from judging.runner.fallback import upload_verifier
from judging.services.scoring import judge_run_upload
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.runner_data import judge_config
from tests.judging.web_data import HAND_PREDICTIONS, predictions_file, predictions_upload

pytestmark = pytest.mark.django_db

#: Two outputs the parser cannot read: the fake verifier reads "second" as Response 2.
UNREADABLE = {
    "p1__hallucination": "Both have merits.\nOn balance I prefer the second one overall.",
    "p2__completeness": "Hard to say.\nThe first one, I think, is more complete.",
}


def critic_lines() -> list[dict]:
    lines = []
    for qid, prediction in HAND_PREDICTIONS.items():
        number = "1" if prediction == "model_a" else "2"
        critic = UNREADABLE.get(qid, f"Some reasoning.\nResponse {number} is better.")
        lines.append({"question_id": qid, "critic": critic})
    return lines


def test_the_verifier_decides_the_unparsed_rows(version, lead):
    with FakeOpenAI() as server:
        verifier = judge_config(server.url, name="small-verifier", model="verifier-model")
        result = judge_run_upload(
            version=version,
            judge="critic-judge",
            file=predictions_file(critic_lines()),
            by=lead,
            verify=upload_verifier(verifier.pk),
        )
        prompts = [r.text() for r in server.requests]
    assert len(prompts) == 2  # only the unparsed outputs were asked about
    assert all("On balance" in p or "The first one" in p for p in prompts)
    run = result.runs[0]
    predictions = dict(run.predictions.values_list("question_id", "prediction"))
    assert predictions["p1__hallucination"] == "model_b"
    assert predictions["p2__completeness"] == "model_a"
    assert (run.stats["verified"], run.stats["verifier_asked"], run.stats["unparsable"]) == (
        2,
        2,
        0,
    )
    assert {v["question_id"]: v["verdict"] for v in run.stats["verified_rows"]} == {
        "p1__hallucination": "model_b",
        "p2__completeness": "model_a",
    }
    # Without the verifier the same outputs are invalid.
    plain = judge_run_upload(
        version=version, judge="plain", file=predictions_file(critic_lines()), by=lead
    )
    assert plain.runs[0].stats["unparsable"] == 2 and "verified" not in plain.runs[0].stats


def test_the_upload_form_takes_a_verifier(
    client, lead, version, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    url = reverse("predictions-upload", args=[version.project.slug, version.number])
    with FakeOpenAI() as server:
        verifier = judge_config(server.url, name="small-verifier", model="verifier-model")
        assert "small-verifier" in client.get(url).content.decode()
        with django_capture_on_commit_callbacks(execute=True):
            client.post(
                url,
                {
                    "judge": "critic-judge",
                    "verifier": verifier.pk,
                    "file": predictions_upload(critic_lines()),
                },
            )
    job = Job.objects.get(kind=Job.Kind.SCORE_JUDGE)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.params["verifier_id"] == verifier.pk
    run = JudgeRun.objects.get(judge="critic-judge")
    assert run.stats["verified"] == 2
    scorecard = reverse("scorecard", args=[version.project.slug, 1, "critic-judge"])
    html = client.get(scorecard).content.decode()
    assert "2 outputs read by the verifier (of 2 the parser could not read)" in html
    assert Scorecard.objects.filter(judge="critic-judge").exists()


def test_score_judge_takes_a_verifier(tmp_path, db):
    data = Path(__file__).parent / "data"
    lines = [json.loads(line) for line in (data / "judge_alpha.jsonl").read_text().splitlines()]
    for line in lines:
        if line["question_id"] == "r2__efficiency":  # a "tie": now an output nobody can parse
            del line["prediction"]
            line["critic"] = "A hard call.\nI lean to the second one overall."
    predictions = tmp_path / "judge_alpha.jsonl"
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with FakeOpenAI() as server:
        judge_config(server.url, name="small-verifier", model="verifier-model")
        out, err = io.StringIO(), io.StringIO()
        call_command(
            "score_judge", str(data / "rows.jsonl"), str(predictions),
            "--verifier", "small-verifier", "--format", "json", "--n-boot", "0",
            stdout=out, stderr=err,
        )  # fmt: skip
        asked = [r.text() for r in server.requests]
    assert len(asked) == 1  # the one unparsed output
    assert "the verifier small-verifier decided 1 of 1 unparsed output:" in err.getvalue()
    assert "run 1, r2__efficiency: model_b" in err.getvalue()
    alpha = json.loads(out.getvalue())["judges"]["judge_alpha"]
    assert alpha["parse"]["unparsable_rows"] == []
    assert alpha["scores"]["reasoning"]["counts"]["invalid"] == 0
    with pytest.raises(CommandError, match="--verifier: no judge config named 'nobody'"):
        call_command("score_judge", str(data / "rows.jsonl"), str(data / "judge_alpha.jsonl"),
                     "--verifier", "nobody")  # fmt: skip
