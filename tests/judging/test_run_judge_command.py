"""The run_judge command against a local OpenAI-compatible server."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from judging.models import JudgeCall, JudgeConfig, JudgeRun
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.runner_data import judge_config, runner_version

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("run_judge", *args, "--n-boot", "50", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_command_runs_scores_and_prints_the_scorecard(project, tmp_path):
    runner_version(project)
    with FakeOpenAI() as server:
        out, err = run(
            "test-project",
            "v1",
            "--base-url",
            server.url,
            "--model",
            "cli-model",
            "--orders",
            "both",
            "--concurrency",
            "2",
            "--name",
            "cli-judge",
        )
        assert len(server.requests) == 12
        assert "Estimate: 12 calls to make (0 answers already in the cache)" in err
        assert "12/12 calls" in err and "0 cache hits" in err
        assert "Scored cli-judge: 12 calls (12 calls made, 0 cache hits)" in err
        # The table score_judge prints, then the runner's figures.
        assert out.startswith("open_ended: prompts 3 · rows 6")
        assert "cli-judge" in out and "PAcc" in out
        assert "position consistency 83.33% (the two orders agree in 5 of 6 rows)" in out
        assert "A verdicts: 66.67% in order AB (of 6), 50.00% in order BA (of 6)" in out
        run_ = JudgeRun.objects.get(judge="cli-judge")
        assert run_.source == "runner" and run_.stats["config"]["model"] == "cli-model"
        # Again: every answer comes from the cache, no request is made.
        out2, err2 = run(
            "test-project",
            "1",
            "--base-url",
            server.url,
            "--model",
            "cli-model",
            "--orders",
            "both",
            "--name",
            "cli-judge",
            "--format",
            "json",
        )
        assert len(server.requests) == 12
        assert "(0 calls made, 12 cache hits)" in err2
        payload = json.loads(out2)
        judge = payload["judges"]["cli-judge"]
        assert judge["runner"]["open_ended"]["position_consistency"]["value"] == 83.33
        assert judge["runner"]["open_ended"]["cached"] == 12
        assert judge["scores"]["open_ended"]["per_criterion"]["completeness"]["acc"] == 66.67
    assert JudgeCall.objects.count() == 12
    assert not JudgeConfig.objects.exists()  # flags alone store no config


def test_config_flags_override_without_saving(project):
    runner_version(project)
    with FakeOpenAI() as server:
        config = judge_config(server.url, name="saved", temperature=0.0)
        _, err = run("test-project", "v1", "--config", "saved", "--temperature", "0.5")
        assert {r.body["temperature"] for r in server.requests} == {0.5}
        assert "Scored saved: 6 calls (6 calls made, 0 cache hits)" in err
    config.refresh_from_db()
    assert config.temperature == 0.0
    assert JudgeRun.objects.get().judge == "saved"


def test_bad_flags_name_the_flag(project, tmp_path):
    runner_version(project)
    with pytest.raises(CommandError, match="give --base-url and --model, or --config NAME"):
        run("test-project", "v1")
    with pytest.raises(CommandError, match=r"--temperature: .*less than or equal to 2"):
        run(
            "test-project",
            "v1",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--temperature",
            "3",
        )
    with pytest.raises(CommandError, match="--api-key-env: Give the name of an environment"):
        run(
            "test-project",
            "v1",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--api-key-env",
            "sk-live-123",
        )
    bad = tmp_path / "bad.txt"
    bad.write_text("Judge $question and $answer\n")
    with pytest.raises(CommandError, match=r"--template: line 1, field 'template': unknown"):
        run(
            "test-project",
            "v1",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--template",
            str(bad),
        )
    with pytest.raises(CommandError, match="test-project has no version 7"):
        run("test-project", "v7", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")


def test_custom_template_changes_the_key(project, tmp_path):
    runner_version(project)
    template = tmp_path / "mine.txt"
    template.write_text(
        "Criterion: $criterion_name\n$question\n[Response 1]\n$response_1\n[End of Response 1]\n"
        "[Response 2]\n$response_2\n[End of Response 2]\nSay which is better.\n"
    )
    with FakeOpenAI() as server:
        base = ["test-project", "v1", "--base-url", server.url, "--model", "m"]
        run(*base)
        run(*base, "--template", str(template))
        assert len(server.requests) == 12
        assert server.requests[-1].text().endswith("Say which is better.\n")
    run_ = JudgeRun.objects.get()
    assert run_.template_hash and run_.stats["config"]["template"] == "mine.txt"
