"""A small OpenAI-compatible chat completions server on 127.0.0.1, started inside a test.

Deterministic answers from the request content: the judge prefers the longer response (Response
1 on a tie, a position bias the both-orders mode shows); a question holding ``UNPARSABLE`` gets
an answer without a verdict; the verifier prompt gets the verdict its assessment names. Tests
can make the next requests fail (429 or 500, with a ``Retry-After``), slow every answer down, and
read every request the server got, when, and how many were in flight at once. ``usage`` counts
are derived from the text (one token per four characters, 100 per image).

``provider`` picks how the server behaves: ``openai`` (the default, any field accepted),
``openai-reasoning``, ``vllm-thinking`` or ``azure`` (each described in ``fake_providers``).
For replicas, ``capacity`` serves at most that many requests at once (the others wait in line)
and ``down()`` / ``up()`` make the server refuse everything (a 503, or a closed connection) for a
while. For test-time scaling, ``sampling`` makes answers at a temperature above 0 vary with the
seed, and ``n`` gives several choices (a 400 when ``supports_n`` is off). Every request's prompt is
kept as a flat string (``Recorded.prompt``) for ``fake_providers.prefix_reuse_share``.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.judging.fake_providers import (
    IMAGE_TOKENS,
    PROVIDERS,
    REASONING_FIELDS,
    Call,
    Model,
    Reply,
    azure_dressed,
    azure_route,
    complete,
    openai_error,
    prefix_reuse_share,
    prompt_sequence,
    vllm_error,
)

__all__ = [
    "IMAGE_TOKENS",
    "FakeOpenAI",
    "Recorded",
    "default_answer",
    "prefix_reuse_share",
    "responses_in",
]
_BLOCK = re.compile(r"\[Response (\d)\]\n(.*?)\n\[End of Response \1\]", re.S)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default (5) resets connections at 64 in flight


@dataclass
class Recorded:
    """One request the server got."""

    body: dict[str, Any]
    headers: dict[str, str]
    started: float
    finished: float = 0.0
    status: int = 0
    path: str = ""
    #: When a capacity slot was got (the request's wait in line ends).
    served: float = 0.0

    def text(self) -> str:
        """The text part of the user message."""
        content = self.body["messages"][0]["content"]
        if isinstance(content, str):
            return content
        return next(p["text"] for p in content if p.get("type") == "text")

    def prompt(self) -> str:
        """Every message of the request as one flat string (``fake_providers.prompt_sequence``)."""
        return prompt_sequence(self.body)


def responses_in(text: str) -> dict[str, str]:
    """Response 1 and Response 2 as the prompt shows them."""
    return {number: body.strip() for number, body in _BLOCK.findall(text)}


def default_answer(text: str) -> str:
    """The judge's deterministic answer to a prompt text."""
    if "[End of the assessment]" in text:  # the verifier: a one-word answer
        assessment = text.split("[End of the assessment]", 1)[1].split("[End]", 1)[0]
        return "2" if "second" in assessment.lower() else "1"
    if "UNPARSABLE" in text:
        return "Both responses have merits; I prefer the second one overall."
    found = responses_in(text)
    one, two = found.get("1", ""), found.get("2", "")
    better = "2" if len(two) > len(one) else "1"
    return f"Response {better} covers more.\n**Response {better} is better.**"


