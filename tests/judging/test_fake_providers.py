"""The fake chat completions server's provider modes, checked with plain HTTP calls."""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.judging.fake_openai import FakeOpenAI, default_answer
from tests.judging.fake_providers import (
    IMAGE_TOKENS,
    common_prefix,
    prefix_reuse_share,
    prompt_sequence,
    reused_prefixes,
    thinking_text,
)

TEXT = (
    "Which is better?\n[Response 1]\nshort\n[End of Response 1]\n"
    "[Response 2]\na much longer answer\n[End of Response 2]"
)
ANSWER = default_answer(TEXT)  # "Response 2 ..."
AZURE_KEY = "secret-key"
HTTP = httpx.Client(timeout=10)  # one client: building one per call is slow


def body(**fields: Any) -> dict[str, Any]:
    return {"model": "judge", "messages": [{"role": "user", "content": TEXT}], **fields}


def post(url: str, payload: dict[str, Any] | None = None, **kwargs: Any) -> httpx.Response:
    return HTTP.post(url, json=body() if payload is None else payload, **kwargs)


def chat(server: FakeOpenAI, **fields: Any) -> httpx.Response:
    return post(server.url + "/chat/completions", body(**fields))


def message(response: httpx.Response, index: int = 0) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()["choices"][index]["message"]


def verdict(text: str) -> str:
    return "2" if "**Response 2 is better.**" in text else "1"


# --- openai (the default) --------------------------------------------------------------------


def test_default_answer_is_unchanged():
    with FakeOpenAI() as server:
        response = chat(server, temperature=0.7, seed=3, max_tokens=5, anything="goes")
        assert server.answered()[0].status == 200
    payload = response.json()
    assert set(payload) == {"id", "object", "model", "choices", "usage"}
    assert payload["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}
    ]
    prompt = len(TEXT) // 4
    assert payload["usage"] == {
        "prompt_tokens": prompt,
        "completion_tokens": len(ANSWER) // 4,
        "total_tokens": prompt + len(ANSWER) // 4,
    }


def test_unknown_provider_or_field_is_refused():
    with pytest.raises(ValueError):
        FakeOpenAI(provider="bedrock")
    with pytest.raises(ValueError):
        FakeOpenAI(provider="vllm-thinking", reasoning_field="thoughts")


# --- openai-reasoning ------------------------------------------------------------------------


def test_reasoning_model_refuses_max_tokens_as_openai_does():
    with FakeOpenAI(provider="openai-reasoning") as server:
        response = chat(server, max_tokens=100)
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error",
            "param": "max_tokens",
            "code": "unsupported_parameter",
        }
    }
    assert response.headers["x-request-id"].startswith("req_")


@pytest.mark.parametrize(
    ("fields", "param", "code", "shown"),
    [
        ({"temperature": 0}, "temperature", "unsupported_value", "does not support 0 with"),
        ({"temperature": 0.2}, "temperature", "unsupported_value", "does not support 0.2 with"),
        ({"top_p": 1}, "top_p", "unsupported_parameter", "'top_p' is not supported"),
        ({"top_p": 0.9}, "top_p", "unsupported_parameter", "'top_p' is not supported"),
        ({"reasoning_effort": "max"}, "reasoning_effort", "unsupported_value", '"max"'),
    ],
)
def test_reasoning_model_refuses_sampling_fields(fields, param, code, shown):
    with FakeOpenAI(provider="openai-reasoning") as server:
        response = chat(server, **fields)
    error = response.json()["error"]
    assert response.status_code == 400
    assert (error["param"], error["code"], error["type"]) == (param, code, "invalid_request_error")
    assert shown in error["message"]


@pytest.mark.parametrize(("effort", "reasoning"), [(None, 300), ("low", 150), ("high", 600)])
def test_reasoning_tokens_are_counted(effort, reasoning):
    fields = {"temperature": 1, "max_completion_tokens": 5000, "seed": 1}
    if effort:
        fields["reasoning_effort"] = effort
    with FakeOpenAI(provider="openai-reasoning") as server:
        response = chat(server, **fields)
    payload = response.json()
    assert message(response)["content"] == ANSWER
    assert payload["choices"][0]["finish_reason"] == "stop"
    assert payload["usage"]["completion_tokens_details"] == {"reasoning_tokens": reasoning}
    assert payload["usage"]["completion_tokens"] == reasoning + len(ANSWER) // 4


