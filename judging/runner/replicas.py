"""Spreading one judge's calls over several servers (replicas) of the same model.

Each call goes to the replica with the fewest calls in flight among those with room (at most
``per_replica`` each) and not set aside. A replica that fails (a connection error, a timeout, a
5xx) is set aside with exponential backoff — 1, 2, 4 … up to ``backoff_max`` seconds — while the
others carry on; back from being set aside it is sent one call at a time (while another replica
is sound) until one succeeds, which clears the count. When every replica is set aside, none is
(the calls' own retry backoff paces them); when every usable replica is full, a call waits for a
place.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass
class Replica:
    """One server and what the pool knows of it."""

    url: str
    index: int
    in_flight: int = 0
    failures: int = 0
    aside_until: float = 0.0
    calls: int = 0


class ReplicaPool:
    """The replicas of one run; use ``acquire`` / ``release`` around each request."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        per_replica: int,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not urls:
            raise ValueError("a pool needs at least one server")
        self.replicas = [Replica(url=u, index=i) for i, u in enumerate(urls)]
        self.per_replica = max(1, per_replica)
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._clock = clock
        self._changed: asyncio.Condition | None = None

    @property
    def capacity(self) -> int:
        """Calls in flight at most, over every replica."""
        return self.per_replica * len(self.replicas)

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:  # made on the loop that uses it
            self._changed = asyncio.Condition()
        return self._changed

    def pick(self, avoid: Replica | None = None) -> Replica | None:
        """The replica a call would go to now (None when none has room)."""
        now = self._clock()
        healthy = [r for r in self.replicas if r.aside_until <= now] or self.replicas
        open_ = [r for r in healthy if r.in_flight < self.room(r) and r is not avoid]
        if not open_ and avoid is not None:
            return self.pick()
        return min(open_, key=lambda r: (r.in_flight, r.calls, r.index), default=None)

    def room(self, replica: Replica) -> int:
        """Calls ``replica`` may hold at once: one while it is on probation (back from being set
        aside, no success since) and another replica is sound, else ``per_replica``."""
        sound_other = any(r.failures == 0 for r in self.replicas if r is not replica)
        return 1 if replica.failures and sound_other else self.per_replica

    def _next_change(self) -> float | None:
        now = self._clock()
        later = [r.aside_until - now for r in self.replicas if r.aside_until > now]
        return min(later) if later else None

    async def acquire(self, avoid: Replica | None = None) -> Replica:
        """Wait for a replica with room (another than ``avoid`` when one has room)."""
        changed = self._condition()
        async with changed:
            while (replica := self.pick(avoid)) is None:
                wait = self._next_change()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), timeout=wait)
            replica.in_flight += 1
            replica.calls += 1
            return replica

    async def release(self, replica: Replica, *, failed: bool = False) -> None:
        """The call on ``replica`` ended; a failure sets the replica aside for a while."""
        changed = self._condition()
        async with changed:
            replica.in_flight -= 1
            if failed:
                replica.failures += 1
                delay = min(self._backoff_max, self._backoff_base * 2 ** (replica.failures - 1))
                replica.aside_until = self._clock() + delay
            else:
                replica.failures = 0
                replica.aside_until = 0.0
            changed.notify_all()

    def healthy_other(self, replica: Replica) -> bool:
        """True when another replica is not set aside (a retry can go there at once)."""
        now = self._clock()
        return any(r is not replica and r.aside_until <= now for r in self.replicas)
