"""How the fake chat completions server (``fake_openai.FakeOpenAI``) answers, per provider mode.

The server picks one mode with its ``provider`` parameter; the answer text always comes from its
``answer`` function (the judge's deterministic verdict), and token counts from the text (one token
per four characters, ``IMAGE_TOKENS`` per image).

``openai`` (the default)
    Any field is accepted; the answer is in ``content`` with ``finish_reason`` "stop". The body is
    exactly what the fake has always sent.
``openai-reasoning``
    An OpenAI reasoning model. ``max_tokens`` is refused (400, ``unsupported_parameter``, with the
    instruction to use ``max_completion_tokens``), so are a ``temperature`` other than 1
    (``unsupported_value``), any ``top_p`` (``unsupported_parameter``) and a ``reasoning_effort``
    other than low/medium/high (``unsupported_value``); the error object is OpenAI's (``message``,
    ``type``, ``param``, ``code``). The model reasons ``reasoning_tokens`` (half at low effort,
    twice at high) before answering, counted in ``usage.completion_tokens_details``.
    ``max_completion_tokens`` bounds reasoning and answer together: below the reasoning the answer
    is ``content`` "" with ``finish_reason`` "length"; between, the answer is cut.
``vllm-thinking``
    vLLM (or SGLang) serving a thinking model with a reasoning parser: ``thinking_tokens`` of
    thinking in the message's ``reasoning_content`` or ``reasoning`` field (``reasoning_field``)
    and the verdict in ``content``. A limit (``max_completion_tokens``, else ``max_tokens``) that
    does not reach past the thinking cuts it, with ``content`` null and ``finish_reason``
    "length"; one that ends inside the answer cuts the answer. ``chat_template_kwargs``
    ``{"enable_thinking": false}`` turns thinking off. With ``think_in_content`` (a server without
    a reasoning parser), or a request's ``separate_reasoning: false`` (SGLang), the thinking comes
    first inside ``content`` as ``<think>...</think>``. Errors use vLLM's error object.
``azure``
    Azure OpenAI's routing in front of one of the modes above (``deployments`` maps each deployment
    name to its mode): ``/openai/deployments/{deployment}/chat/completions`` needs an
    ``api-version`` query (400 without) and the ``api-key`` header (401 without or with a wrong
    key; a Bearer token alone is 401 there); ``model`` in the body is optional. The v1 path
    ``/openai/v1/chat/completions`` takes the key as ``api-key`` or Bearer and the deployment as
    ``model``. An unknown deployment is 404 ``DeploymentNotFound``; errors use Azure's object
    (``code``, ``message``) and every answer carries an ``apim-request-id`` header.

Sampling (any mode, when the server's ``sampling`` is on): at a temperature above 0 (1 when the
request names none) each answer's verdict flips (Response 1 <-> Response 2) for a ``flip_share``
of the (seed, choice, prompt) triples, picked by a hash, so a seed gives the same answers every
time; without a seed the draw differs from request to request. At temperature 0 every answer is
the plain one. ``n`` > 1 gives ``n`` choices (each drawn on its own) when ``supports_n``, a 400
otherwise.

Prefix reuse: :func:`prompt_sequence` flattens a request's messages into one string (role marks,
text parts and, for each image, a marker naming its URL's digest padded to four characters per
image token) and :func:`prefix_reuse_share` measures how much of a series of prompts repeats a
prefix sent before.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote

from PIL import Image

IMAGE_TOKENS = 100
CHARS_PER_TOKEN = 4
MODES = ("openai", "openai-reasoning", "vllm-thinking")
PROVIDERS = (*MODES, "azure")
REASONING_FIELDS = ("reasoning_content", "reasoning")
EFFORTS = {"low": 0.5, "medium": 1.0, "high": 2.0}
_THOUGHT = "Weighing both answers point by point against the question and the rubric. "
_VERDICT = re.compile(r"Response ([12])")
_CLASSIC = re.compile(r"/openai/deployments/([^/]+)/chat/completions")
_V1 = "/openai/v1/chat/completions"


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: status, JSON payload, extra headers."""

    status: int
    payload: Any
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Model:
    """The answering side of the server: which mode, and its knobs."""

    mode: str
    answer: Callable[[str], str]
    reasoning_tokens: int = 300
    thinking_tokens: int = 200
    reasoning_field: str = "reasoning_content"
    think_in_content: bool = False
    supports_n: bool = True
    sampling: bool = False
    flip_share: float = 0.25


