"""The runner's pure parts on their own: dialects, adaptations, reading answers, the replica
pool and the verifier's answer (no database, no server)."""

from __future__ import annotations

import asyncio

import pytest

from judging.runner.adapt import Adaptation, adaptation_for, adapted
from judging.runner.completion import read_completion, split_thinking
from judging.runner.dialects import DIALECTS, dialect_for
from judging.runner.replicas import ReplicaPool
from judging.runner.requests import GenerationSettings
from judging.verifier import last_lines, verifier_choice, verifier_prompt
from tests.event_loop import run_coroutine

NEUTRAL = {"model": "m", "messages": [], "temperature": 0.0, "top_p": 0.9, "max_tokens": 64}


def openai_error(code: str, param: str, message: str = "") -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param,
                      "code": code}}  # fmt: skip


def test_every_dialect_is_registered_once():
    assert list(DIALECTS) == ["openai", "openai-reasoning", "azure", "vllm"]
    assert dialect_for("") is DIALECTS["openai"]
    with pytest.raises(KeyError):
        dialect_for("nope")


@pytest.mark.parametrize(
    ("dialect", "base", "version", "url"),
    [
        ("openai", "http://h/v1", "", "http://h/v1/chat/completions"),
        ("vllm", "http://h:8000/v1/", "", "http://h:8000/v1/chat/completions"),
        ("azure", "https://r.openai.azure.com", "2024-10-21",
         "https://r.openai.azure.com/openai/deployments/gpt%2F4o/chat/completions"
         "?api-version=2024-10-21"),
        ("azure", "https://r.openai.azure.com/openai", "",
         "https://r.openai.azure.com/openai/v1/chat/completions"),
    ],
)  # fmt: skip
def test_endpoints(dialect, base, version, url):
    assert dialect_for(dialect).endpoint(base, model="gpt/4o", api_version=version) == url


def test_wire_bodies_and_headers():
    reasoning = dialect_for("openai-reasoning").wire_body(NEUTRAL)
    assert reasoning == {"model": "m", "messages": [], "max_completion_tokens": 64}
    assert dialect_for("openai").wire_body(NEUTRAL) == NEUTRAL
    assert dialect_for("azure").headers("k") == {"api-key": "k"}
    assert dialect_for("openai").headers("k") == {"Authorization": "Bearer k"}
    assert dialect_for("vllm").headers(None) == {}


@pytest.mark.parametrize(
    ("payload", "param", "replacement"),
    [
        (openai_error("unsupported_parameter", "max_tokens"), "max_tokens",
         "max_completion_tokens"),
        (openai_error("unsupported_value", "temperature"), "temperature", ""),
        ({"error": {"message": "Unsupported parameter: 'top_p' is not supported with this "
                    "model."}}, "top_p", ""),
        ({"object": "error", "message": "Unrecognized request argument supplied: seed"},
         "seed", ""),
        ({"error": "'reasoning_effort' is not supported by this server"}, "reasoning_effort",
         ""),
    ],
)  # fmt: skip
def test_adaptations_are_read_from_refusals(payload, param, replacement):
    body = {**NEUTRAL, "seed": 1, "reasoning_effort": "low"}
    learnt = adaptation_for(400, payload, body)
    assert learnt is not None and (learnt.param, learnt.replacement) == (param, replacement)
    changed = learnt.apply(body)
    assert param not in changed
    if replacement:
        assert changed[replacement] == body[param]


@pytest.mark.parametrize(
    ("status", "payload"),
    [
        (401, openai_error("unsupported_parameter", "max_tokens")),
        (400, openai_error("unsupported_parameter", "model")),  # never adapted away
        (400, openai_error("unsupported_parameter", "not_in_body")),
        (400, {"error": {"message": "context length exceeded"}}),
        (400, "not json"),
    ],
)
def test_other_refusals_are_not_adapted_to(status, payload):
    assert adaptation_for(status, payload, NEUTRAL) is None


def test_adaptations_apply_in_order():
    steps = [Adaptation("max_tokens", "max_completion_tokens"), Adaptation("temperature")]
    assert adapted(NEUTRAL, steps) == {
        "model": "m", "messages": [], "top_p": 0.9, "max_completion_tokens": 64,
    }  # fmt: skip
    # A refused replacement is then left out too.
    again = adaptation_for(
        400, openai_error("unsupported_parameter", "max_completion_tokens"), adapted(NEUTRAL, steps)
    )
    assert again is not None and (again.param, again.replacement) == ("max_completion_tokens", "")


def choice(message: dict, finish: str = "stop", usage: dict | None = None) -> dict:
    return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage or {}}


def test_reading_thinking_and_truncation():
    usage = {"prompt_tokens": 10, "completion_tokens": 90,
             "completion_tokens_details": {"reasoning_tokens": 80}}  # fmt: skip
    done = read_completion(
        choice({"content": "Response 2 is better.", "reasoning_content": "hmm"}, usage=usage)
    )
    assert done is not None
    assert (done.visible, done.thinking, done.reasoning_tokens) == (
        "Response 2 is better.", "hmm", 80,
    )  # fmt: skip
    cut = read_completion(choice({"content": None, "reasoning": "long"}, "length"))
    assert cut is not None and cut.cut and cut.visible == "" and cut.thinking == "long"
    assert read_completion({"choices": []}) is None
    assert read_completion(choice({"content": 3})) is None


