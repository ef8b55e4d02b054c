"""OneAhead: one call in flight on a background thread."""

from __future__ import annotations

import threading

import pytest

from core.background import OneAhead


def test_results_come_back_with_the_next_call_and_at_close():
    worker = OneAhead("test")
    assert worker.submit(lambda x: x * 2, 1) is None  # nothing before it
    assert worker.submit(lambda x: x * 2, 5) == 2
    assert worker.close() == 10
    assert worker.close() is None  # closing again is harmless


def test_at_most_one_call_in_flight():
    started, release = threading.Event(), threading.Event()
    order: list[str] = []

    def slow() -> str:
        started.set()
        release.wait(5)
        order.append("slow")
        return "slow"

    worker = OneAhead("test")
    worker.submit(slow)
    started.wait(5)
    second = threading.Thread(target=lambda: order.append(worker.submit(order.append, "next")))
    second.start()
    second.join(0.2)
    assert second.is_alive() and order == []  # the second submit waits for the first call
    release.set()
    second.join(5)
    worker.close()
    assert order == ["slow", "slow", "next"]


def test_an_error_is_raised_by_the_next_submit_or_by_close():
    def fail() -> None:
        raise ValueError("broken batch")

    worker = OneAhead("test")
    worker.submit(fail)
    with pytest.raises(ValueError, match="broken batch"):
        worker.submit(lambda: None)
    worker.submit(fail)
    with pytest.raises(ValueError, match="broken batch"):
        worker.close()
