"""Kubernetes Events for what Muster does, on PodGroups, their Jobs and member pods.

Users look at `kubectl describe` first; every transition of a gang is told there, on
the PodGroup and on the Job that owns it, in the words of the condition it changed.
A failure to post an event, of whatever kind, is logged and otherwise ignored: events
are a courtesy, never a reason to stop scheduling. A replica that cannot prove it
still leads posts none (the client would refuse them anyway).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from muster.api.times import rfc3339
from muster.operator.kube import JsonObject, Kube, KubeError

logger = logging.getLogger(__name__)

COMPONENT = "muster"
NORMAL = "Normal"
WARNING = "Warning"


def reference(obj: Mapping[str, Any]) -> JsonObject:
    """An ObjectReference to a full object."""
    metadata = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "namespace": metadata.get("namespace", ""),
        "name": metadata.get("name", ""),
        "uid": metadata.get("uid", ""),
    }


def owner_references(obj: Mapping[str, Any], kind: str) -> list[JsonObject]:
    """ObjectReferences to the owners of an object that are of one kind (e.g. its Job)."""
    metadata = obj.get("metadata") or {}
    return [
        {
            "apiVersion": owner.get("apiVersion", ""),
            "kind": owner.get("kind", ""),
            "namespace": metadata.get("namespace", ""),
            "name": owner.get("name", ""),
            "uid": owner.get("uid", ""),
        }
        for owner in metadata.get("ownerReferences") or []
        if owner.get("kind") == kind
    ]


class EventRecorder:
    """Posts core/v1 Events."""

    def __init__(
        self, kube: Kube, *, instance: str, still_leading: Callable[[], bool] = lambda: True
    ) -> None:
        self.kube = kube
        self.instance = instance
        self.still_leading = still_leading

    async def record(self, involved: JsonObject, kind: str, reason: str, message: str) -> None:
        if not self.still_leading():
            logger.debug("not leading: event %s on %s not recorded", reason, involved)
            return
        namespace = involved.get("namespace") or "default"
        now = rfc3339(time.time())
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{involved.get('name', 'muster')}.{uuid.uuid4().hex[:16]}",
                "namespace": namespace,
            },
            "involvedObject": involved,
            "reason": reason,
            "message": message[:1024],
            "type": kind,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self.kube.request("POST", f"/api/v1/namespaces/{namespace}/events", body=event)
        except (KubeError, ValueError) as error:
            logger.warning("could not record event %s on %s: %s", reason, involved, error)
