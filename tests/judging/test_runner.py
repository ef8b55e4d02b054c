"""The judge runner against a local OpenAI-compatible server: request shape, both orders,
scoring, the exact cache, retries, rate limit, concurrency, budget and the verifier."""

from __future__ import annotations

import base64
import io
import itertools

import pytest
from PIL import Image

from judging.models import JudgeCall, JudgeRun, Scorecard
from judging.runner.run import RunnerError, judge_run_execute
from tests.judging.fake_openai import FakeOpenAI, responses_in
from tests.judging.runner_data import LONG, SHORT, judge_config, runner_version

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def version(project):
    return runner_version(project)


def image_of(request) -> Image.Image:
    part = request.body["messages"][0]["content"][0]
    assert part["type"] == "image_url"
    header, data = part["image_url"]["url"].split(",", 1)
    # An RGB image that had to be downscaled is sent as JPEG.
    assert header == "data:image/jpeg;base64"
    return Image.open(io.BytesIO(base64.b64decode(data)))


def test_request_shape_both_orders(server, version, lead):
    config = judge_config(server.url, orders="both", temperature=0.2, seed=7, max_tokens=300)
    result = judge_run_execute(version=version, config=config, by=lead)
    assert (result.calls, result.made, result.cached) == (12, 12, 0)
    assert len(server.requests) == 12
    for request in server.requests:
        body = request.body
        assert (body["model"], body["temperature"], body["seed"], body["max_tokens"]) == (
            "fake-vl-7b",
            0.2,
            7,
            300,
        )
        content = body["messages"][0]["content"]
        assert [p["type"] for p in content] == ["image_url", "text"]
        image = image_of(request)
        assert image.size == (1536, 768)  # 2000 x 1000 downscaled to the longest side
        text = content[1]["text"]
        assert "$" not in text
    names = {r.text().split("Criterion: ")[1].split("\n")[0] for r in server.requests}
    assert names == {"Completeness & Coverage", "Factuality / No Hallucination"}
    p1 = [
        r.text()
        for r in server.requests
        if "What does image p1 show?" in r.text() and "Criterion: Completeness" in r.text()
    ]
    assert len(p1) == 2
    # The criterion's full description is in the prompt.
    assert "Does the response address everything the question asks" in p1[0]
    # The swapped order shows B as Response 1.
    shown = sorted((responses_in(t)["1"], responses_in(t)["2"]) for t in p1)
    assert shown == sorted([(LONG, SHORT), (SHORT, LONG)])


def test_both_orders_scorecard(server, version, lead):
    config = judge_config(server.url, orders="both")
    result = judge_run_execute(version=version, config=config, judge="fake", by=lead)
    assert not result.partial and result.failed == 0
    run = JudgeRun.objects.get(version=version, judge="fake")
    assert run.source == "runner" and run.run_index == 1
    verdicts = dict(run.predictions.values_list("question_id", "prediction"))
    # p3 completeness: the responses tie, the judge takes Response 1 in each order, so its two
    # orders disagree and the row is invalid.
    assert verdicts == {
        "p1__completeness": "model_a",
        "p1__hallucination": "model_a",
        "p2__completeness": "model_b",
        "p2__hallucination": "model_b",
        "p3__completeness": "invalid",
        "p3__hallucination": "model_a",
    }
    card = Scorecard.objects.get(version=version, judge="fake", split="open_ended")
    per = card.figures["per_criterion"]
    assert per["completeness"]["acc"] == pytest.approx(66.67, abs=0.01)
    assert per["hallucination"]["acc"] == pytest.approx(33.33, abs=0.01)
    runner = card.figures["runner"]
    consistency = runner["position_consistency"]
    assert (consistency["agree"], consistency["n"], consistency["value"]) == (5, 6, 83.33)
    assert consistency["per_criterion"]["completeness"] == {"value": 66.67, "agree": 2, "n": 3}
    assert consistency["per_criterion"]["hallucination"] == {"value": 100.0, "agree": 3, "n": 3}
    assert runner["a_share"] == {"ab": {"value": 66.67, "n": 6}, "ba": {"value": 50.0, "n": 6}}
    assert runner["parse"] == {
        "direct": 12,
        "verifier": 0,
        "unparsed": 0,
        "truncated": 0,
        "failed": 0,
    }
    expected_tokens = sum(
        len(r.text()) // 4 + 100 + len(server.answer(r.text())) // 4 for r in server.requests
    )
    assert runner["tokens"]["total"] == expected_tokens == result.tokens
    assert runner["latency_ms"]["p50"] is not None and runner["partial"] is False
    assert runner["config"]["model"] == "fake-vl-7b"


