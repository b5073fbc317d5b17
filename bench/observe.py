"""Watches that feed a Timeline as events arrive, each stamped with its arrival time.

Timestamps are taken on arrival with ``time.monotonic()``: the API server's own
timestamps have a resolution of one second, too coarse for gangs bound in tens of
milliseconds.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.apiclient import ApiClient
from bench.timeline import Timeline
from muster.api.constants import API_VERSION, CONDITION_SCHEDULED, POD_GROUP_PLURAL


async def follow_pods(
    api: ApiClient, namespace: str, timeline: Timeline, listed: asyncio.Event
) -> None:
    async for kind, pod in api.watch(f"/api/v1/namespaces/{namespace}/pods", listed):
        if kind == "DELETED":
            timeline.forget_pod(pod, time.monotonic())
        else:
            timeline.observe_pod(pod, time.monotonic())


async def follow_muster_gangs(
    api: ApiClient, namespace: str, timeline: Timeline, listed: asyncio.Event
) -> None:
    """Muster's admissions: a PodGroup (named after its Job) with PodGroupScheduled=True."""
    path = f"/apis/{API_VERSION}/namespaces/{namespace}/{POD_GROUP_PLURAL}"
    async for kind, pod_group in api.watch(path, listed):
        job = pod_group["metadata"]["name"]
        timeline.observe_gang(job, kind != "DELETED" and _scheduled(pod_group), time.monotonic())


def _scheduled(pod_group: dict[str, Any]) -> bool:
    return any(
        condition.get("type") == CONDITION_SCHEDULED and condition.get("status") == "True"
        for condition in pod_group.get("status", {}).get("conditions", [])
    )
