"""The shared Redis cache, degraded while Redis cannot be reached instead of failing the request.

Django's ``RedisCache`` raises ``ConnectionError`` from every call while Redis is down, so every
page reading its session from the cache (``cached_db``) answered 500. Here a call that cannot
reach Redis answers as a miss (``get`` gives the default, ``set`` and ``delete`` store nothing),
so the callers degrade by themselves: sessions are read from the database, API throttles count
nothing, rendered Markdown is rendered again. The outage is logged once per process when it
starts and once when Redis answers again.

While Redis is down, the process tries it again at most every ``retry_seconds`` (an
``OPTIONS`` entry, default 5; the other calls answer at once). Writes that could not reach Redis
(a session saved, or deleted at logout; a throttle count) leave their old value in it: the keys
are remembered and deleted first thing when Redis answers again, so no stale session comes back.
Another process that did not see the outage may still read such a key until this process's next
call reaches Redis.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Errors meaning "Redis cannot be reached" (refused, reset, timed out, still loading its data).
UNREACHABLE = (RedisConnectionError, RedisTimeoutError)
#: Keys written during an outage remembered for deletion; past this the rest age out by TTL.
REMEMBERED_KEYS = 10_000

_MISSING = object()


class Outage:
    """One Redis server's state in this process: reachable, or down since a moment."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.down_since: float | None = None
        self.retry_at = 0.0
        self.retry_seconds = 5.0
        self.unwritten: set[str] = set()
        self.forgotten = 0

    @property
    def down(self) -> bool:
        """True while the last attempt failed."""
        return self.down_since is not None

    def remember(self, keys: Iterable[str]) -> None:
        """Note keys whose write did not reach Redis (deleted there once it answers)."""
        with self.lock:
            for key in keys:
                if len(self.unwritten) < REMEMBERED_KEYS:
                    self.unwritten.add(key)
                else:
                    self.forgotten += 1

    def started(self, exc: BaseException) -> None:
        """Record a failed call; the first one of an outage is logged."""
        with self.lock:
            now = time.monotonic()
            self.retry_at = now + self.retry_seconds
            if self.down_since is not None:
                return
            self.down_since = now
        logger.warning(
            "The shared cache cannot be reached (%s): sessions are read from the database, "
            "API throttles count nothing and rendered text is not kept until it answers again.",
            type(exc).__name__,
        )

    def ended(self, dropped: list[str]) -> None:
        """Record that Redis answers again (``dropped``: the keys deleted there), logged once."""
        with self.lock:
            self.unwritten.difference_update(dropped)
            if self.down_since is None:
                return
            seconds = time.monotonic() - self.down_since
            forgotten = self.forgotten
            self.down_since, self.forgotten = None, 0
        logger.warning(
            "The shared cache answers again after %.0f s; %d entries written meanwhile were "
            "dropped from it%s.",
            seconds,
            len(dropped),
            f" ({forgotten} more expire by themselves)" if forgotten else "",
        )


_outages: dict[str, Outage] = {}
_outages_lock = threading.Lock()


def outage_of(server: str) -> Outage:
    """The process-wide state of ``server`` (cache instances are per thread; this is shared)."""
    with _outages_lock:
        return _outages.setdefault(server, Outage())


class DegradingRedisCacheClient(RedisCacheClient):
    """Django's Redis client whose calls answer as misses while Redis cannot be reached."""

    def __init__(self, servers: list[str], retry_seconds: float = 5.0, **options: Any) -> None:
        super().__init__(servers, **options)
        self.outage = outage_of(servers[0])
        self.outage.retry_seconds = retry_seconds

    def ping(self) -> bool:
        """Ask Redis directly (no degradation): True when it answers."""
        try:
            return bool(self.get_client(write=True).ping())
        except UNREACHABLE:
            return False

    def _reconnect(self) -> None:
        """Try Redis again after an outage: drop the keys written meanwhile, or just ping."""
        client = self.get_client(write=True)
        with self.outage.lock:
            keys = list(self.outage.unwritten)
        if keys:
            client.delete(*keys)
        else:
            client.ping()
        self.outage.ended(keys)

    def _call(self, op: Callable[[], T], fallback: T, writes: Iterable[str] = ()) -> T:
        outage = self.outage
        try:
            if outage.down:
                if time.monotonic() < outage.retry_at:
                    outage.remember(writes)
                    return fallback
                self._reconnect()
            return op()
        except UNREACHABLE as exc:
            outage.started(exc)
            outage.remember(writes)
            return fallback

    def add(self, key: str, value: Any, timeout: int | None) -> bool:
        return self._call(lambda: RedisCacheClient.add(self, key, value, timeout), False, [key])

    def get(self, key: str, default: Any) -> Any:
        return self._call(lambda: RedisCacheClient.get(self, key, default), default)

    def set(self, key: str, value: Any, timeout: int | None) -> None:
        self._call(lambda: RedisCacheClient.set(self, key, value, timeout), None, [key])

    def touch(self, key: str, timeout: int | None) -> bool:
        return self._call(lambda: RedisCacheClient.touch(self, key, timeout), False, [key])

    def delete(self, key: str) -> bool:
        return self._call(lambda: RedisCacheClient.delete(self, key), False, [key])

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        keys = list(keys)
        return self._call(lambda: RedisCacheClient.get_many(self, keys), {})

    def has_key(self, key: str) -> bool:
        return self._call(lambda: RedisCacheClient.has_key(self, key), False)

    def incr(self, key: str, delta: int) -> int:
        result = self._call(lambda: RedisCacheClient.incr(self, key, delta), _MISSING, [key])
        if result is _MISSING:
            raise ValueError(f"Key '{key}' not found.")  # as for a key missing from the cache
        return result

    def set_many(self, data: dict[str, Any], timeout: int | None) -> None:
        self._call(lambda: RedisCacheClient.set_many(self, data, timeout), None, data)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self._call(lambda: RedisCacheClient.delete_many(self, keys), None, keys)

    def clear(self) -> bool:
        return self._call(lambda: RedisCacheClient.clear(self), False)


class DegradingRedisCache(RedisCache):
    """``RedisCache`` answering as a miss while Redis cannot be reached (see the module)."""

    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = DegradingRedisCacheClient

    def ping(self) -> bool:
        """True when Redis answers now."""
        return self._cache.ping()

    @property
    def degraded(self) -> bool:
        """True while this process answers from no cache."""
        return self._cache.outage.down
