"""The estimate before a run, the cache key and the combination of orders (pure functions)."""

from __future__ import annotations

import math

from judging.prompt import DEFAULT_TEMPLATE
from judging.runner.cache import call_key, normalise_base_url
from judging.runner.estimate import estimate_run, image_tokens
from judging.runner.figures import combine_orders
from judging.runner.requests import GenerationSettings, RowCall, key_parts, prompt_text


def row_call(**fields) -> RowCall:
    values = {
        "question_id": "p1__c",
        "split": "open_ended",
        "criterion": "c",
        "criterion_name": "Clarity",
        "criterion_description": "Is it clear?",
        "question": "What is shown?",
        "response_a": "A cat.",
        "response_b": "A dog.",
        "image_name": "x.png",
        "image_sha256": "ab" * 32,
        "run_index": 1,
        "order": "ab",
    }
    values.update(fields)
    return RowCall(**values)


def test_estimate_counts_text_images_and_output():
    calls = [row_call(), row_call(order="ba"), row_call(image_sha256="", image_name="")]
    estimate = estimate_run(
        calls, template=DEFAULT_TEMPLATE, max_tokens=100, image_max_side=1536, cached={1}
    )
    assert image_tokens(1536) == 55 * 55
    text = [math.ceil(len(prompt_text(c, DEFAULT_TEMPLATE)) / 4) for c in (calls[0], calls[2])]
    assert estimate.prompt_tokens == sum(text) + 55 * 55
    assert (estimate.calls, estimate.cached, estimate.to_make) == (3, 1, 2)
    assert estimate.completion_tokens_max == 200
    assert estimate.text().startswith("2 calls to make (1 answer already in the cache); about ")


def key(call: RowCall, **settings) -> str:
    values = {"model": "m"}
    values.update(settings)
    return call_key(
        key_parts(
            call,
            kind="criterion",
            template_hash="t",
            settings=GenerationSettings(**values),
            image_max_side=1536,
        )
    )


def test_every_part_of_the_request_changes_the_key():
    base = key(row_call())
    assert key(row_call()) == base  # deterministic
    changed = [
        key(row_call(order="ba")),
        key(row_call(run_index=2)),
        key(row_call(image_sha256="cd" * 32)),
        key(row_call(question="Other?")),
        key(row_call(response_a="A bird.")),
        key(row_call(response_b="A bird.")),
        key(row_call(criterion="d")),
        key(row_call(criterion_description="Other.")),
        key(row_call(), model="other"),
        key(row_call(), temperature=0.5),
        key(row_call(), top_p=0.9),
        key(row_call(), max_tokens=10),
        key(row_call(), seed=3),
        key(row_call(), reasoning_effort="high"),
        key(row_call(), chat_template_kwargs={"enable_thinking": False}),
        key(row_call(), extra_body={"top_k": 20}),
    ]
    assert base not in changed and len(set(changed)) == len(changed)
    # The server is no part of the key: replicas and moves re-ask nothing.
    assert "base_url" not in key_parts(
        row_call(), kind="criterion", template_hash="t",
        settings=GenerationSettings(model="m"), image_max_side=1536,
    )  # fmt: skip
    assert normalise_base_url("http://h/v1/chat/completions") == "http://h/v1"


def test_orders_combine_to_the_agreeing_verdict_or_invalid():
    assert combine_orders("model_a", None, both=False) == "model_a"
    assert combine_orders("model_a", "model_a", both=True) == "model_a"
    assert combine_orders("model_a", "model_b", both=True) == "invalid"
    assert combine_orders("invalid", "invalid", both=True) == "invalid"
    assert combine_orders("model_b", None, both=True) is None  # a failed order: missing
