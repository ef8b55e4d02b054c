"""One call at a time on one background thread, the caller going on meanwhile."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class OneAhead:
    """Runs calls on one background thread, at most one in flight.

    :meth:`submit` first waits for the call before it (so memory holds one batch), returning
    its result or raising its error, then starts the new one. :meth:`close` waits for the last
    call and stops the thread; it must be called (use it in a ``finally``).
    """

    def __init__(self, name: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: Future[Any] | None = None

    def wait(self) -> Any:
        """The result of the call in flight (None when there is none); its error is raised."""
        if self._pending is None:
            return None
        pending, self._pending = self._pending, None
        return pending.result()

    def submit(self, call: Callable[..., Any], *args: Any) -> Any:
        """Wait for the previous call (its result, or its error raised), then start ``call``."""
        result = self.wait()
        self._pending = self._pool.submit(call, *args)
        return result

    def close(self) -> Any:
        """Wait for the last call (its result, or its error raised) and stop the thread."""
        try:
            return self.wait()
        finally:
            self._pool.shutdown(wait=True)
