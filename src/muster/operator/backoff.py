"""How long a rolled-back gang waits before it may be admitted again.

Exponential, capped, per gang, and forgotten as soon as the gang binds completely:
a gang that failed to bind once (a node went away) retries quickly, one that keeps
failing does not hammer the cluster. Kept in memory only; after a restart every gang
starts from the first delay again, which errs on the side of retrying.
"""

from __future__ import annotations

from muster.scheduler.results import GroupKey


class Backoff:
    """Per-gang exponential delays after rollbacks."""

    def __init__(self, *, initial: float, maximum: float) -> None:
        self.initial = initial
        self.maximum = maximum
        self._failures: dict[GroupKey, int] = {}
        self._until: dict[GroupKey, float] = {}

    def failed(self, key: GroupKey, now: float) -> float:
        """Record a rollback; return the moment the gang may be admitted again."""
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        until = now + min(self.maximum, self.initial * 2.0 ** (failures - 1))
        self._until[key] = until
        return until

    def blocked_until(self, key: GroupKey, now: float) -> float | None:
        until = self._until.get(key)
        return until if until is not None and until > now else None

    def succeeded(self, key: GroupKey) -> None:
        self._failures.pop(key, None)
        self._until.pop(key, None)
