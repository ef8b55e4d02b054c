"""A small OpenAI-compatible chat completions server on 127.0.0.1, started inside a test.

Deterministic answers from the request content: the judge prefers the longer response (Response
1 on a tie, a position bias the both-orders mode shows); a question holding ``UNPARSABLE`` gets
an answer without a verdict; the verifier prompt gets the verdict its assessment names. Tests
can make the next requests fail (429 or 500, with a ``Retry-After``), slow every answer down, and
read every request the server got, when, and how many were in flight at once. ``usage`` counts
are derived from the text (one token per four characters, 100 per image).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

IMAGE_TOKENS = 100
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

    def text(self) -> str:
        """The text part of the user message."""
        content = self.body["messages"][0]["content"]
        if isinstance(content, str):
            return content
        return next(p["text"] for p in content if p.get("type") == "text")


def responses_in(text: str) -> dict[str, str]:
    """Response 1 and Response 2 as the prompt shows them."""
    return {number: body.strip() for number, body in _BLOCK.findall(text)}


def default_answer(text: str) -> str:
    """The judge's deterministic answer to a prompt text."""
    if "[Assessment]" in text:
        assessment = text.split("[Assessment]", 1)[1]
        number = "2" if "second" in assessment.lower() else "1"
        return f"Response {number} is better."
    if "UNPARSABLE" in text:
        return "Both responses have merits; I prefer the second one overall."
    found = responses_in(text)
    one, two = found.get("1", ""), found.get("2", "")
    better = "2" if len(two) > len(one) else "1"
    return f"Response {better} covers more.\n**Response {better} is better.**"


@dataclass
class FakeOpenAI:
    """The server; use as a context manager. ``url`` is its OpenAI API root (``.../v1``)."""

    delay: float = 0.0
    answer: Callable[[str], str] = default_answer
    requests: list[Recorded] = field(default_factory=list)
    max_in_flight: int = 0
    _in_flight: int = 0
    _failures: deque = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def fail_next(
        self, status: int, times: int = 1, retry_after: str | None = None, location: str = ""
    ) -> None:
        """Answer the next ``times`` requests with ``status`` (a Retry-After, a Location)."""
        with self._lock:
            for _ in range(times):
                self._failures.append((status, retry_after, location))

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
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
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

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        record = Recorded(body=body, headers=dict(handler.headers), started=time.monotonic())
        with self._lock:
            self.requests.append(record)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            failure = self._failures.popleft() if self._failures else None
        try:
            if handler.path != "/v1/chat/completions":
                record.status = 404
                self._send(handler, 404, {"error": {"message": "not found"}})
                return
            if self.delay:
                time.sleep(self.delay)
            if failure is not None:
                status, retry_after, location = failure
                record.status = status
                headers = [("Retry-After", retry_after)] if retry_after is not None else []
                if location:
                    headers.append(("Location", location))
                self._send(handler, status, {"error": {"message": "try later"}}, headers)
                return
            text = record.text()
            images = sum(
                1
                for m in body["messages"]
                if isinstance(m["content"], list)
                for p in m["content"]
                if p.get("type") == "image_url"
            )
            answer = self.answer(text)
            record.status = 200
            self._send(
                handler,
                200,
                {
                    "id": f"chatcmpl-{len(self.requests)}",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": answer},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": len(text) // 4 + IMAGE_TOKENS * images,
                        "completion_tokens": len(answer) // 4,
                        "total_tokens": len(text) // 4 + IMAGE_TOKENS * images + len(answer) // 4,
                    },
                },
            )
        finally:
            with self._lock:
                self._in_flight -= 1
                record.finished = time.monotonic()
