"""Running a coroutine from a test, whatever loop the session already runs.

The browser tests' Playwright keeps an event loop running in the main thread for the whole
session, where ``asyncio.run`` refuses to start another: run the coroutine on a loop of its own
thread instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` on a thread of its own; its result or its exception."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
