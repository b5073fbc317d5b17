"""Writes PodGroup status when it changes, and tells each transition as an event.

The one place that writes `status` of PodGroups. The write replaces the whole status
(a JSON patch `add /status`), so a plan that shrinks never keeps stale entries the
way a merge patch would. The answer of the write goes straight into the cache, so the
next cycle already sees the plan it recorded (its reservations) even before the
watch delivers it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from muster.api.constants import (
    API_VERSION,
    CONDITION_DISRUPTION_TARGET,
    CONDITION_SCHEDULED,
    POD_GROUP_PLURAL,
    REASON_SCHEDULED,
)
from muster.operator.cache import LiveCache
from muster.operator.events import NORMAL, WARNING, EventRecorder, owner_references, reference
from muster.operator.kube import JSON_PATCH, Kube, KubeError
from muster.operator.status import StatusChange, condition, desired_status, needs_write
from muster.scheduler.results import GroupKey

logger = logging.getLogger(__name__)


def pod_group_path(key: GroupKey) -> str:
    return f"/apis/{API_VERSION}/namespaces/{key.namespace}/{POD_GROUP_PLURAL}/{key.name}"


def timestamp(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StatusWriter:
    """Coalesced status writes plus transition events for PodGroups."""

    def __init__(self, kube: Kube, cache: LiveCache, events: EventRecorder) -> None:
        self.kube = kube
        self.cache = cache
        self.events = events

    async def write(self, key: GroupKey, change: StatusChange, *, now: float) -> bool:
        """Bring the group's status to what `change` asks; False when it could not be written."""
        pod_group = self.cache.pod_groups.get(key)
        if pod_group is None:
            return False
        members = self.cache.members.get(key, {}).values()
        desired = desired_status(pod_group, members, change, now=timestamp(now))
        before: Mapping[str, Any] = pod_group.get("status") or {}
        if not needs_write(before, desired):
            return True
        try:
            updated = await self.kube.request(
                "PATCH",
                f"{pod_group_path(key)}/status",
                body=[{"op": "add", "path": "/status", "value": desired}],
                content_type=JSON_PATCH,
            )
        except (KubeError, OSError) as error:
            logger.warning("could not write the status of PodGroup %s: %s", key, error)
            return False
        self.cache.apply_pod_group(updated)
        await self._announce(updated, before, desired)
        return True

    async def _announce(
        self, pod_group: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any]
    ) -> None:
        targets = [reference(pod_group), *owner_references(pod_group, "Job")]
        for kind in (CONDITION_SCHEDULED, CONDITION_DISRUPTION_TARGET):
            old, new = condition(before, kind), condition(after, kind)
            if new is None or not _transitioned(old, new):
                continue
            reason = str(new.get("reason"))
            message = str(new.get("message") or reason)
            event_type = NORMAL if reason == REASON_SCHEDULED else WARNING
            for target in targets:
                await self.events.record(target, event_type, reason, message)


def _transitioned(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    if old is None:
        return True
    return (old.get("status"), old.get("reason")) != (new.get("status"), new.get("reason"))