def test_reasoning_model_out_of_tokens_answers_nothing():
    with FakeOpenAI(provider="openai-reasoning", reasoning_tokens=400) as server:
        starved = chat(server, max_completion_tokens=250)
        cut = chat(server, max_completion_tokens=403)
    choice = starved.json()["choices"][0]
    assert (choice["message"]["content"], choice["finish_reason"]) == ("", "length")
    usage = starved.json()["usage"]
    assert usage["completion_tokens"] == 250
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 250
    assert message(cut)["content"] == ANSWER[:12]
    assert cut.json()["choices"][0]["finish_reason"] == "length"


# --- vllm-thinking ---------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_thinking_comes_in_the_reasoning_field(field):
    other = "reasoning" if field == "reasoning_content" else "reasoning_content"
    with FakeOpenAI(provider="vllm-thinking", reasoning_field=field) as server:
        response = chat(server, max_tokens=1000, temperature=0)
    found = message(response)
    assert found["content"] == ANSWER
    assert found[field] == thinking_text(200) and len(found[field]) == 800
    assert other not in found
    assert response.json()["choices"][0]["finish_reason"] == "stop"
    assert response.json()["usage"]["completion_tokens"] == 200 + len(ANSWER) // 4


@pytest.mark.parametrize("limit_field", ["max_tokens", "max_completion_tokens"])
def test_thinking_cut_by_the_limit_leaves_no_content(limit_field):
    with FakeOpenAI(provider="vllm-thinking", thinking_tokens=500) as server:
        response = chat(server, **{limit_field: 120})
    choice = response.json()["choices"][0]
    assert choice["message"]["content"] is None
    assert choice["message"]["reasoning_content"] == thinking_text(500)[:480]
    assert choice["finish_reason"] == "length"
    assert response.json()["usage"]["completion_tokens"] == 120


def test_limit_inside_the_answer_cuts_the_answer():
    with FakeOpenAI(provider="vllm-thinking", thinking_tokens=100) as server:
        response = chat(server, max_tokens=103)
    assert message(response)["content"] == ANSWER[:12]
    assert message(response)["reasoning_content"] == thinking_text(100)
    assert response.json()["choices"][0]["finish_reason"] == "length"


def test_thinking_can_be_turned_off():
    with FakeOpenAI(provider="vllm-thinking", thinking_tokens=500) as server:
        response = chat(server, max_tokens=50, chat_template_kwargs={"enable_thinking": False})
    found = message(response)
    assert (found["content"], found["reasoning_content"]) == (ANSWER, None)
    assert response.json()["usage"]["completion_tokens"] == len(ANSWER) // 4


def test_thinking_inside_content_without_a_reasoning_parser():
    with FakeOpenAI(provider="vllm-thinking", thinking_tokens=50, think_in_content=True) as server:
        full = chat(server)
        cut = chat(server, max_tokens=20)
    content = message(full)["content"]
    assert content == f"<think>\n{thinking_text(50)}\n</think>\n\n{ANSWER}"
    assert message(full)["reasoning_content"] is None
    assert message(cut)["content"] == "<think>\n" + thinking_text(50)[:80]
    assert cut.json()["choices"][0]["finish_reason"] == "length"


def test_a_request_can_ask_for_reasoning_not_separated():
    with FakeOpenAI(provider="vllm-thinking", thinking_tokens=10) as server:
        response = chat(server, separate_reasoning=False)
    assert message(response)["content"].startswith("<think>\n")
    assert message(response)["content"].endswith(ANSWER)


# --- azure -----------------------------------------------------------------------------------


def azure(**fields: Any) -> FakeOpenAI:
    return FakeOpenAI(provider="azure", api_key=AZURE_KEY, **fields)


def test_azure_deployment_path_with_api_key():
    with azure() as server:
        without_model = {"messages": body()["messages"]}
        response = post(
            server.deployment_url("judge"), without_model, headers={"api-key": AZURE_KEY}
        )
    assert message(response)["content"] == ANSWER
    payload = response.json()
    assert payload["model"] == "judge"
    assert payload["prompt_filter_results"] and "content_filter_results" in payload["choices"][0]
    assert response.headers["apim-request-id"]


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({}, 401, "401"),
        ({"api-key": "wrong"}, 401, "401"),
        ({"Authorization": f"Bearer {AZURE_KEY}"}, 401, "401"),
    ],
)
def test_azure_deployment_path_needs_the_api_key_header(headers, status, code):
    with azure() as server:
        response = post(server.deployment_url("judge"), headers=headers)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert set(response.json()["error"]) == {"code", "message"}


def test_azure_needs_an_api_version_and_a_known_deployment():
    key = {"api-key": AZURE_KEY}
    with azure() as server:
        no_version = post(server.deployment_url("judge", api_version=""), headers=key)
        unknown = post(server.deployment_url("nobody"), headers=key)
        elsewhere = post(server.root + "/v1/chat/completions", headers=key)
    assert no_version.status_code == 400 and no_version.json()["error"]["code"] == "BadRequest"
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "DeploymentNotFound"
    assert elsewhere.status_code == 404


