"""When the next scheduling cycle starts: soon after a change, or at the latest on resync.

Events arrive in bursts (a Job creates all its pods within milliseconds), so a change
does not start a cycle at once: the trigger waits `debounce` seconds to gather the
rest of the burst into the same cycle. Without any change a cycle still runs every
`resync` seconds, and the loop may ask to be woken at a known time (a backoff ending,
a release deadline).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class Trigger:
    """A debounced "something changed" flag with a periodic fallback and wake-up times."""

    def __init__(
        self, *, debounce: float, resync: float, clock: Callable[[], float] = time.time
    ) -> None:
        """`clock`: the scale of wake-up times, the loop's clock."""
        self.debounce = debounce
        self.resync = resync
        self.clock = clock
        self._changed = asyncio.Event()
        self._wake_at: float | None = None

    def poke(self) -> None:
        """Something relevant changed."""
        self._changed.set()

    def wake_at(self, moment: float) -> None:
        """Make sure a cycle runs no later than `moment` (on `clock`'s scale)."""
        if self._wake_at is None or moment < self._wake_at:
            self._wake_at = moment

    async def wait(self) -> None:
        """Return when the next cycle should start."""
        timeout = self.resync
        if self._wake_at is not None:
            timeout = max(0.0, min(timeout, self._wake_at - self.clock()))
        try:
            # asyncio.timeout, not wait_for: on Python 3.11, wait_for can swallow a
            # cancellation that arrives as the event is set, and the loop never stops.
            async with asyncio.timeout(timeout):
                await self._changed.wait()
            await asyncio.sleep(self.debounce)
        except TimeoutError:
            pass
        if self._wake_at is not None and self._wake_at <= self.clock():
            self._wake_at = None
        self._changed.clear()
