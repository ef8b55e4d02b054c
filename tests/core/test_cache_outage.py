"""The shared cache while Redis cannot be reached: misses instead of errors, logged once, and no
stale entry once Redis answers again.

A private Redis server on a free port: stopped (connections refused) or frozen with SIGSTOP
(connections hang until the socket timeout, the data kept for when it thaws).
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterator

import pytest
from django.core.cache import caches

from core.cache import DegradingRedisCache
from tests.core.test_jobs_queue_down import PrivateRedis

pytestmark = pytest.mark.slow

RETRY = 0.5


@pytest.fixture
def server(tmp_path) -> Iterator[PrivateRedis]:
    redis_server = PrivateRedis(tmp_path)
    redis_server.start()
    yield redis_server
    if redis_server.process is not None and redis_server.process.poll() is None:
        os.kill(redis_server.process.pid, signal.SIGCONT)
    redis_server.stop()


@pytest.fixture
def cache(settings, server) -> DegradingRedisCache:
    settings.CACHES = {
        "default": {
            "BACKEND": "core.cache.DegradingRedisCache",
            "LOCATION": f"redis://127.0.0.1:{server.port}/1",
            "KEY_PREFIX": "t",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1, "retry_seconds": RETRY},
        }
    }
    return caches["default"]


def outage_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "core.cache"]


def test_a_stopped_redis_answers_as_an_empty_cache_logged_once(cache, server, caplog):
    cache.set("k", "v1")
    assert cache.get("k") == "v1" and cache.ping() is True
    server.stop()
    caplog.set_level(logging.WARNING, logger="core.cache")
    began = time.monotonic()
    for _ in range(50):
        assert cache.get("k") is None
        assert cache.get("other", "default") == "default"
        cache.set("k", "v2")
        assert cache.add("new", 1) is False
        assert cache.has_key("k") is False
        assert cache.get_many(["k", "other"]) == {}
        assert cache.get_or_set("computed", 7) == 7
        assert cache.delete("k") is False
        with pytest.raises(ValueError):
            cache.incr("counter")
    elapsed = time.monotonic() - began
    assert cache.ping() is False and cache.degraded is True
    # 450 calls, one refused connection: the others answer without trying.
    assert elapsed < 1.0, elapsed
    (line,) = outage_lines(caplog)
    assert line.startswith("The shared cache cannot be reached (ConnectionError): sessions are")
    server.start()
    time.sleep(RETRY)
    assert cache.get("k") is None  # a new, empty server
    cache.set("k", "v3")
    assert cache.get("k") == "v3" and cache.degraded is False
    _, back = outage_lines(caplog)
    assert back.startswith("The shared cache answers again after ")
    # k, new, computed (get_or_set adds), counter: each remembered once.
    assert back.endswith("; 4 entries written meanwhile were dropped from it.")


def test_writes_lost_in_an_outage_are_dropped_when_redis_answers_again(cache, server, caplog):
    """A frozen Redis keeps its data: a session saved or deleted meanwhile must not come back."""
    cache.set("session:alice", {"user": 1})
    cache.set("session:bob", {"user": 2})
    cache.set("untouched", "kept")
    os.kill(server.process.pid, signal.SIGSTOP)
    caplog.set_level(logging.WARNING, logger="core.cache")
    began = time.monotonic()
    cache.set("session:alice", {"user": 1, "changed": True})  # times out after 1 s
    cache.delete("session:bob")  # a logout: answered at once, remembered
    assert cache.get("session:alice") is None
    assert time.monotonic() - began < 2.0
    os.kill(server.process.pid, signal.SIGCONT)
    time.sleep(RETRY)
    # Redis kept the old values; this process deletes the keys it could not write first.
    assert cache.get("session:alice") is None
    assert cache.get("session:bob") is None
    assert cache.get("untouched") == "kept"
    lines = outage_lines(caplog)
    assert lines[0].startswith("The shared cache cannot be reached (TimeoutError)")
    assert lines[1].startswith("The shared cache answers again after")
    assert lines[1].endswith("2 entries written meanwhile were dropped from it.")
    assert len(lines) == 2