@dataclass(frozen=True)
class Call:
    """One request to answer: its body, the prompt text and image count, the model name to
    report, its number (for ids) and its place in arrival order (for the unseeded draws)."""

    body: dict[str, Any]
    text: str
    images: int
    model: Any
    number: int
    arrival: int = 0


def tokens(text: str | None) -> int:
    """The fake's token count of a text."""
    return len(text or "") // CHARS_PER_TOKEN


# --- error objects ---------------------------------------------------------------------------


def openai_error(status: int, message: str, param: str | None, code: str | None) -> Reply:
    """An OpenAI error answer."""
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return Reply(status, {"error": error})


def vllm_error(status: int, message: str, param: str | None = None) -> Reply:
    """A vLLM error answer."""
    error = {"message": message, "type": "BadRequestError", "param": param, "code": status}
    return Reply(status, {"error": error})


def azure_error(status: int, code: str, message: str) -> Reply:
    """An Azure OpenAI error answer."""
    return Reply(status, {"error": {"code": code, "message": message}})


# --- request checks --------------------------------------------------------------------------


def choices_wanted(body: dict[str, Any]) -> int:
    """The ``n`` of a request (1 when absent or not a positive integer)."""
    n = body.get("n")
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1


def reasoning_refusal(body: dict[str, Any]) -> Reply | None:
    """The 400 an OpenAI reasoning model answers to ``body``, or None when it takes it."""
    if body.get("max_tokens") is not None:
        return openai_error(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "max_tokens",
            "unsupported_parameter",
        )
    temperature = body.get("temperature")
    if temperature is not None and temperature != 1:
        return openai_error(
            400,
            f"Unsupported value: 'temperature' does not support {json.dumps(temperature)} with "
            "this model. Only the default (1) value is supported.",
            "temperature",
            "unsupported_value",
        )
    if body.get("top_p") is not None:
        return openai_error(
            400,
            "Unsupported parameter: 'top_p' is not supported with this model.",
            "top_p",
            "unsupported_parameter",
        )
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in EFFORTS:
        return openai_error(
            400,
            f"Unsupported value: 'reasoning_effort' does not support {json.dumps(effort)} with "
            "this model. Supported values are: 'low', 'medium', and 'high'.",
            "reasoning_effort",
            "unsupported_value",
        )
    return None


def n_refusal(mode: str, n: int) -> Reply:
    """The 400 of a server without ``n`` > 1."""
    if mode == "vllm-thinking":
        return vllm_error(400, f"n={n} is not supported by this server; send n=1.", "n")
    return openai_error(
        400,
        f"Unsupported value: 'n' does not support {n} with this model. "
        "Only the default (1) value is supported.",
        "n",
        "unsupported_value",
    )


def refusal(model: Model, body: dict[str, Any]) -> Reply | None:
    """The 400 this model answers to ``body``, or None."""
    if model.mode == "openai-reasoning":
        found = reasoning_refusal(body)
        if found is not None:
            return found
    n = choices_wanted(body)
    if n > 1 and not model.supports_n:
        return n_refusal(model.mode, n)
    return None


# --- sampling --------------------------------------------------------------------------------


def unit_hash(key: str) -> float:
    """A deterministic number in [0, 1) from a string."""
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def flipped(answer: str) -> str:
    """The answer with Response 1 and Response 2 swapped."""
    return _VERDICT.sub(lambda m: f"Response {'2' if m[1] == '1' else '1'}", answer)


def sampled_answers(model: Model, call: Call) -> list[str]:
    """The answers of the request's choices."""
    base = model.answer(call.text)
    n = choices_wanted(call.body)
    temperature = call.body.get("temperature")
    temperature = 1 if temperature is None else temperature
    if not model.sampling or not temperature:
        return [base] * n
    seed = call.body.get("seed")
    draw = f"seed {seed}" if seed is not None else f"unseeded request {call.arrival}"
    return [
        flipped(base) if unit_hash(f"{draw}|{i}|{call.text}") < model.flip_share else base
        for i in range(n)
    ]


# --- answers ---------------------------------------------------------------------------------


