"""A rough estimate of a run's calls and tokens before it starts, from the template and texts.

Text: one token per four characters of the filled prompt. Image: one token per 28x28-pixel patch
of a square image at the size limit (the layout of common open vision models; hosted APIs count
fewer), so the figure leans high. Output: at most ``max_tokens`` per call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from judging.prompt import PromptTemplate
from judging.runner.requests import RowCall, prompt_text

CHARS_PER_TOKEN = 4
PATCH_PIXELS = 28


@dataclass(frozen=True)
class Estimate:
    """Calls and tokens a run will use (``cached`` calls cost nothing)."""

    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens_max: int

    @property
    def to_make(self) -> int:
        return self.calls - self.cached

    @property
    def total_max(self) -> int:
        return self.prompt_tokens + self.completion_tokens_max

    def text(self) -> str:
        """One line for a person: calls to make, cache hits, tokens."""
        calls = "1 call" if self.to_make == 1 else f"{self.to_make:,} calls"
        hits = "1 answer" if self.cached == 1 else f"{self.cached:,} answers"
        return (
            f"{calls} to make ({hits} already in the cache); about "
            f"{self.prompt_tokens:,} prompt tokens and at most "
            f"{self.completion_tokens_max:,} completion tokens"
        )


def image_tokens(max_side: int) -> int:
    """Tokens of one image at the size limit (28-pixel patches of a square image)."""
    per_side = math.ceil(max_side / PATCH_PIXELS)
    return per_side * per_side


def estimate_run(
    calls: Sequence[RowCall],
    *,
    template: PromptTemplate,
    max_tokens: int,
    image_max_side: int,
    cached: set[int] | None = None,
) -> Estimate:
    """The estimate for ``calls``; ``cached`` holds the positions already answered."""
    cached = cached or set()
    prompt = 0
    per_image = image_tokens(image_max_side)
    for i, call in enumerate(calls):
        if i in cached:
            continue
        prompt += math.ceil(len(prompt_text(call, template)) / CHARS_PER_TOKEN)
        if call.image_sha256:
            prompt += per_image
    to_make = len(calls) - len(cached)
    return Estimate(
        calls=len(calls),
        cached=len(cached),
        prompt_tokens=prompt,
        completion_tokens_max=to_make * max_tokens,
    )
