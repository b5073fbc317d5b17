"""Exponential backoff with jitter, for everything that retries a request to the API server.

Many clients failing at the same moment (an API server restart drops every watch of
every controller at once) must not come back at the same moment either: each delay
is drawn at random between half and all of the current step ("equal jitter"), and
the step doubles up to a cap, so retries spread out and a long outage costs one
request per client every `maximum` seconds.
"""

from __future__ import annotations

import random

# One generator for all: seeding a new one costs more than a request's own work, and
# every request makes a backoff in case it is retried.
_SHARED = random.Random()


class ExponentialBackoff:
    """Delays of `initial`, doubling up to `maximum`, each jittered; `reset` after success."""

    def __init__(self, *, initial: float, maximum: float, rng: random.Random | None = None) -> None:
        if not 0 < initial <= maximum:
            raise ValueError("backoff needs 0 < initial <= maximum")
        self.initial = initial
        self.maximum = maximum
        self.failures = 0
        self._rng = rng or _SHARED

    def next(self) -> float:
        """The delay before the next attempt, counting one more failure."""
        step = min(self.maximum, self.initial * 2.0 ** min(self.failures, 32))
        self.failures += 1
        return step / 2 + self._rng.uniform(0, step / 2)

    def reset(self) -> None:
        self.failures = 0


def jittered(period: float, factor: float, rng: random.Random | None = None) -> float:
    """`period` stretched by a random fraction of up to `factor` (client-go's wait.Jitter)."""
    return period * (1 + (rng or random).uniform(0, factor))