def test_cache_zero_calls_on_rerun_and_new_calls_on_any_change(server, version, lead):
    config = judge_config(server.url)
    first = judge_run_execute(version=version, config=config, by=lead)
    assert (first.made, first.cached, len(server.requests)) == (6, 0, 6)
    again = judge_run_execute(version=version, config=config, by=lead)
    assert (again.made, again.cached, len(server.requests)) == (0, 6, 6)
    # The re-run replaced the judge's runner run; the scores are the same.
    assert JudgeRun.objects.filter(version=version, judge="fake-judge").count() == 1
    config.temperature = 0.7
    config.save()
    changed = judge_run_execute(version=version, config=config, by=lead)
    assert (changed.made, changed.cached, len(server.requests)) == (6, 0, 12)
    other = judge_config(server.url, name="other", model="other-model")
    judge_run_execute(version=version, config=other, by=lead)
    assert len(server.requests) == 18
    assert {r.body["model"] for r in server.requests[12:]} == {"other-model"}
    assert JudgeCall.objects.filter(model="other-model").count() == 6
    assert JudgeCall.objects.count() == 18


def test_retry_after_is_honoured_then_answered(server, version, lead):
    config = judge_config(server.url, concurrency=1, retries=3)
    server.fail_next(429, times=1, retry_after="1")
    server.fail_next(500, times=1)
    result = judge_run_execute(version=version, config=config, by=lead)
    assert result.failed == 0 and result.made == 6
    statuses = [r.status for r in server.requests]
    assert statuses[:3] == [429, 500, 200] and len(statuses) == 8
    assert server.requests[1].started - server.requests[0].finished >= 0.95  # Retry-After: 1
    call = JudgeCall.objects.get(attempts=3)
    assert call.parse_method == "direct"


def test_failure_after_the_last_retry_is_a_clear_per_row_failure(server, version, lead):
    config = judge_config(server.url, concurrency=1, retries=1)
    server.fail_next(500, times=2)
    result = judge_run_execute(version=version, config=config, by=lead)
    assert result.failed == 1 and result.partial
    (failure,) = result.failures
    assert failure["question_id"] == "p1__completeness"
    assert failure["error"].startswith("HTTP 500") and failure["error"].endswith("(tried 2 times)")
    run = JudgeRun.objects.get(version=version)
    assert run.stats["missing"] == 1 and run.stats["partial"] is True
    card = Scorecard.objects.get(version=version, split="open_ended")
    assert card.figures["counts"]["missing"] == 1
    assert card.figures["runner"]["parse"]["failed"] == 1
    # The failed call is asked again on the next run; the answered ones come from the cache.
    again = judge_run_execute(version=version, config=config, by=lead)
    assert (again.made, again.cached, again.failed, again.partial) == (1, 5, 0, False)


def test_rate_limit_spaces_the_requests(server, version, lead):
    config = judge_config(server.url, concurrency=4, rpm=120)  # 2 per second
    judge_run_execute(version=version, config=config, by=lead)
    starts = sorted(r.started for r in server.requests)
    assert len(starts) == 6
    # The bucket holds one token: a request every 0.5 s (the first opens the connection, so
    # its arrival is measured a little late).
    gaps = [b - a for a, b in itertools.pairwise(starts[1:])]
    assert min(gaps) >= 0.35 and sum(gaps) / len(gaps) >= 0.47  # arrival times jitter
    assert starts[-1] - starts[0] >= 2.2


def test_concurrency_is_bounded(version, lead):
    with FakeOpenAI(delay=0.3) as server:
        config = judge_config(server.url, concurrency=3, orders="both")
        judge_run_execute(version=version, config=config, by=lead)
    assert len(server.requests) == 12
    assert server.max_in_flight == 3


def test_budget_stops_the_run_and_the_partial_run_is_scored(server, version, lead):
    config = judge_config(server.url, concurrency=1, budget_tokens=500)
    result = judge_run_execute(version=version, config=config, by=lead)
    # Each call uses about 250 tokens: the second reaches the budget and no third starts.
    assert result.made == 2 and result.partial
    assert result.stop_reason.startswith("Stopped at the token budget: ")
    assert len(server.requests) == 2
    run = JudgeRun.objects.get(version=version)
    assert (run.stats["accepted"], run.stats["missing"], run.stats["partial"]) == (2, 4, True)
    card = Scorecard.objects.get(version=version, split="open_ended")
    assert card.figures["runner"]["partial"] is True
    assert card.figures["counts"]["missing"] == 4


