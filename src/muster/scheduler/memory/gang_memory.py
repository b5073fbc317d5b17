"""What the engine remembers of a gang (its memory), kept in `status.lifecycle` so every
reader decides alike.

What the engine must remember between cycles about one gang — how many rollbacks in
a row it has had, until when it backs off, when its release clock started, which
pods preempted for it have still to leave — is written in the PodGroup's status with
the decision that changes it. A restarted operator, `muster simulate` over a dump of
the cluster and `muster explain` therefore read the same memory as the operator that
wrote it, and decide the same way.

Parsing is lenient, like the refusal memory's: a malformed memory is no memory, since
a status Muster wrote itself must never keep a gang out of the queue.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muster.api import podgroup
from muster.api.keys import PodKey
from muster.api.times import timestamp
from muster.scheduler.objects.times import parse_time


@dataclass(frozen=True, slots=True)
class GangMemory:
    """`status.lifecycle` as the engine reads it."""

    rollbacks: int = 0  # rollbacks in a row; back to 0 once the gang binds completely
    backoff_until: float | None = None  # not admitted again before this moment
    release_started: float | None = None  # when the release clock started
    victims: tuple[PodKey, ...] = ()  # pods preempted for it that had not left yet

    def in_backoff(self, now: float) -> bool:
        return self.backoff_until is not None and now < self.backoff_until


NO_MEMORY = GangMemory()


def gang_memory_from(status: Mapping[str, Any]) -> GangMemory:
    """The memory in a PodGroup's status; empty when there is none (or it is malformed)."""
    raw = status.get("lifecycle")
    if not isinstance(raw, Mapping):
        return NO_MEMORY
    rollbacks = raw.get("rollbacks", 0)
    if not isinstance(rollbacks, int) or isinstance(rollbacks, bool) or rollbacks < 0:
        rollbacks = 0
    parts = (str(item).partition("/") for item in raw.get("victims") or [])
    victims = [PodKey(namespace, name) for namespace, _, name in parts if namespace and name]
    return GangMemory(
        rollbacks=rollbacks,
        backoff_until=parse_time(raw.get("backoffUntil")),
        release_started=parse_time(raw.get("releaseStarted")),
        victims=tuple(sorted(victims)),
    )


def to_status(memory: GangMemory) -> dict[str, Any]:
    """`status.lifecycle` as written, through the API's `GangMemory` model; times are
    rounded up to the second, so a backoff never ends early."""
    backoff_until, release_started = memory.backoff_until, memory.release_started
    return podgroup.GangMemory(
        rollbacks=memory.rollbacks,
        backoff_until=None if backoff_until is None else timestamp(math.ceil(backoff_until)),
        release_started=None if release_started is None else timestamp(release_started),
        victims=[str(victim) for victim in memory.victims] or None,
    ).to_manifest()


def backoff_delay(rollbacks: int, *, initial: float, maximum: float) -> float:
    """Exponential, capped: a gang that failed to bind once retries quickly, one that
    keeps failing does not hammer the cluster."""
    return min(maximum, initial * 2.0 ** max(rollbacks - 1, 0))