@dataclass
class FakeOpenAI:
    """The server; use as a context manager. ``url`` is its OpenAI API root (``.../v1``; on an
    ``azure`` server the v1 root ``.../openai/v1``)."""

    delay: float = 0.0
    answer: Callable[[str], str] = default_answer
    requests: list[Recorded] = field(default_factory=list)
    max_in_flight: int = 0
    #: One of ``fake_providers.PROVIDERS``.
    provider: str = "openai"
    #: openai-reasoning: the reasoning before each answer, at medium effort.
    reasoning_tokens: int = 300
    #: vllm-thinking: the thinking before each answer, and where it goes.
    thinking_tokens: int = 200
    reasoning_field: str = "reasoning_content"
    think_in_content: bool = False
    #: azure: the key and the deployments (name -> the mode that answers).
    api_key: str = "azure-test-key"
    deployments: dict[str, str] = field(default_factory=lambda: {"judge": "openai"})
    #: Requests served at once (None: no limit); the others wait in line.
    capacity: int | None = None
    supports_n: bool = True
    sampling: bool = False
    flip_share: float = 0.25
    #: The most requests served at once (holding a capacity slot).
    max_serving: int = 0
    _in_flight: int = 0
    _serving: int = 0
    _down: tuple[bool, int] | None = None
    _failures: deque = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _slots: threading.Semaphore | None = None
    _server: ThreadingHTTPServer | None = None

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"unknown provider {self.provider!r}; one of {PROVIDERS}")
        if self.reasoning_field not in REASONING_FIELDS:
            raise ValueError(f"reasoning_field is one of {REASONING_FIELDS}")
        if self.capacity is not None:
            if self.capacity < 1:
                raise ValueError("capacity is at least 1")
            self._slots = threading.Semaphore(self.capacity)

    @property
    def root(self) -> str:
        """``http://127.0.0.1:<port>``."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        if self.provider == "azure":
            return self.root + "/openai/v1"
        return self.root + "/v1"

    def deployment_url(self, deployment: str, api_version: str = "2024-10-21") -> str:
        """The classic Azure chat completions URL of a deployment (empty version: no query)."""
        url = f"{self.root}/openai/deployments/{deployment}/chat/completions"
        return f"{url}?api-version={api_version}" if api_version else url

    def fail_next(
        self, status: int, times: int = 1, retry_after: str | None = None, location: str = ""
    ) -> None:
        """Answer the next ``times`` requests with ``status`` (a Retry-After, a Location)."""
        with self._lock:
            for _ in range(times):
                self._failures.append((status, retry_after, location))

    def down(self, close: bool = False, status: int = 503) -> None:
        """Refuse every request until ``up()``: answer ``status`` at once, or (``close``) close
        the connection without an answer."""
        with self._lock:
            self._down = (close, status)

    def up(self) -> None:
        """Serve again after ``down()``."""
        with self._lock:
            self._down = None

    def answered(self) -> list[Recorded]:
        """The requests answered with 200."""
        with self._lock:
            return [r for r in self.requests if r.status == 200]

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                fake._handle(self)

        self._server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def _send(self, handler: BaseHTTPRequestHandler, status: int, payload: Any, headers=()) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            handler.send_header(name, value)
        handler.end_headers()
        # The client may have gone away (a killed worker).
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            handler.wfile.write(data)

    def _reply(self, handler: BaseHTTPRequestHandler, record: Recorded, reply: Reply) -> None:
        if self.provider == "azure":
            reply = azure_dressed(reply, len(self.requests))
        record.status = reply.status
        self._send(handler, reply.status, reply.payload, reply.headers)

    def _refuse(
        self, handler: BaseHTTPRequestHandler, record: Recorded, close: bool, status: int
    ) -> None:
        """Answer as a server that is down: a bare error, or no answer at all."""
        if close:
            handler.close_connection = True
            return
        message = "The server is unavailable; try again later."
        if self.provider == "vllm-thinking":
            reply = vllm_error(status, message)
        else:
            reply = openai_error(status, message, None, None)
        self._reply(handler, record, Reply(status, reply.payload))

    def _route(
        self, handler: BaseHTTPRequestHandler, body: dict[str, Any]
    ) -> tuple[str, Any] | Reply:
        """(mode, model name) of a request, or the error answer of a wrong path or key."""
        if self.provider != "azure":
            if handler.path != "/v1/chat/completions":
                return Reply(404, {"error": {"message": "not found"}})
            return self.provider, body.get("model")
        where = urlsplit(handler.path)
        return azure_route(
            where.path, where.query, handler.headers, body, self.deployments, self.api_key
        )

    def _model(self, mode: str) -> Model:
        return Model(
            mode=mode,
            answer=self.answer,
            reasoning_tokens=self.reasoning_tokens,
            thinking_tokens=self.thinking_tokens,
            reasoning_field=self.reasoning_field,
            think_in_content=self.think_in_content,
            supports_n=self.supports_n,
            sampling=self.sampling,
            flip_share=self.flip_share,
        )

    @contextlib.contextmanager
    def _slot(self, record: Recorded) -> Iterator[None]:
        """Hold one of the ``capacity`` slots (waiting in line for it) while serving."""
        with self._slots if self._slots is not None else contextlib.nullcontext():
            with self._lock:
                record.served = time.monotonic()
                self._serving += 1
                self.max_serving = max(self.max_serving, self._serving)
            try:
                yield
            finally:
                with self._lock:
                    self._serving -= 1

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        record = Recorded(
            body=body, headers=dict(handler.headers), started=time.monotonic(), path=handler.path
        )
        with self._lock:
            self.requests.append(record)
            arrival = len(self.requests)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            down = self._down
            failure = self._failures.popleft() if self._failures and down is None else None
        try:
            if down is not None:
                self._refuse(handler, record, *down)
                return
            route = self._route(handler, body)
            if isinstance(route, Reply):
                self._reply(handler, record, route)
                return
            with self._slot(record):
                if self.delay:
                    time.sleep(self.delay)
                if failure is not None:
                    self._fail(handler, record, failure)
                    return
                self._answer(handler, record, route, arrival)
        finally:
            with self._lock:
                self._in_flight -= 1
                record.finished = time.monotonic()

    def _fail(self, handler: BaseHTTPRequestHandler, record: Recorded, failure: tuple) -> None:
        status, retry_after, location = failure
        headers = [("Retry-After", retry_after)] if retry_after is not None else []
        if location:
            headers.append(("Location", location))
        self._reply(
            handler, record, Reply(status, {"error": {"message": "try later"}}, tuple(headers))
        )

    def _answer(
        self,
        handler: BaseHTTPRequestHandler,
        record: Recorded,
        route: tuple[str, Any],
        arrival: int,
    ) -> None:
        body = record.body
        images = sum(
            1
            for m in body["messages"]
            if isinstance(m["content"], list)
            for p in m["content"]
            if p.get("type") == "image_url"
        )
        mode, model = route
        call = Call(body, record.text(), images, model, len(self.requests), arrival)
        self._reply(handler, record, complete(self._model(mode), call))