def test_verifier_reads_an_unparsed_output(server, project, lead):
    rows = [("p1", "completeness", LONG, SHORT, "model_b")]
    version = runner_version(project, rows, question="UNPARSABLE {prompt}")
    verifier = judge_config(server.url, name="verifier", model="verifier-model")
    config = judge_config(server.url, verifier=verifier)
    judge_run_execute(version=version, config=config, by=lead)
    assert [r.body["model"] for r in server.requests] == ["fake-vl-7b", "verifier-model"]
    assert "[End of the assessment]" in server.requests[1].text()
    assert "prefer the second one" in server.requests[1].text()
    call = JudgeCall.objects.get()
    assert (call.parse_method, call.verdict) == ("verifier", "model_b")
    assert call.verifier_output == "2"
    run = JudgeRun.objects.get(version=version)
    assert dict(run.predictions.values_list("question_id", "prediction")) == {
        "p1__completeness": "model_b"
    }
    # Without a verifier the same output is unparsed, listed, and counts as invalid.
    plain = judge_config(server.url, name="plain", model="plain-model")
    judge_run_execute(version=version, config=plain, by=lead)
    run = JudgeRun.objects.get(version=version, judge="plain")
    assert run.stats["unparsable"] == 1 and run.stats["invalid"] == 1
    assert run.stats["unparsable_rows"][0]["question_id"] == "p1__completeness"


def test_missing_api_key_variable_is_refused(server, version, lead, monkeypatch):
    monkeypatch.delenv("JUDGE_KEY_FAKE", raising=False)
    config = judge_config(server.url, api_key_env="JUDGE_KEY_FAKE")
    with pytest.raises(RunnerError, match="the environment variable JUDGE_KEY_FAKE is not set"):
        judge_run_execute(version=version, config=config, by=lead)
    assert server.requests == []
    monkeypatch.setenv("JUDGE_KEY_FAKE", "sk-test-123")
    judge_run_execute(version=version, config=config, by=lead)
    assert {r.headers.get("Authorization") for r in server.requests} == {"Bearer sk-test-123"}
    assert "sk-test-123" not in str(JudgeRun.objects.get(version=version).stats)


def test_nothing_answered_is_an_error_and_stores_no_run(server, version, lead):
    config = judge_config(server.url, retries=0)
    server.fail_next(400, times=6)
    refused = r"no row got a verdict, so nothing was scored \(first error: HTTP 400"
    with pytest.raises(RunnerError, match=refused):
        judge_run_execute(version=version, config=config, by=lead)
    assert not JudgeRun.objects.exists()


def test_interrupted_run_resumes_asking_only_what_is_missing(version, lead):
    """An interrupted command (Ctrl-C) keeps every answer; running it again asks the rest."""
    calls_seen = []

    def interrupt(done, total=None, message=None):
        calls_seen.append(done)
        if done >= 5:
            raise KeyboardInterrupt

    with FakeOpenAI(delay=0.1) as server:
        config = judge_config(server.url, concurrency=2, orders="both")
        with pytest.raises(KeyboardInterrupt):
            judge_run_execute(version=version, config=config, by=lead, progress=interrupt)
        kept = JudgeCall.objects.count()
        asked = len(server.requests)
        assert 5 <= kept < 12 and not JudgeRun.objects.exists()
        result = judge_run_execute(version=version, config=config, by=lead)
        assert (result.cached, result.made) == (kept, 12 - kept)
        # Only the calls in flight at the interrupt were asked twice.
        assert len(server.requests) - 12 <= 2 and asked - kept <= 2


def test_cost_from_the_prices_per_million(server, version, lead):
    config = judge_config(
        server.url, price_input_per_million="2.5", price_output_per_million="10", currency="EUR"
    )
    result = judge_run_execute(version=version, config=config, by=lead)
    figures = Scorecard.objects.get(version=version, split="open_ended").figures["runner"]
    tokens = figures["tokens"]
    expected = round((tokens["prompt"] * 2.5 + tokens["completion"] * 10) / 1e6, 6)
    assert figures["cost"] == expected == result.cost and expected > 0
    assert f"cost {expected:.4f} EUR." in result.summary()
