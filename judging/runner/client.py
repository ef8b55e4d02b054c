"""An async client for OpenAI-compatible ``/chat/completions`` servers (httpx).

Bounded concurrency (a semaphore), a token-bucket rate limit (requests per minute), and retries
with exponential backoff and jitter on 429, 5xx, timeouts and connection errors; a
``Retry-After`` header sets the least wait. Other answers (400, 401, 404, ...) fail at once.
Requests go to the configured URL only: no redirects are followed and no proxy settings are read
from the environment.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from judging.runner.cache import normalise_base_url

#: The longest ``Retry-After`` honoured, in seconds (a longer one is cut to this).
RETRY_AFTER_MAX = 300.0
_ERROR_BODY_SHOWN = 300


@dataclass(frozen=True)
class ClientSettings:
    """Where and how to send requests."""

    base_url: str
    api_key: str | None = None
    timeout: float = 120.0
    retries: int = 4
    concurrency: int = 8
    rpm: float | None = None
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    @property
    def endpoint(self) -> str:
        """The full ``/chat/completions`` URL."""
        return normalise_base_url(self.base_url) + "/chat/completions"


@dataclass
class CallOutcome:
    """What one request (with its retries) gave: the text and usage, or the error."""

    text: str = ""
    finish_reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    attempts: int = 0
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


class TokenBucket:
    """At most ``rate`` acquisitions per second on average, bursts up to ``capacity``."""

    def __init__(self, rate: float, capacity: float = 1.0) -> None:
        if rate <= 0:
            raise ValueError("the rate must be positive")
        self.rate = rate
        self.capacity = max(1.0, capacity)
        self._tokens = self.capacity
        self._last = time.monotonic()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        """Wait for one token."""
        async with self._lock:
            while True:
                now = time.monotonic()
                self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
                self._last = now
                if self._tokens >= 1.0:
                    self._tokens -= 1.0
                    return
                await asyncio.sleep((1.0 - self._tokens) / self.rate)


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (delay-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(RETRY_AFTER_MAX, max(0.0, seconds))


def backoff_seconds(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: half of ``min(cap, base * 2**attempt)`` plus a random
    share of the other half."""
    ceiling = min(cap, base * (2**attempt))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def _usage(payload: dict[str, Any]) -> tuple[int, int]:
    usage = payload.get("usage") or {}
    prompt = usage.get("prompt_tokens") or 0
    completion = usage.get("completion_tokens") or 0
    return (int(prompt) if isinstance(prompt, int | float) else 0), (
        int(completion) if isinstance(completion, int | float) else 0
    )


def _completion(payload: Any) -> tuple[str, str] | None:
    """(text, finish reason) of a chat completion answer, or None when it is not one."""
    if not isinstance(payload, dict):
        return None
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):  # some servers answer with content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if content is None:
        content = ""
    if not isinstance(content, str):
        return None
    return content, str(choices[0].get("finish_reason") or "")


class JudgeClient:
    """Sends chat completion requests; use as ``async with JudgeClient(settings) as client``."""

    def __init__(
        self,
        settings: ClientSettings,
        *,
        rng: random.Random | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self._rng = rng or random.Random()
        self._transport = transport
        self._semaphore = asyncio.Semaphore(max(1, settings.concurrency))
        self._bucket = TokenBucket(settings.rpm / 60.0) if settings.rpm else None
        self._http: httpx.AsyncClient | None = None

    async def __aenter__(self) -> JudgeClient:
        headers = {"Accept": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        size = max(1, self.settings.concurrency)
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=self.settings.timeout,
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
            transport=self._transport,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.aclose()

    async def complete(self, body: dict[str, Any]) -> CallOutcome:
        """Send ``body`` with retries; never raises for a server or network failure."""
        assert self._http is not None, "use the client inside 'async with'"
        settings = self.settings
        error = ""
        attempts = 0
        async with self._semaphore:
            for attempt in range(settings.retries + 1):
                attempts = attempt + 1
                if self._bucket is not None:
                    await self._bucket.acquire()
                wait: float | None = None
                started = time.perf_counter()
                try:
                    response = await self._http.post(settings.endpoint, json=body)
                except httpx.TimeoutException:
                    error = f"no answer within {settings.timeout:g} s"
                except httpx.TransportError as exc:
                    error = f"connection failed ({exc.__class__.__name__}: {exc})"
                else:
                    latency_ms = int((time.perf_counter() - started) * 1000)
                    status = response.status_code
                    if status == 200:
                        return self._answer(response, latency_ms, attempts)
                    text = response.text[:_ERROR_BODY_SHOWN].strip()
                    error = f"HTTP {status}" + (f": {text}" if text else "")
                    if status != 429 and status < 500:
                        return CallOutcome(latency_ms=latency_ms, attempts=attempts, error=error)
                    wait = retry_after_seconds(response.headers.get("Retry-After"))
                if attempt == settings.retries:
                    break
                delay = backoff_seconds(
                    attempt, settings.backoff_base, settings.backoff_max, self._rng
                )
                await asyncio.sleep(max(delay, wait or 0.0))
        times = "once" if attempts == 1 else f"{attempts} times"
        return CallOutcome(attempts=attempts, error=f"{error} (tried {times})")

    @staticmethod
    def _answer(response: httpx.Response, latency_ms: int, attempts: int) -> CallOutcome:
        try:
            payload = response.json()
        except ValueError:
            payload = None
        parsed = _completion(payload)
        if parsed is None:
            shown = response.text[:_ERROR_BODY_SHOWN].strip()
            return CallOutcome(
                latency_ms=latency_ms,
                attempts=attempts,
                error=f"the server's answer is not a chat completion: {shown!r}",
            )
        prompt_tokens, completion_tokens = _usage(payload)
        text, finish = parsed
        return CallOutcome(
            text=text,
            finish_reason=finish,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_ms=latency_ms,
            attempts=attempts,
        )
