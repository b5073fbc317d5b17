"""Every Workload of the cluster, kept by a watch on every replica, for admission.

Admission checks a new PodGroup's ``workloadRef`` on whichever replica the API
server calls, so each replica keeps its own copy (as it does of PriorityClasses)
and a PodGroup is admitted without an API call. A lookup the copy cannot answer
well goes to the API server (see :mod:`muster.webhooks.workloads`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.api.keys import object_key
from muster.api.references import referable_part
from muster.api.wire import JsonObject
from muster.client.kube import Kube
from muster.client.objects import get_or_none
from muster.client.paths import WORKLOADS, namespaced


class WorkloadStore:
    """An informer sink of Workloads that admission can look up, cached or live."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.by_key: dict[tuple[str, str], Mapping[str, Any]] = {}

    def upsert(self, obj: JsonObject) -> bool:
        self.by_key[object_key(obj)] = referable_part(obj)
        return False

    def remove(self, obj: JsonObject) -> bool:
        self.by_key.pop(object_key(obj), None)
        return False

    async def cached(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.by_key.get((namespace, name))

    async def live(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return await get_or_none(self.kube, namespaced(WORKLOADS, namespace, name))
