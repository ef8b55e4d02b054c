"""An async client for OpenAI-compatible ``/chat/completions`` servers (httpx).

Bounded concurrency per server, several replicas of one model (``judging.runner.replicas``), a
token-bucket rate limit (requests per minute), and retries with exponential backoff and jitter on
429, 5xx, timeouts and connection errors (on another replica at once when one is healthy); a
``Retry-After`` header sets the least wait. A 400 that names a refused parameter is adapted to
(``judging.runner.adapt``) and the call sent again; other answers (400, 401, 404, ...) fail at
once. Requests go to the configured URLs only, through the outbound address guard
(``core.outbound``): no redirects are followed, no proxy settings are read from the environment,
and an error shows an upstream error's message (never its body) and reads the same whether a
port is closed or speaks another protocol.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from core.outbound import (
    OutboundRefused,
    connection_error_text,
    guarded_async_transport,
    upstream_error_text,
)
from judging.runner.adapt import Adaptation, adaptation_for, adapted
from judging.runner.cache import normalise_base_url
from judging.runner.completion import read_completion
from judging.runner.dialects import DEFAULT_DIALECT, dialect_for
from judging.runner.replicas import Replica, ReplicaPool

#: The longest ``Retry-After`` honoured, in seconds (a longer one is cut to this).
RETRY_AFTER_MAX = 300.0
#: Parameters a call may shed or rename on a 400 before it fails.
_ADAPTATIONS_MAX = 6


@dataclass(frozen=True)
class ClientSettings:
    """Where and how to send requests: one server or several replicas of one model."""

    base_url: str = ""
    api_key: str | None = None
    timeout: float = 120.0
    retries: int = 4
    #: Calls in flight at once on each server.
    concurrency: int = 8
    rpm: float | None = None
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    #: Further replicas of the same model beside ``base_url``.
    replicas: tuple[str, ...] = ()
    dialect: str = DEFAULT_DIALECT
    api_version: str = ""
    model: str = ""
    #: How long a failing replica is set aside at first (doubling up to ``backoff_max``).
    aside_base: float = 1.0

    @property
    def urls(self) -> tuple[str, ...]:
        """Every server's API root, without duplicates."""
        urls = [normalise_base_url(u) for u in (self.base_url, *self.replicas) if u.strip()]
        return tuple(dict.fromkeys(urls))

    @property
    def endpoint(self) -> str:
        """The full chat completion URL on the first server."""
        return self.endpoint_on(self.urls[0])

    def endpoint_on(self, url: str) -> str:
        """The full chat completion URL on the server at ``url``."""
        return dialect_for(self.dialect).endpoint(
            url, model=self.model, api_version=self.api_version
        )


@dataclass
class CallOutcome:
    """What one request (with its retries) gave: the text, thinking and usage, or the error."""

    text: str = ""
    finish_reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    attempts: int = 0
    error: str = ""
    reasoning: str = ""
    reasoning_tokens: int = 0
    visible: str = ""
    base_url: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def truncated(self) -> bool:
        """Cut at the token budget before any visible text."""
        return self.ok and self.finish_reason == "length" and not self.visible.strip()


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