def test_azure_v1_path_takes_api_key_or_bearer_and_the_model():
    with azure() as server:
        assert server.url.endswith("/openai/v1")
        endpoint = server.url + "/chat/completions"
        with_key = post(endpoint, headers={"api-key": AZURE_KEY})
        with_bearer = post(endpoint, headers={"Authorization": f"Bearer {AZURE_KEY}"})
        wrong = post(endpoint, headers={"Authorization": "Bearer nope"})
        no_model = post(endpoint, {"messages": body()["messages"]}, headers={"api-key": AZURE_KEY})
    assert message(with_key)["content"] == message(with_bearer)["content"] == ANSWER
    assert wrong.status_code == 401
    assert no_model.status_code == 400


def test_azure_deployment_of_a_reasoning_model():
    with azure(deployments={"o-judge": "openai-reasoning"}) as server:
        url = server.deployment_url("o-judge")
        refused = post(url, body(max_tokens=10), headers={"api-key": AZURE_KEY})
        answered = post(url, body(max_completion_tokens=900), headers={"api-key": AZURE_KEY})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "unsupported_parameter"
    assert refused.headers["apim-request-id"]
    assert answered.json()["usage"]["completion_tokens_details"]["reasoning_tokens"] == 300


# --- replicas: capacity, down and up ---------------------------------------------------------


def _burst(server: FakeOpenAI, count: int) -> float:
    start = time.monotonic()
    with ThreadPoolExecutor(count) as pool:
        statuses = list(pool.map(lambda _: chat(server).status_code, range(count)))
    assert statuses == [200] * count
    return time.monotonic() - start


def test_capacity_caps_requests_served_at_once():
    with FakeOpenAI(delay=0.2, capacity=2) as server:
        elapsed = _burst(server, 6)
    assert server.max_serving == 2
    assert server.max_in_flight > 2  # the others waited in line
    assert elapsed >= 0.55  # three rounds of 0.2 s
    waited = [r.served - r.started for r in server.requests]
    assert max(waited) >= 0.35


def test_without_capacity_everything_is_served_at_once():
    with FakeOpenAI(delay=0.2) as server:
        _burst(server, 6)
    assert server.max_serving == server.max_in_flight > 2


def test_down_answers_503_then_up_serves_again():
    with FakeOpenAI() as server:
        server.fail_next(429, retry_after="1")
        server.down()
        refused = chat(server)
        server.up()
        failed = chat(server)  # the failure waited for the server to be up
        served = chat(server)
    assert refused.status_code == 503 and refused.json()["error"]["message"]
    assert (failed.status_code, failed.headers["Retry-After"]) == (429, "1")
    assert served.status_code == 200
    assert [r.status for r in server.requests] == [503, 429, 200]


def test_down_can_close_the_connection():
    with FakeOpenAI(provider="vllm-thinking") as server:
        server.down(close=True)
        with pytest.raises(httpx.RemoteProtocolError):
            chat(server)
        server.down(status=502)
        bad_gateway = chat(server)
        server.up()
        served = chat(server)
    assert bad_gateway.status_code == 502 and bad_gateway.json()["error"]["code"] == 502
    assert served.status_code == 200


# --- test-time scaling: seeds and n ----------------------------------------------------------


def test_seeded_answers_vary_with_the_seed_and_repeat_for_a_seed():
    with FakeOpenAI(sampling=True) as server:
        first = [
            verdict(message(chat(server, temperature=0.8, seed=s))["content"]) for s in range(40)
        ]
        again = [
            verdict(message(chat(server, temperature=0.8, seed=s))["content"]) for s in range(40)
        ]
        greedy = {message(chat(server, temperature=0, seed=s))["content"] for s in range(10)}
    assert first == again
    assert 3 <= first.count("1") <= 20  # about a quarter flipped
    assert greedy == {ANSWER}


def test_unseeded_answers_vary_only_above_temperature_0():
    with FakeOpenAI(sampling=True) as server:
        hot = {message(chat(server, temperature=1.0))["content"] for _ in range(30)}
        cold = {message(chat(server, temperature=0))["content"] for _ in range(10)}
    with FakeOpenAI() as plain:
        off = {message(chat(plain, temperature=1.0, seed=s))["content"] for s in range(10)}
    assert len(hot) == 2
    assert cold == off == {ANSWER}


def test_flip_share_bounds():
    with FakeOpenAI(sampling=True, flip_share=1.0) as always:
        assert verdict(message(chat(always, seed=1))["content"]) == "1"
    with FakeOpenAI(sampling=True, flip_share=0.0) as never:
        assert message(chat(never, seed=1))["content"] == ANSWER