def _usage(call: Call, completion: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    prompt = tokens(call.text) + IMAGE_TOKENS * call.images
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    usage["total_tokens"] = prompt + completion
    return usage | (extra or {})


def _plain(model: Model, call: Call, answers: list[str]) -> Reply:
    choices = [
        {
            "index": i,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }
        for i, text in enumerate(answers)
    ]
    payload = {
        "id": f"chatcmpl-{call.number}",
        "object": "chat.completion",
        "model": call.model,
        "choices": choices,
        "usage": _usage(call, sum(tokens(a) for a in answers)),
    }
    return Reply(200, payload)


def reasoning_spent(model: Model, body: dict[str, Any], answer: str) -> tuple[int, str, str]:
    """(reasoning tokens, content, finish reason) of one reasoning-model choice."""
    reasoning = int(model.reasoning_tokens * EFFORTS[body.get("reasoning_effort") or "medium"])
    limit = body.get("max_completion_tokens")
    if limit is None or limit >= reasoning + tokens(answer):
        return reasoning, answer, "stop"
    if limit <= reasoning:
        return limit, "", "length"
    return reasoning, answer[: (limit - reasoning) * CHARS_PER_TOKEN], "length"


def _reasoning(model: Model, call: Call, answers: list[str]) -> Reply:
    choices, reasoning, completion = [], 0, 0
    for i, answer in enumerate(answers):
        spent, content, finish = reasoning_spent(model, call.body, answer)
        reasoning += spent
        completion += spent + tokens(content)
        message = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
        choices.append({"index": i, "message": message, "finish_reason": finish})
    details = {
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    payload = {
        "id": f"chatcmpl-{call.number}",
        "object": "chat.completion",
        "created": 1_700_000_000 + call.number,
        "model": call.model,
        "choices": choices,
        "usage": _usage(call, completion, details),
    }
    return Reply(200, payload)


def thinking_text(count: int) -> str:
    """``count`` tokens of thinking, free of any verdict."""
    size = count * CHARS_PER_TOKEN
    return (_THOUGHT * (size // len(_THOUGHT) + 1))[:size]


def _thinking_enabled(body: dict[str, Any]) -> bool:
    kwargs = body.get("chat_template_kwargs")
    return not (isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False)


def thinking_parts(model: Model, body: dict[str, Any], answer: str) -> tuple[str, str | None, str]:
    """(thinking, content, finish reason) of one thinking-model choice, as generated: the thinking
    cut by the limit, ``content`` None when the limit ended inside the thinking."""
    thinking = thinking_text(model.thinking_tokens) if _thinking_enabled(body) else ""
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    needed = tokens(thinking) + tokens(answer)
    if limit is None or limit >= needed:
        return thinking, answer, "stop"
    if limit <= tokens(thinking):
        return thinking[: limit * CHARS_PER_TOKEN], None, "length"
    cut = (limit - tokens(thinking)) * CHARS_PER_TOKEN
    return thinking, answer[:cut], "length"


def _inline(thinking: str, content: str | None, finish: str) -> str:
    """Thinking and answer in one ``content``, as a server without a reasoning parser sends."""
    if not thinking:
        return content or ""
    if content is None:
        return f"<think>\n{thinking}"
    return f"<think>\n{thinking}\n</think>\n\n{content}"


def _thinking(model: Model, call: Call, answers: list[str]) -> Reply:
    inline = model.think_in_content or call.body.get("separate_reasoning") is False
    choices, completion = [], 0
    for i, answer in enumerate(answers):
        thinking, content, finish = thinking_parts(model, call.body, answer)
        completion += tokens(thinking) + tokens(content)
        message: dict[str, Any] = {"role": "assistant", "tool_calls": []}
        if inline:
            message |= {"content": _inline(thinking, content, finish), model.reasoning_field: None}
        else:
            message |= {"content": content, model.reasoning_field: thinking or None}
        choices.append(
            {
                "index": i,
                "message": message,
                "logprobs": None,
                "finish_reason": finish,
                "stop_reason": None,
            }
        )
    payload = {
        "id": f"chatcmpl-{call.number}",
        "object": "chat.completion",
        "created": 1_700_000_000 + call.number,
        "model": call.model,
        "choices": choices,
        "usage": _usage(call, completion, {"prompt_tokens_details": None}),
    }
    return Reply(200, payload)


_ANSWERERS = {"openai": _plain, "openai-reasoning": _reasoning, "vllm-thinking": _thinking}


def complete(model: Model, call: Call) -> Reply:
    """The answer of ``model`` to ``call``: a refusal or a chat completion."""
    reply = refusal(model, call.body)
    if reply is None:
        reply = _ANSWERERS[model.mode](model, call, sampled_answers(model, call))
    if model.mode == "openai-reasoning":  # OpenAI names every answer, errors too
        request_id = ("x-request-id", f"req_{call.number:024x}")
        reply = Reply(reply.status, reply.payload, (*reply.headers, request_id))
    return reply


# --- Azure routing ---------------------------------------------------------------------------


def _bearer(headers: Mapping[str, str]) -> str:
    value = headers.get("Authorization") or ""
    return value[7:].strip() if value.lower().startswith("bearer ") else ""


def azure_route(
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: dict[str, Any],
    deployments: Mapping[str, str],
    api_key: str,
) -> tuple[str, str] | Reply:
    """(mode, deployment) of an Azure OpenAI request, or the error answer."""
    classic = _CLASSIC.fullmatch(path)
    if classic is None and path != _V1:
        return azure_error(404, "404", "Resource not found")
    key = headers.get("api-key") or ""
    if classic is not None:
        if not parse_qs(query).get("api-version"):
            return azure_error(400, "BadRequest", "The api-version query parameter is missing.")
        name = unquote(classic[1])
    else:
        key = key or _bearer(headers)
        name = body.get("model") or ""
    if key != api_key:
        return azure_error(401, "401", "Access denied: a valid api-key header is required.")
    if not name:
        return azure_error(400, "BadRequest", "The model (a deployment name) is required.")
    if name not in deployments:
        return azure_error(404, "DeploymentNotFound", f"The deployment {name!r} does not exist.")
    return deployments[name], name


def azure_dressed(reply: Reply, number: int) -> Reply:
    """An answer as Azure sends it: content filter results on a completion, a request id."""
    payload = reply.payload
    if reply.status == 200:
        payload = payload | {"prompt_filter_results": [{"prompt_index": 0}]}
        payload["choices"] = [c | {"content_filter_results": {}} for c in payload["choices"]]
    headers = (*reply.headers, ("apim-request-id", f"00000000-0000-0000-0000-{number:012d}"))
    return Reply(reply.status, payload, headers)


# --- prompts and prefix reuse ----------------------------------------------------------------


class HasPrompt(Protocol):
    def prompt(self) -> str: ...


#: The side of the pixel square one image token covers (a 2 x 2 merge of 14-px patches, as the
#: Qwen2-VL family counts).
PIXELS_PER_TOKEN_SIDE = 28


@functools.lru_cache(maxsize=64)
def image_tokens(url: str) -> int:
    """An image's prompt tokens as a patch-based vision encoder counts them (its size in 28-px
    squares); ``IMAGE_TOKENS`` for an image that is not an inline data URL."""
    if not url.startswith("data:") or "," not in url:
        return IMAGE_TOKENS
    try:
        with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as image:
            width, height = image.size
    except (ValueError, OSError):
        return IMAGE_TOKENS
    side = PIXELS_PER_TOKEN_SIDE
    return max(1, -(-width // side) * -(-height // side))


def _image_mark(url: str) -> str:
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return f"<image {digest}>".ljust(image_tokens(url) * CHARS_PER_TOKEN, "~")


def _part_text(part: Any) -> str:
    if not isinstance(part, dict):
        return ""
    if part.get("type") == "image_url":
        image = part.get("image_url")
        url = image.get("url", "") if isinstance(image, dict) else str(image or "")
        return _image_mark(url)
    return str(part.get("text") or "")


def prompt_sequence(body: dict[str, Any]) -> str:
    """A request's prompt as one flat string: each message's role mark, then its text parts and
    image marks in order (an image as long as its tokens' worth of characters)."""
    pieces = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        pieces.append(f"<|{message.get('role', '')}|>")
        content = message.get("content")
        if isinstance(content, str):
            pieces.append(content)
        elif isinstance(content, list):
            pieces.extend(_part_text(part) for part in content)
    return "".join(pieces)


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of two strings."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def reused_prefixes(prompts: Iterable[str]) -> list[int]:
    """For each prompt in order, its longest common prefix with any earlier prompt. The earlier
    prompts are kept sorted: the longest common prefix with a set is the one with a neighbour."""
    earlier: list[str] = []
    reused = []
    for prompt in prompts:
        at = bisect_left(earlier, prompt)
        neighbours = earlier[max(0, at - 1) : at + 1]
        reused.append(max((common_prefix(prompt, other) for other in neighbours), default=0))
        earlier.insert(at, prompt)
    return reused


def prefix_reuse_share(requests: Iterable[str | HasPrompt]) -> float:
    """The share of prompt characters, over requests in arrival order, that repeat a prefix of an
    earlier prompt (0.0 for no prompt characters). Takes recorded requests or prompt strings."""
    prompts = [r if isinstance(r, str) else r.prompt() for r in requests]
    total = sum(len(p) for p in prompts)
    return sum(reused_prefixes(prompts)) / total if total else 0.0
