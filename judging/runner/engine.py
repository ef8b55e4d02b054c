"""Runs the calls of a judge run on an asyncio loop in a thread of its own.

The caller (a command or a Celery job, in Django's synchronous world) starts the engine, reads
each answer from ``answers`` as it comes and stores it, and may stop the engine: ``stop_starting``
lets the calls in flight finish and starts no new one, as the engine itself does once the answered
calls used ``budget_tokens``; ``abort`` cancels
the calls in flight too (a cancel, a lost lease). Every answer is parsed here by the published
rule from the visible text (never the thinking); an answer cut at the token budget is
truncated (asked once more with the larger budget when one is set), and an unparsed one goes to
the verifier when there is one.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from judging.parsing import parse_judge_output
from judging.runner.adapt import Adaptation
from judging.runner.client import CallOutcome, ClientSettings, JudgeClient
from judging.runner.requests import GenerationSettings, RowCall, verdict_in_row_terms
from judging.verifier import verifier_choice, verifier_prompt

DIRECT, VERIFIER, UNPARSED, FAILED, TRUNCATED = (
    "direct",
    "verifier",
    "unparsed",
    "failed",
    "truncated",
)


@dataclass(frozen=True)
class Task:
    """One call to make, with its cache key."""

    key: str
    call: RowCall


@dataclass(frozen=True)
class VerifierSpec:
    """The verifier: another judge asked to read the verdict of an unparsed output."""

    client: ClientSettings
    generation: GenerationSettings


@dataclass
class Answer:
    """The outcome of one task: the call, its verdict in the row's terms and how it was read."""

    task: Task
    outcome: CallOutcome
    verdict: str | None
    parse_method: str
    verifier: CallOutcome | None = None


def read_verdict(text: str, order: str) -> str | None:
    """The verdict of an output, by the published parser, mapped back to the row's A and B."""
    return verdict_in_row_terms(parse_judge_output(text), order)


def verifier_body(output: str, settings: GenerationSettings) -> dict[str, Any]:
    """The verifier's request: which response do the output's last lines prefer?"""
    text = verifier_prompt(output)
    return {**settings.body_fields(1), "messages": [{"role": "user", "content": text}]}


def larger_budget(body: dict[str, Any], cap: int | None) -> dict[str, Any] | None:
    """``body`` with its token budget raised to ``cap`` (None when the cap is no larger)."""
    budget = body.get("max_tokens")
    if not cap or not isinstance(budget, int) or cap <= budget:
        return None
    return {**body, "max_tokens": cap}


class Engine:
    """The calls of ``tasks`` with at most ``client.concurrency`` in flight."""

    def __init__(
        self,
        tasks: Iterable[Task],
        *,
        make_body: Callable[[Task], dict[str, Any]],
        client: ClientSettings,
        verifier: VerifierSpec | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        budget_tokens: int | None = None,
        retry_max_tokens: int | None = None,
    ) -> None:
        self._budget = budget_tokens
        self._retry_max_tokens = retry_max_tokens
        #: What the client learnt of the server's refused parameters (read after the run).
        self.adaptations: list[Adaptation] = []
        #: Tokens used by the calls answered so far (prompt and completion, verifier included).
        self.tokens = 0
        self._tasks: Iterator[Task] = iter(tasks)
        self._make_body = make_body
        self._client = client
        self._verifier = verifier
        self._transport = transport
        self._lock = threading.Lock()
        self._graceful = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._workers: list[asyncio.Task] = []
        self._thread = threading.Thread(target=self._run, name="judge-runner", daemon=True)
        self.answers: queue.Queue[Answer] = queue.Queue()
        self.error: BaseException | None = None

    def start(self) -> Engine:
        """Start the calls in the background."""
        self._thread.start()
        return self

    def running(self) -> bool:
        """True while calls may still come in."""
        return self._thread.is_alive()

    def stop_starting(self) -> None:
        """Start no new call; the calls in flight finish and are answered."""
        self._graceful.set()

    def abort(self) -> None:
        """Start no new call and cancel those in flight (their answers are lost)."""
        self._graceful.set()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(lambda: [w.cancel() for w in self._workers])

    def join(self, timeout: float | None = None) -> None:
        """Wait for the background thread."""
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # surfaced to the caller, which re-raises it
            self.error = exc

    @property
    def budget_reached(self) -> bool:
        """True once the answered calls used the token budget (no new call starts)."""
        return bool(self._budget) and self.tokens >= self._budget

    def _next(self) -> Task | None:
        if self._graceful.is_set() or self.budget_reached:
            return None
        with self._lock:
            return next(self._tasks, None)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        async with JudgeClient(self._client, transport=self._transport) as client:
            verifier = (
                JudgeClient(self._verifier.client, transport=self._transport)
                if self._verifier
                else None
            )
            if verifier is not None:
                await verifier.__aenter__()
            self.adaptations = client.adaptations
            try:
                self._workers = [
                    asyncio.create_task(self._work(client, verifier))
                    for _ in range(client.pool.capacity)
                ]
                await asyncio.gather(*self._workers, return_exceptions=True)
                for worker in self._workers:
                    if not worker.cancelled() and worker.exception() is not None:
                        raise worker.exception()  # type: ignore[misc]
            finally:
                if verifier is not None:
                    await verifier.__aexit__(None, None, None)

    async def _work(self, client: JudgeClient, verifier: JudgeClient | None) -> None:
        while (task := self._next()) is not None:
            try:
                body = self._make_body(task)
            except Exception as exc:  # an unreadable image, say: this row fails, not the run
                outcome = CallOutcome(error=f"the request could not be built: {exc}")
                self.answers.put(Answer(task, outcome, None, FAILED))
                continue
            outcome = await client.complete(body)
            if outcome.truncated and (bigger := larger_budget(body, self._retry_max_tokens)):
                first = outcome
                outcome = await client.complete(bigger)  # once, with the larger budget
                outcome.prompt_tokens += first.prompt_tokens
                outcome.completion_tokens += first.completion_tokens
                outcome.attempts += first.attempts
            answer = await self._read(task, outcome, verifier)
            self.tokens += outcome.prompt_tokens + outcome.completion_tokens
            if answer.verifier is not None:
                self.tokens += answer.verifier.prompt_tokens + answer.verifier.completion_tokens
            self.answers.put(answer)

    async def _read(self, task: Task, outcome: CallOutcome, verifier: JudgeClient | None) -> Answer:
        if not outcome.ok:
            return Answer(task, outcome, None, FAILED)
        if outcome.truncated:
            return Answer(task, outcome, None, TRUNCATED)
        verdict = read_verdict(outcome.visible, task.call.order)
        if verdict is not None:
            return Answer(task, outcome, verdict, DIRECT)
        if outcome.finish_reason == "length":
            return Answer(task, outcome, None, TRUNCATED)
        if verifier is None or self._verifier is None:
            return Answer(task, outcome, None, UNPARSED)
        body = verifier_body(outcome.visible, self._verifier.generation)
        checked = await verifier.complete(body)
        choice = verifier_choice(checked.visible) if checked.ok else None
        verdict = verdict_in_row_terms(choice, task.call.order)
        return Answer(task, outcome, verdict, VERIFIER if verdict else UNPARSED, checked)