def test_n_choices_drawn_each_on_its_own():
    with FakeOpenAI(sampling=True, flip_share=0.5) as server:
        response = chat(server, n=8, temperature=1.0, seed=7)
        again = chat(server, n=8, temperature=1.0, seed=7)
    choices = response.json()["choices"]
    assert [c["index"] for c in choices] == list(range(8))
    assert len({c["message"]["content"] for c in choices}) == 2
    assert choices == again.json()["choices"]
    assert response.json()["usage"]["completion_tokens"] == sum(
        len(c["message"]["content"]) // 4 for c in choices
    )


@pytest.mark.parametrize(
    ("provider", "code"), [("openai", "unsupported_value"), ("vllm-thinking", 400)]
)
def test_n_refused_without_support(provider, code):
    with FakeOpenAI(provider=provider, supports_n=False) as server:
        refused = chat(server, n=2)
        single = chat(server, n=1)
    assert refused.status_code == 400
    assert (refused.json()["error"]["param"], refused.json()["error"]["code"]) == ("n", code)
    assert single.status_code == 200


def test_reasoning_model_n_choices_each_reason():
    with FakeOpenAI(provider="openai-reasoning") as server:
        response = chat(server, n=3)
    assert len(response.json()["choices"]) == 3
    assert response.json()["usage"]["completion_tokens_details"]["reasoning_tokens"] == 900


# --- prompts and prefix reuse ----------------------------------------------------------------


def test_prefix_reuse_share_on_known_inputs():
    assert reused_prefixes(["abcd", "abxy", "abcd", "zz", "abx"]) == [0, 2, 4, 0, 3]
    assert prefix_reuse_share(["abcd", "abxy", "abcd"]) == pytest.approx(6 / 12)
    assert prefix_reuse_share(["same"] * 4) == pytest.approx(3 / 4)
    assert prefix_reuse_share(["a", "b", "c"]) == 0.0
    assert prefix_reuse_share([]) == 0.0
    assert prefix_reuse_share(["", ""]) == 0.0
    assert common_prefix("abc", "abd") == 2 and common_prefix("", "x") == 0


def test_prefix_reuse_matches_brute_force():
    rng = random.Random(5)
    stems = ["".join(rng.choice("ab") for _ in range(rng.randint(0, 30))) for _ in range(20)]
    prompts = [rng.choice(stems) + "".join(rng.choice("abc") for _ in range(5)) for _ in range(300)]
    expected = [
        max((common_prefix(p, q) for q in prompts[:i]), default=0) for i, p in enumerate(prompts)
    ]
    assert reused_prefixes(prompts) == expected


def test_prefix_reuse_is_fast_on_thousands_of_prompts():
    rng = random.Random(1)
    system = "You are a careful judge. " * 80  # 2,000 shared characters
    prompts = [
        system + f"Question {rng.randrange(1000)}: " + "x" * rng.randint(500, 2000)
        for _ in range(5000)
    ]
    start = time.monotonic()
    share = prefix_reuse_share(prompts)
    assert time.monotonic() - start < 5.0
    assert 0.6 < share < 1.0


def test_prompt_sequence_keeps_text_and_images_in_order():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    request = {
        "messages": [
            {"role": "system", "content": "Judge."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look:"},
                    image,
                    {"type": "text", "text": "ok?"},
                ],
            },
        ]
    }
    flat = prompt_sequence(request)
    assert flat.startswith("<|system|>Judge.<|user|>Look:<image ")
    assert flat.endswith("ok?")
    assert len(flat) == len("<|system|>Judge.<|user|>Look:ok?") + IMAGE_TOKENS * 4
    again = prompt_sequence({"messages": [{"role": "user", "content": [image]}]})[8:]
    elsewhere = {"type": "image_url", "image_url": {"url": "https://example.org/b.png"}}
    other = prompt_sequence({"messages": [{"role": "user", "content": [elsewhere]}]})[8:]
    assert again in flat and other not in flat
    assert common_prefix(again, other) < 20  # a different image shares only its marker's start


def test_recorded_prompts_measure_reuse_across_requests():
    system = {"role": "system", "content": "S" * 300}
    with FakeOpenAI() as server:
        for question in ("one", "two", "one"):
            user = {"role": "user", "content": TEXT + question}
            post(server.url + "/chat/completions", {"model": "m", "messages": [system, user]})
    prompts = [r.prompt() for r in server.requests]
    assert prefix_reuse_share(server.requests) == prefix_reuse_share(prompts)
    size = len(prompts[0])
    assert prefix_reuse_share(server.requests) == pytest.approx((size - 3 + size) / (3 * size))
