"""Writes the PodGroup status the engine computed (the engine's plan tells its
transitions as events, after the write).

The one place that writes `status` of PodGroups. The write replaces the whole status
(an update of the status subresource), so a plan that shrinks never keeps stale
entries the way a merge patch would, and it carries the resourceVersion the status was
computed from: if the PodGroup changed meanwhile the API server answers 409 Conflict
and nothing is written. The loop and the estimate writer both write here, so writes
of one group take turns: a write that waited for another finds the cache newer than
the copy it was computed from, and is not sent at all, since its conflict is certain
(both writers sending at once cost a PUT and a GET for each 409, more than one a
second at 5,000 nodes). After a conflict, or a failure that leaves unknown whether
the write happened (a timeout), the PodGroup is read again before the next cycle
plans on it. The answer of the write goes straight into the cache, so the next cycle
already sees the plan it recorded (its reservations) even before the watch delivers
it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from muster.api.keys import GroupKey, resource_version
from muster.client.kube import Kube, KubeError
from muster.client.paths import POD_GROUPS, namespaced
from muster.operator.intake.cache import LiveCache
from muster.scheduler import needs_write

logger = logging.getLogger(__name__)


class Turns:
    """One holder at a time per key; no lock is kept for a key nobody holds or awaits."""

    def __init__(self) -> None:
        self._locks: dict[GroupKey, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def of(self, key: GroupKey) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


class StatusWriter:
    """Conditional status writes for PodGroups."""

    def __init__(self, kube: Kube, cache: LiveCache) -> None:
        self.kube = kube
        self.cache = cache
        self.turns = Turns()

    async def write(self, key: GroupKey, desired: Mapping[str, Any], *, version: str) -> bool:
        """Bring the group's status to `desired`, computed from `version`; False when it
        was not written (computed from an older copy than the cache's, or refused: the
        group is then read again)."""
        async with self.turns.of(key):
            pod_group = self.cache.pod_groups.get(key)
            if pod_group is None:
                return False
            before: Mapping[str, Any] = pod_group.get("status") or {}
            if not needs_write(before, desired):
                return True
            if resource_version(pod_group) != version:
                return False  # computed from an older copy: the API server would refuse it
            try:
                updated = await self.kube.request(
                    "PUT",
                    f"{namespaced(POD_GROUPS, *key)}/status",
                    body={**pod_group, "status": dict(desired)},
                )
            except (KubeError, OSError) as error:
                logger.warning("could not write the status of PodGroup %s: %s", key, error)
                await self.reread(key)
                return False
            self.cache.apply_pod_group(updated)
            return True

    async def reread(self, key: GroupKey) -> None:
        """Read the group again: the next cycle must plan on what is really stored."""
        try:
            fresh = await self.kube.request("GET", namespaced(POD_GROUPS, *key))
        except (KubeError, OSError) as error:
            logger.warning("could not read PodGroup %s again: %s", key, error)
            return
        self.cache.apply_pod_group(fresh)
