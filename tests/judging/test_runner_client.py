"""The runner's HTTP client and engine on their own: retries, timeouts, Retry-After, redirects,
connection errors, malformed answers, long outputs (no database)."""

from __future__ import annotations

import random
import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from judging.runner.client import (
    ClientSettings,
    JudgeClient,
    TokenBucket,
    backoff_seconds,
    retry_after_seconds,
)
from judging.runner.run import OUTPUT_SHOWN_CHARS, shown_output
from tests.event_loop import run_coroutine
from tests.judging.fake_openai import FakeOpenAI

BODY = {
    "model": "m",
    "messages": [
        {
            "role": "user",
            "content": [{"type": "text", "text": "[Response 1]\nx\n[End of Response 1]"}],
        }
    ],
}


def complete(settings: ClientSettings, body: dict = BODY):
    async def go():
        async with JudgeClient(settings, rng=random.Random(0)) as client:
            return await client.complete(body)

    return run_coroutine(go())


def test_retry_after_forms():
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("0.5") == 0.5
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    later = datetime.now(UTC) + timedelta(seconds=20)
    assert 15 < retry_after_seconds(format_datetime(later, usegmt=True)) <= 20
    assert retry_after_seconds("100000") == 300.0  # capped


def test_backoff_grows_with_jitter_and_a_cap():
    rng = random.Random(1)
    for attempt, ceiling in ((0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (10, 30.0)):
        delays = [backoff_seconds(attempt, 0.5, 30.0, rng) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1  # jitter


def test_token_bucket_paces():
    async def go():
        bucket = TokenBucket(rate=10.0)
        start = time.monotonic()
        for _ in range(6):
            await bucket.acquire()
        return time.monotonic() - start

    assert 0.45 <= run_coroutine(go()) < 1.0  # one at once, then five at 10 per second


def test_answer_with_usage():
    with FakeOpenAI() as server:
        outcome = complete(ClientSettings(base_url=server.url))
    assert outcome.ok and outcome.attempts == 1
    assert outcome.text.endswith("**Response 1 is better.**")
    assert outcome.finish_reason == "stop"
    assert outcome.prompt_tokens == len(BODY["messages"][0]["content"][0]["text"]) // 4
    assert outcome.completion_tokens == len(outcome.text) // 4


def test_timeout_is_retried_then_fails_clearly():
    with FakeOpenAI(delay=1.0) as server:
        outcome = complete(
            ClientSettings(base_url=server.url, timeout=0.2, retries=1, backoff_base=0.05)
        )
        assert len(server.requests) == 2
    assert outcome.error == "no answer within 0.2 s (tried 2 times)"


def test_connection_error_is_retried_then_fails_clearly():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    outcome = complete(
        ClientSettings(base_url=f"http://127.0.0.1:{port}/v1", retries=2, backoff_base=0.01)
    )
    # The same words whether the port is closed or speaks another protocol (no probing).
    assert outcome.error == "could not reach the server (connection failed) (tried 3 times)"


def test_client_errors_and_redirects_are_not_retried_or_followed():
    with FakeOpenAI() as server:
        server.fail_next(401)
        unauthorised = complete(ClientSettings(base_url=server.url))
        server.fail_next(307, location="http://127.0.0.2:9/v1/chat/completions")
        redirected = complete(ClientSettings(base_url=server.url))
        assert len(server.requests) == 2
    assert unauthorised.error.startswith("HTTP 401") and unauthorised.attempts == 1
    assert redirected.error.startswith("HTTP 307") and redirected.attempts == 1


def test_not_a_chat_completion_is_an_error():
    with FakeOpenAI() as server:
        server.fail_next(200)  # a 200 whose body is an error object, not a completion
        outcome = complete(ClientSettings(base_url=server.url))
        missing = complete(ClientSettings(base_url=server.url + "/nothing-here"))
    # Never the body itself: its type and size.
    assert outcome.error == (
        "the server's answer is not a chat completion (application/json, 35 bytes)"
    )
    assert outcome.attempts == 1
    assert missing.error.startswith("HTTP 404")


def test_base_url_with_the_endpoint_suffix_is_accepted():
    with FakeOpenAI() as server:
        outcome = complete(ClientSettings(base_url=server.url + "/chat/completions/"))
    assert outcome.ok


def test_long_output_is_shown_shortened():
    text = "x" * (OUTPUT_SHOWN_CHARS + 8000)
    shown = shown_output(text)
    assert shown.startswith("x" * OUTPUT_SHOWN_CHARS)
    assert shown.endswith("… (8,000 more characters)")
    assert shown_output("short") == "short"


@pytest.mark.django_db
def test_long_output_is_stored_whole(project, lead):
    from judging.models import JudgeCall
    from judging.runner.run import judge_run_execute
    from tests.judging.runner_data import judge_config, runner_version

    version = runner_version(project, [("p1", "completeness", "a", "bb", "model_b")])
    long_answer = "Reasoning. " * 5000 + "\nResponse 2 is better."
    with FakeOpenAI(answer=lambda text: long_answer) as server:
        judge_run_execute(version=version, config=judge_config(server.url), by=lead)
    call = JudgeCall.objects.get()
    assert call.raw_output == long_answer and call.verdict == "model_b"


@pytest.mark.django_db
def test_admin_shows_a_long_output_shortened(admin_client, project, lead):
    from django.urls import reverse

    from judging.models import JudgeCall
    from judging.runner.run import judge_run_execute
    from tests.judging.runner_data import judge_config, runner_version

    version = runner_version(project, [("p1", "completeness", "a", "bb", "model_b")])
    long_answer = "Reasoning. " * 500 + "\nResponse 2 is better."
    with FakeOpenAI(answer=lambda text: long_answer) as server:
        judge_run_execute(version=version, config=judge_config(server.url), by=lead)
    call = JudgeCall.objects.get()
    page = admin_client.get(reverse("admin:judging_judgecall_change", args=[call.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "… (3,522 more characters)" in html and "Response 2 is better." not in html