class JudgeClient:
    """Sends chat completion requests; use as ``async with JudgeClient(settings) as client``.

    Requests are written in the neutral vocabulary of ``judging.runner.dialects``; the client
    sends each in its dialect, to the replica with the fewest calls in flight, and adapts to a
    server that refuses a parameter by name (``adaptations`` lists what it learnt).
    """

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
        self._dialect = dialect_for(settings.dialect)
        self.pool = ReplicaPool(
            settings.urls,
            per_replica=settings.concurrency,
            backoff_base=settings.aside_base,
            backoff_max=settings.backoff_max,
        )
        self._bucket = TokenBucket(settings.rpm / 60.0) if settings.rpm else None
        self._http: httpx.AsyncClient | None = None
        #: Changes made to every request after a server refused a parameter, in order.
        self.adaptations: list[Adaptation] = []

    async def __aenter__(self) -> JudgeClient:
        headers = {"Accept": "application/json", **self._dialect.headers(self.settings.api_key)}
        size = self.pool.capacity
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=self.settings.timeout,
            follow_redirects=False,
            trust_env=False,
            limits=limits,
            # A connection pool as large as the calls in flight (the client's own limits apply
            # only to its default transport).
            transport=self._transport or guarded_async_transport(limits=limits),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.aclose()

    def wire_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` as the server is sent it: in the dialect, with every adaptation made."""
        return adapted(self._dialect.wire_body(body), self.adaptations)

    def _adapt(
        self, status: int, response: httpx.Response, body: dict[str, Any], sent: dict[str, Any]
    ) -> bool:
        """Learn from a refused parameter; True when the call should be sent again (its body
        now reads differently: this adaptation, or one another call learnt meanwhile)."""
        if status != 400 or len(self.adaptations) >= _ADAPTATIONS_MAX:
            return False
        try:
            payload = response.json()
        except ValueError:
            return False
        learnt = adaptation_for(status, payload, sent)
        if learnt is None:
            return False
        if all(a.param != learnt.param for a in self.adaptations):
            self.adaptations.append(learnt)
        return self.wire_body(body) != sent

    async def complete(self, body: dict[str, Any]) -> CallOutcome:
        """Send ``body`` with retries; never raises for a server or network failure."""
        assert self._http is not None, "use the client inside 'async with'"
        settings = self.settings
        error = ""
        attempt = attempts = 0
        replica: Replica | None = None
        while attempt <= settings.retries:
            attempts += 1
            replica = await self.pool.acquire(avoid=replica)
            failed, wait = True, None
            started = time.perf_counter()
            sent = self.wire_body(body)
            try:
                if self._bucket is not None:
                    await self._bucket.acquire()
                response = await self._http.post(settings.endpoint_on(replica.url), json=sent)
            except OutboundRefused as exc:  # the address is refused: trying again cannot help
                await self.pool.release(replica)
                replica = None
                return CallOutcome(attempts=attempts, error=connection_error_text(exc, 0))
            except httpx.TransportError as exc:
                error = connection_error_text(exc, settings.timeout)
            else:
                latency_ms = int((time.perf_counter() - started) * 1000)
                status = response.status_code
                failed = status >= 500
                if status == 200:
                    return self._answer(response, latency_ms, attempts, replica.url)
                error = upstream_error_text(
                    status, response.headers.get("Content-Type", ""), response.content
                )
                if self._adapt(status, response, body, sent):
                    continue  # the same call at once, without the refused parameter
                if status != 429 and status < 500:
                    return CallOutcome(
                        latency_ms=latency_ms, attempts=attempts, error=error, base_url=replica.url
                    )
                wait = retry_after_seconds(response.headers.get("Retry-After"))
            finally:
                if replica is not None:
                    await self.pool.release(replica, failed=failed)
            if attempt == settings.retries:
                break
            await self._pause(attempt, wait, replica)
            attempt += 1
        times = "once" if attempts == 1 else f"{attempts} times"
        return CallOutcome(attempts=attempts, error=f"{error} (tried {times})")

    async def _pause(self, attempt: int, wait: float | None, replica: Replica) -> None:
        """Back off before the next try, unless another replica can take it at once."""
        if wait is None and self.pool.healthy_other(replica):
            return
        delay = backoff_seconds(
            attempt, self.settings.backoff_base, self.settings.backoff_max, self._rng
        )
        await asyncio.sleep(max(delay, wait or 0.0))

    @staticmethod
    def _answer(
        response: httpx.Response, latency_ms: int, attempts: int, base_url: str
    ) -> CallOutcome:
        try:
            payload = response.json()
        except ValueError:
            payload = None
        completion = read_completion(payload)
        if completion is None:
            kind = response.headers.get("Content-Type", "") or "no content type"
            return CallOutcome(
                latency_ms=latency_ms,
                attempts=attempts,
                base_url=base_url,
                error=f"the server's answer is not a chat completion ({kind}, "
                f"{len(response.content):,} bytes)",
            )
        return CallOutcome(
            text=completion.content,
            visible=completion.visible,
            reasoning=completion.thinking,
            reasoning_tokens=completion.reasoning_tokens,
            finish_reason=completion.finish_reason,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            latency_ms=latency_ms,
            attempts=attempts,
            base_url=base_url,
        )
