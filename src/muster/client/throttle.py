"""A client-side limit on the request rate to the API server (a token bucket).

A burst of work (a 1,000-pod gang released at once, every informer relisting after
an API server restart) must not turn into a burst of requests large enough to trip
the server's own flow control, which would throttle every other client with us.
Like client-go's `--kube-api-qps`/`--kube-api-burst`: up to `burst` requests at once,
then `qps` per second.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class RateLimiter:
    """Tokens refill at `qps` per second up to `burst`; each request takes one.

    `clock` (monotonic seconds) is the one its waits run on: a test gives the clock of
    its own event loop.
    """

    def __init__(
        self, *, qps: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("a rate limit needs qps > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._updated = clock()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        """Wait for a token; waiters are served in the order they came."""
        async with self._lock:
            now = self.clock()
            self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.qps)
            self._updated = now
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self.qps)
                self._tokens = 1.0
                self._updated = self.clock()
            self._tokens -= 1