@pytest.mark.parametrize(
    ("content", "visible", "thinking"),
    [
        ("plain", "plain", ""),
        ("<think>a</think>\nResponse 1 is better.", "Response 1 is better.", "a"),
        ("<think>a</think>b<THINK>c</THINK>d", "bd", "a\n\nc"),
        ("<think>never closed, cut", "", "never closed, cut"),
        ("answer <think>late", "answer", "late"),
    ],
)
def test_split_thinking(content, visible, thinking):
    assert split_thinking(content) == (visible, thinking)


def test_seeds_per_run_and_identical_runs():
    greedy = GenerationSettings(model="m", runs=3)
    assert [greedy.seed_for(r) for r in (1, 2, 3)] == [None, 1, 2]
    assert greedy.identical_runs()
    seeded = GenerationSettings(model="m", seed=10, runs=3, temperature=0.7)
    assert [seeded.seed_for(r) for r in (1, 2, 3)] == [10, 11, 12]
    assert not seeded.identical_runs()
    fixed = GenerationSettings(model="m", runs=3, fixed_sampling=True)
    assert not fixed.identical_runs() and "temperature" not in fixed.body_fields(1)
    extra = GenerationSettings(
        model="m", extra_body={"model": "x", "logprobs": True}, chat_template_kwargs={"a": 1}
    )
    body = extra.body_fields(1)
    assert body["model"] == "m" and body["logprobs"] is True  # settings win over extra fields
    assert body["chat_template_kwargs"] == {"a": 1}


def test_the_pool_prefers_the_least_busy_and_sets_failures_aside():
    now = [0.0]

    async def go():
        pool = ReplicaPool(["a", "b"], per_replica=2, backoff_base=1.0, clock=lambda: now[0])
        first = await pool.acquire()
        second = await pool.acquire()
        assert {first.url, second.url} == {"a", "b"}  # spread, not stacked
        await pool.release(first, failed=True)
        third = await pool.acquire()
        assert third is second  # the failed one is set aside for 1 s
        now[0] = 1.5
        fourth = await pool.acquire()
        assert fourth is first  # back after its backoff
        await pool.release(fourth, failed=True)
        assert first.aside_until == pytest.approx(1.5 + 2.0)  # the backoff doubles
        await pool.release(third)
        await pool.release(second)
        # Every replica set aside: calls go on anyway (their own retry backoff paces them).
        await pool.release(await pool.acquire(), failed=True)
        assert all(r.aside_until > now[0] for r in pool.replicas)
        assert (await pool.acquire()) is not None

    run_coroutine(go())


def test_a_replica_back_from_failing_gets_one_call_at_a_time():
    now = [0.0]

    async def go():
        pool = ReplicaPool(["a", "b"], per_replica=3, clock=lambda: now[0])
        a = pool.replicas[0]
        await pool.release(await pool.acquire(), failed=True)  # "a" fails and is set aside
        now[0] = 5.0  # back
        held = [await pool.acquire() for _ in range(4)]
        assert sorted(r.url for r in held) == ["a", "b", "b", "b"]  # "a" on probation: one
        await pool.release(next(r for r in held if r is a))  # a success ends its probation
        assert pool.room(a) == 3
        # A single server is never held to one call: there is nowhere else to go.
        alone = ReplicaPool(["only"], per_replica=3)
        await alone.release(await alone.acquire(), failed=True)
        assert alone.room(alone.replicas[0]) == 3

    run_coroutine(go())


def test_the_pool_waits_for_a_place():
    async def go():
        pool = ReplicaPool(["only"], per_replica=1)
        held = await pool.acquire()
        waiter = asyncio.create_task(pool.acquire())
        await asyncio.sleep(0.05)
        assert not waiter.done()
        await pool.release(held)
        assert (await asyncio.wait_for(waiter, 1)).url == "only"

    run_coroutine(go())


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("1", "model_a"), ("2", "model_b"), (" **2.** ", "model_b"), ("'1'", "model_a"),
        ("02", "model_b"), ("٢", "model_b"), ("Response 1", "model_a"), ("none", None),
        ("3", None), ("Response 2 is better.", "model_b"), ("I think the first", None),
    ],
)  # fmt: skip
def test_the_verifier_answer(answer, verdict):
    assert verifier_choice(answer) == verdict


def test_the_verifier_sees_the_last_four_lines():
    output = "alpha\nbeta\ngamma\ndelta\nepsilon\n\n"
    assert last_lines(output) == "beta\ngamma\ndelta\nepsilon"
    prompt = verifier_prompt(output)
    assert "beta\ngamma\ndelta\nepsilon" in prompt and "alpha" not in prompt
