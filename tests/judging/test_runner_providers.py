"""The runner against servers that behave as each provider does: OpenAI reasoning models
(refused parameters adapted to), thinking servers (reasoning fields, truncation), Azure OpenAI,
replicas, test-time scaling, the published preset and the key and address rules."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from judging.models import JudgeCall, JudgeRun, Scorecard
from judging.runner.run import RunnerError, judge_run_execute
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.fake_providers import prefix_reuse_share
from tests.judging.runner_data import judge_config, runner_version

pytestmark = pytest.mark.django_db

#: The fake judge's verdicts on RUNNER_ROWS in the A/B order (it prefers the longer response).
EXPECTED = {
    "p1__completeness": "model_a",
    "p1__hallucination": "model_a",
    "p2__completeness": "model_b",
    "p2__hallucination": "model_b",
    "p3__completeness": "model_a",  # equal once stripped: Response 1
    "p3__hallucination": "model_a",
}


@pytest.fixture
def version(project):
    return runner_version(project, image_size=(64, 64))


def verdicts(version, judge: str = "fake-judge", run_index: int = 1) -> dict[str, str]:
    run = JudgeRun.objects.get(version=version, judge=judge, run_index=run_index)
    return dict(run.predictions.values_list("question_id", "prediction"))


def test_an_o_series_model_runs_without_any_flag(version, lead):
    with FakeOpenAI(provider="openai-reasoning", reasoning_tokens=200) as server:
        config = judge_config(server.url, model="o4-mini", concurrency=1)
        result = judge_run_execute(version=version, config=config, by=lead)
        refused = [r for r in server.requests if r.status == 400]
        answered = server.answered()
    assert verdicts(version) == EXPECTED
    # Two refusals taught the client (max_tokens renamed, temperature left out); every later
    # call was sent adapted.
    assert [r.body.keys() & {"max_tokens", "temperature"} for r in refused] == [
        {"max_tokens", "temperature"},
        {"temperature"},
    ]
    assert len(answered) == 6
    for request in answered:
        assert "max_tokens" not in request.body and "temperature" not in request.body
        assert request.body["max_completion_tokens"] == 1024
    run = JudgeRun.objects.get(version=version)
    assert [(a["param"], a["replacement"]) for a in run.stats["adaptations"]] == [
        ("max_tokens", "max_completion_tokens"),
        ("temperature", ""),
    ]
    assert any("The server refused max_tokens" in w for w in run.stats["warnings"])
    assert "max_tokens" in result.summary()
    calls = JudgeCall.objects.all()
    assert {c.reasoning_tokens for c in calls} == {200}
    card = Scorecard.objects.get(version=version, judge="fake-judge")
    assert card.figures["runner"]["tokens"]["reasoning"] == 6 * 200


def test_the_reasoning_style_sends_the_reasoning_fields(version, lead):
    with FakeOpenAI(provider="openai-reasoning") as server:
        config = judge_config(
            server.url, api_style="openai-reasoning", reasoning_effort="high", top_p=0.9
        )
        judge_run_execute(version=version, config=config, by=lead)
        bodies = [r.body for r in server.requests]
    assert all(r.status == 200 for r in server.requests) and len(bodies) == 6
    for body in bodies:
        assert body["reasoning_effort"] == "high" and body["max_completion_tokens"] == 1024
        assert not body.keys() & {"max_tokens", "temperature", "top_p"}
    assert JudgeRun.objects.get(version=version).stats["adaptations"] == []


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_thinking_is_kept_and_the_verdict_read_from_content(version, lead, field):
    with FakeOpenAI(provider="vllm-thinking", reasoning_field=field, thinking_tokens=50) as s:
        config = judge_config(s.url, api_style="vllm")
        judge_run_execute(version=version, config=config, by=lead)
    assert verdicts(version) == EXPECTED
    call = JudgeCall.objects.first()
    assert call.reasoning_output and "is better" in call.raw_output
    assert call.reasoning_output not in call.raw_output


def test_a_cut_thinking_is_truncated_then_retried_with_a_larger_budget(version, lead):
    with FakeOpenAI(provider="vllm-thinking", thinking_tokens=600) as server:
        plain = judge_config(server.url, name="no-retry", max_tokens=300, retry_max_tokens=None)
        result = judge_run_execute(version=version, config=plain, by=lead)
        assert len(server.requests) == 6
        retried = judge_config(server.url, max_tokens=300, retry_max_tokens=2000)
        judge_run_execute(version=version, config=retried, by=lead)
        budgets = [r.body["max_tokens"] for r in server.requests[6:]]
    # Without a retry: every row truncated, counted and listed apart, never "unparsable".
    run = JudgeRun.objects.get(version=version, judge="no-retry")
    assert (run.stats["truncated"], run.stats["unparsable"], run.stats["invalid"]) == (6, 0, 6)
    assert {r["question_id"] for r in run.stats["truncated_rows"]} == set(EXPECTED)
    assert result.truncated == 6 and "cut at the token budget" in result.summary()
    card = Scorecard.objects.get(version=version, judge="no-retry")
    assert card.figures["runner"]["parse"]["truncated"] == 6
    # With the retry: each call asked again once with 2,000 tokens, and answered.
    assert sorted(budgets) == [300] * 6 + [2000] * 6
    assert verdicts(version) == EXPECTED


def test_think_blocks_in_content_never_decide_a_verdict(version, lead):
    def thinks_only(text: str) -> str:
        return "<think>Response 1 is better.</think>\nI cannot decide."

    with FakeOpenAI(answer=thinks_only) as server:
        judge_run_execute(version=version, config=judge_config(server.url), by=lead)
    run = JudgeRun.objects.get(version=version)
    assert run.stats["unparsable"] == 6
    assert JudgeCall.objects.first().reasoning_output == "Response 1 is better."

    def thinks_then_answers(text: str) -> str:
        return "<think>Response 1 is better.</think>\nResponse 2 is better."

    JudgeCall.objects.all().delete()
    with FakeOpenAI(answer=thinks_then_answers) as server:
        config = judge_config(server.url, name="second")
        judge_run_execute(version=version, config=config, by=lead)
    assert set(verdicts(version, "second").values()) == {"model_b"}


def test_azure_deployment_and_v1_paths(version, lead, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY_AZURE", "azure-secret")
    deployments = {"gpt4o": "openai", "gpt4o-eu": "openai"}
    with FakeOpenAI(provider="azure", api_key="azure-secret", deployments=deployments) as s:
        classic = judge_config(
            s.root,
            name="classic",
            model="gpt4o",
            api_style="azure",
            api_version="2024-10-21",
            api_key_env="JUDGE_KEY_AZURE",
        )
        judge_run_execute(version=version, config=classic, by=lead)
        v1 = judge_config(
            s.root, name="v1", model="gpt4o-eu", api_style="azure", api_key_env="JUDGE_KEY_AZURE"
        )
        judge_run_execute(version=version, config=v1, by=lead)
        paths = {r.path for r in s.requests}
        keys = {r.headers.get("api-key") for r in s.requests}
        bearer = {r.headers.get("Authorization") for r in s.requests}
    assert paths == {
        "/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21",
        "/openai/v1/chat/completions",
    }
    assert keys == {"azure-secret"} and bearer == {None}
    assert verdicts(version, "classic") == verdicts(version, "v1") == EXPECTED


def test_replicas_share_the_calls_and_the_cache(version, lead):
    with FakeOpenAI(delay=0.05) as one, FakeOpenAI(delay=0.05) as two:
        config = judge_config(one.url, replica_urls=[two.url], concurrency=1, orders="both")
        judge_run_execute(version=version, config=config, by=lead)
        assert len(one.requests) + len(two.requests) == 12
        assert min(len(one.requests), len(two.requests)) >= 4
        # Moving the judge to another server (or dropping a replica) re-asks nothing.
        config.base_url, config.replica_urls = two.url, []
        config.save()
        result = judge_run_execute(version=version, config=config, by=lead)
    assert (result.made, result.cached) == (0, 12)
    assert set(JudgeCall.objects.values_list("base_url", flat=True)) == {one.url, two.url}


def test_a_failing_replica_is_set_aside_while_the_other_carries_on(version, lead):
    with FakeOpenAI() as good, FakeOpenAI() as bad:
        bad.down(close=True)
        config = judge_config(bad.url, replica_urls=[good.url], concurrency=2, retries=3)
        result = judge_run_execute(version=version, config=config, by=lead)
        tried_bad = len(bad.requests)
    assert result.failed == 0 and verdicts(version) == EXPECTED
    assert len(good.answered()) == 6
    assert tried_bad <= 3  # set aside after its failures, not hammered


def test_test_time_scaling_samples_and_shows_the_curve(version, lead):
    with FakeOpenAI(sampling=True) as server:
        config = judge_config(server.url, runs=5, temperature=0.8)
        judge_run_execute(version=version, config=config, by=lead)
        seeds = sorted({r.body.get("seed") for r in server.requests}, key=str)
    assert seeds == [1, 2, 3, 4, None]
    card = Scorecard.objects.get(version=version, judge="fake-judge")
    curve = card.figures["scaling"]
    assert [point["runs"] for point in curve] == [1, 3, 5]
    assert curve[-1]["pacc"] == card.pacc and curve[-1]["avg"] == card.avg
    runs = JudgeRun.objects.filter(version=version)
    assert len({tuple(sorted(verdicts(version, run_index=r.run_index).items())) for r in runs}) > 1
    assert not any("temperature 0" in w for w in runs[0].stats["warnings"])


def test_greedy_runs_are_said_to_be_identical(version, lead):
    with FakeOpenAI() as server:
        result = judge_run_execute(
            version=version, config=judge_config(server.url, runs=3), by=lead
        )
    assert "3 runs at temperature 0: the runs will be (nearly) identical" in result.summary()


def test_the_published_preset_and_its_verifier(version, lead, capsys):
    with FakeOpenAI() as server:
        judge_config(server.url, name="small-verifier", model="verifier-model")
        with pytest.raises(CommandError, match="turns on the verifier fallback"):
            call_command(
                "run_judge", version.project.slug, "1", "--base-url", server.url, "--model", "m",
                "--preset", "published", "--no-progress",
            )  # fmt: skip
        call_command(
            "run_judge", version.project.slug, str(version.number), "--base-url", server.url,
            "--model", "m", "--preset", "published", "--verifier", "small-verifier",
            "--no-progress",
        )  # fmt: skip
        bodies = [r.body for r in server.requests]
    assert {(b["temperature"], b["top_p"], b["max_tokens"]) for b in bodies} == {(0.6, 0.95, 8192)}
    run = JudgeRun.objects.get(version=version)
    assert run.stats["config"]["verifier"] == "small-verifier"


def test_run_judge_takes_several_base_urls(version, lead):
    with FakeOpenAI() as one, FakeOpenAI() as two:
        call_command(
            "run_judge", version.project.slug, str(version.number), "--base-url", one.url,
            "--base-url", two.url, "--model", "m", "--concurrency", "1", "--no-progress",
        )  # fmt: skip
        assert one.requests and two.requests
    assert JudgeRun.objects.get(version=version).stats["config"]["replicas"] == 2


#: A response of the benchmark's usual length (a few paragraphs).
LONG_ANSWER = " ".join(f"Sentence {n} describes one more detail of the image." for n in range(40))


def test_calls_of_a_pair_share_their_prefix(project, lead):
    """A pair's calls go back to back with the criterion last, so a server with prefix caching
    reuses most of their prefill (here, the share of prompt characters repeating a prefix
    already sent, the image counted as the fake server counts it)."""
    rows = [
        (p, c, LONG_ANSWER, LONG_ANSWER[::-1], "model_a")
        for p in ("p1", "p2", "p3")
        for c in ("completeness", "hallucination", "clarity", "grounding", "logic")
    ]
    version = runner_version(project, rows, image_size=(1024, 768))
    with FakeOpenAI() as server:
        config = judge_config(server.url, orders="both", concurrency=1)
        judge_run_execute(version=version, config=config, by=lead)
        share = prefix_reuse_share(server.requests)
    assert share >= 0.8, share


@pytest.mark.parametrize(
    ("name", "allowed"),
    [("DATABASE_URL", False), ("SECRET_KEY", False), ("JUDGE_KEY_OPENAI", True)],
)
def test_only_judge_key_variables_are_read(version, lead, monkeypatch, name, allowed):
    monkeypatch.setenv(name, "a-secret-value")
    with FakeOpenAI() as server:
        config = judge_config(server.url)
        config.api_key_env = name  # saved around the form's check, as an old row may be
        config.save()
        if allowed:
            judge_run_execute(version=version, config=config, by=lead)
            assert server.requests[0].headers["Authorization"] == "Bearer a-secret-value"
            return
        with pytest.raises(RunnerError, match="JUDGE_KEY_") as refused:
            judge_run_execute(version=version, config=config, by=lead)
        assert server.requests == []
    assert "a-secret-value" not in str(refused.value)


def test_upstream_errors_show_the_message_only(version, lead):
    with FakeOpenAI(provider="azure", api_key="right") as server:
        config = judge_config(server.root, api_style="azure", model="judge", retries=0)
        with pytest.raises(RunnerError) as failed:
            judge_run_execute(version=version, config=config, by=lead)
    message = str(failed.value)
    assert "HTTP 401: " in message and "{" not in message


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/v1",
        "http://user:pw@example.org/v1",
        "http://example.org/v1?x=1",
        "http://example.org/v1#frag",
        "file:///etc/passwd",
    ],
)
def test_unsafe_base_urls_are_refused(url):
    with pytest.raises(ValidationError) as refused:
        judge_config(url)
    assert "base_url" in refused.value.message_dict


def test_loopback_servers_need_the_operator(version, lead, settings):
    settings.OUTBOUND_ALLOW_PRIVATE = False
    with FakeOpenAI() as server:
        config = judge_config(server.url, retries=2)
        with pytest.raises(RunnerError, match="loopback; refused") as refused:
            judge_run_execute(version=version, config=config, by=lead)
        assert server.requests == []
    assert "tried" not in str(refused.value)  # refused at once, never retried


def test_the_scorecard_shows_truncation_adaptations_and_the_scaling_curve(client, version, lead):
    with FakeOpenAI(provider="openai-reasoning", reasoning_tokens=600, sampling=True) as server:
        config = judge_config(server.url, runs=3, max_tokens=300, retry_max_tokens=None)
        judge_run_execute(version=version, config=config, by=lead)
    client.force_login(lead)
    url = reverse("scorecard", args=[version.project.slug, version.number, "fake-judge"])
    html = client.get(url).content.decode()
    assert "18 truncated answers: cut at the token budget before a verdict" in html
    assert '<strong>18</strong> <span class="muted" title=' in html  # the parse counts
    assert "The server refused max_tokens; it was sent as max_completion_tokens" in html
    assert 'id="scaling-title">Test-time scaling</h2>' in html
    card = Scorecard.objects.get(version=version, judge="fake-judge")
    assert [p["runs"] for p in card.figures["scaling"]] == [1, 3]
    assert "of which 5,400 reasoning" in html  # 18 calls cut at 300 reasoning tokens
