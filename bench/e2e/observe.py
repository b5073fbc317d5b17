"""Watches that feed a Timeline as events arrive, each stamped with its arrival time.

Timestamps are taken on arrival with ``time.monotonic()``: the API server's own
timestamps have a resolution of one second, too coarse for gangs bound in tens of
milliseconds.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.common.apiclient import ApiClient
from bench.common.timeline import Timeline
from bench.e2e import kueue
from muster.api.constants import (
    API_VERSION,
    CONDITION_SCHEDULED,
    POD_GROUP_PLURAL,
    REASON_UNSCHEDULABLE,
)


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
    """Muster's admissions: a PodGroup (named after its Job) with PodGroupScheduled=True;
    its refusals: the same condition False with reason Unschedulable."""
    path = f"/apis/{API_VERSION}/namespaces/{namespace}/{POD_GROUP_PLURAL}"
    async for kind, pod_group in api.watch(path, listed):
        job = pod_group["metadata"]["name"]
        scheduled = {} if kind == "DELETED" else scheduled_condition(pod_group)
        timeline.observe_gang(
            job,
            scheduled.get("status") == "True",
            time.monotonic(),
            refused=scheduled.get("reason") == REASON_UNSCHEDULABLE,
        )


async def follow_kueue_workloads(
    api: ApiClient, namespace: str, timeline: Timeline, listed: asyncio.Event
) -> None:
    """Kueue's admissions and evictions, from its Workloads (one per Job, owned by it)."""
    path = f"/apis/{kueue.API_VERSION}/namespaces/{namespace}/{kueue.WORKLOADS}"
    async for kind, workload in api.watch(path, listed):
        view = kueue.WorkloadView.of(workload)
        if view is not None:
            gone = kind == "DELETED"
            timeline.observe_queue(
                view.job,
                admitted=view.admitted and not gone,
                evicted=view.evicted and not gone,
                evicted_reason=view.evicted_reason,
                topology_assigned=view.topology_assigned and not gone,
                at=time.monotonic(),
            )


def scheduled_condition(pod_group: dict[str, Any]) -> dict[str, Any]:
    """The PodGroupScheduled condition, or {} before the operator wrote one."""
    for condition in pod_group.get("status", {}).get("conditions", []):
        if condition.get("type") == CONDITION_SCHEDULED:
            return dict(condition)
    return {}
