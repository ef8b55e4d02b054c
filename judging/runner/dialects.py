"""Provider dialects of the chat completions API: one strategy object each, registered here.

The runner builds every request body in one neutral vocabulary (OpenAI chat's: ``model``,
``messages``, ``temperature``, ``top_p``, ``max_tokens``, ``seed``, ``reasoning_effort``,
``chat_template_kwargs`` and any ``extra_body`` fields). A dialect says where the body goes, which
headers carry the key and how the neutral body reads on that provider's wire:

* ``openai`` — OpenAI chat and every compatible server: the body as it is, ``Bearer`` key.
* ``openai-reasoning`` — OpenAI's reasoning models (o-series, GPT-5): ``max_completion_tokens``
  instead of ``max_tokens``; no ``temperature`` and no ``top_p`` (they take only the defaults).
* ``azure`` — Azure OpenAI: with an API version, the classic deployment path
  ``/openai/deployments/<model>/chat/completions?api-version=<version>``; without one, the v1
  path ``/openai/v1/chat/completions``; the key in an ``api-key`` header.
* ``vllm`` — vLLM and SGLang: OpenAI chat plus ``chat_template_kwargs`` (``enable_thinking``, ...);
  a reasoning parser's thinking comes back in ``reasoning_content`` / ``reasoning``.

Whatever the dialect, a server that refuses a parameter by name is adapted to on the fly
(``judging.runner.adapt``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode


@dataclass(frozen=True)
class Dialect:
    """How one provider family reads a neutral request."""

    key: str
    label: str
    #: Fields of the neutral body renamed on the wire (neutral name -> wire name).
    renamed: tuple[tuple[str, str], ...] = ()
    #: Fields of the neutral body never sent.
    dropped: tuple[str, ...] = ()
    #: True when the key goes in an ``api-key`` header instead of ``Authorization: Bearer``.
    api_key_header: bool = False
    #: True for Azure's paths (deployment or v1).
    azure_paths: bool = False
    #: True when temperature and top_p are fixed by the provider (runs differ anyway).
    fixed_sampling: bool = False

    def endpoint(self, base_url: str, *, model: str, api_version: str = "") -> str:
        """The full URL of a chat completion on the server at ``base_url``."""
        root = base_url.rstrip("/")
        if not self.azure_paths:
            return root + "/chat/completions"
        root = root.removesuffix("/openai").removesuffix("/openai/v1")
        if not api_version:
            return root + "/openai/v1/chat/completions"
        query = urlencode({"api-version": api_version})
        return f"{root}/openai/deployments/{quote(model, safe='')}/chat/completions?{query}"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """The headers that carry ``api_key`` (none without a key)."""
        if not api_key:
            return {}
        if self.api_key_header:
            return {"api-key": api_key}
        return {"Authorization": f"Bearer {api_key}"}

    def wire_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The neutral ``body`` as this provider reads it."""
        out = {k: v for k, v in body.items() if k not in self.dropped}
        for neutral, wire in self.renamed:
            if neutral in out:
                out[wire] = out.pop(neutral)
        return out


OPENAI = Dialect(key="openai", label="OpenAI chat / compatible")
OPENAI_REASONING = Dialect(
    key="openai-reasoning",
    label="OpenAI reasoning (o-series, GPT-5)",
    renamed=(("max_tokens", "max_completion_tokens"),),
    dropped=("temperature", "top_p"),
    fixed_sampling=True,
)
AZURE = Dialect(key="azure", label="Azure OpenAI", api_key_header=True, azure_paths=True)
VLLM = Dialect(key="vllm", label="vLLM / SGLang")

#: Every dialect by key: the one place a new provider family is added.
DIALECTS: dict[str, Dialect] = {d.key: d for d in (OPENAI, OPENAI_REASONING, AZURE, VLLM)}
DEFAULT_DIALECT = OPENAI.key


def dialect_for(key: str) -> Dialect:
    """The dialect named ``key`` (the default for an empty key); KeyError for an unknown one."""
    return DIALECTS[key or DEFAULT_DIALECT]


def dialect_choices() -> list[tuple[str, str]]:
    """(key, label) pairs for forms and model choices."""
    return [(d.key, d.label) for d in DIALECTS.values()]
