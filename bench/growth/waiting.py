"""Gangs that wait through a whole burst: the queue every cycle of it carries.

A team's reserved pool of nodes (``POOL_NODES`` of the cluster, labelled) is full: one
long-running pod takes every GPU of each pool node. Behind it queue ``count`` gang Jobs
of that team, each a pair of whole-node workers pinned to the pool (a node selector) at
a priority below everyone else's (a PriorityClass of their own, so nothing they could
preempt): none of them can start while the burst runs, and every one is in the engine's
queue at every cycle. They sit in a namespace of their own, so the burst's watches and
Timeline never see them; the pool takes under 2% of the default cluster's GPUs, so the
burst meets almost the room it has alone.

`setup` returns the two hooks bench/e2e/run.py's runner takes (`Setup.before_burst`,
`Setup.after_settle`): the first creates all of it and returns once the operator has
refused every waiting gang at least once and written its Events about them, the second
counts the waiting pods that were bound after all (the runs expect none).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.common.apiclient import ApiClient, create_namespace
from bench.e2e.observe import scheduled_condition
from bench.e2e.workload import GPU, GangJob, job_manifest
from muster.api.constants import API_VERSION, POD_GROUP_PLURAL, REASON_UNSCHEDULABLE

NAMESPACE = "bench-waiting"
POOL_LABEL = "bench.muster.dev/pool"
POOL = "reserved"
POOL_NODES = 8
PRIORITY_CLASS = "bench-backlog"
PAIR = 2  # workers per waiting gang
HOLD = "24h"
OCCUPANT = "occupant-"  # the name of each pool node's occupant pod, before the node's

Hook = Callable[[ApiClient], Awaitable[dict[str, Any]]]


def setup(count: int, *, gpus_per_node: int, ready_timeout_s: float) -> tuple[Hook, Hook]:
    """The hooks that put ``count`` waiting gangs before the burst and check them after."""

    async def before_burst(api: ApiClient) -> dict[str, Any]:
        start = time.monotonic()
        await create_namespace(api, NAMESPACE)
        await _fill_pool(api, gpus_per_node)
        await _submit(api, count, gpus_per_node)
        await _until_refused(api, count, deadline=start + ready_timeout_s)
        await _until_told(api, deadline=start + ready_timeout_s)
        return {"waiting_gangs": count, "waiting_set_up_in_s": round(time.monotonic() - start, 1)}

    async def after_settle(api: ApiClient) -> dict[str, Any]:
        pods = await api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")
        started = [pod for pod in pods.get("items") or [] if _is_waiting_gang_pod(pod)]
        return {"waiting_pods_bound": sum(bool(pod["spec"].get("nodeName")) for pod in started)}

    return before_burst, after_settle


async def _fill_pool(api: ApiClient, gpus_per_node: int) -> None:
    """Label the pool's nodes and put one pod taking all their GPUs on each, running."""
    nodes = await api.request("GET", "/api/v1/nodes")
    names = sorted(node["metadata"]["name"] for node in nodes["items"])[:POOL_NODES]
    for name in names:
        patch = {"metadata": {"labels": {POOL_LABEL: POOL}}}
        await api.request(
            "PATCH",
            f"/api/v1/nodes/{name}",
            patch,
            content_type="application/merge-patch+json",
        )
        await api.create(f"/api/v1/namespaces/{NAMESPACE}/pods", _occupant(name, gpus_per_node))
    await api.create("/apis/scheduling.k8s.io/v1/priorityclasses", _priority_class())
    while True:
        pods = await api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")
        running = [p for p in pods["items"] if p.get("status", {}).get("phase") == "Running"]
        if len(running) >= len(names):
            return
        await asyncio.sleep(1)


def _occupant(node: str, gpus: int) -> dict[str, Any]:
    """A long-running pod holding all of ``node``'s GPUs (placed there by name)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{OCCUPANT}{node}", "namespace": NAMESPACE},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.invalid/worker:bench",
                    "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
                }
            ],
        },
    }


def _priority_class() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": PRIORITY_CLASS},
        "value": -100,
        "preemptionPolicy": "Never",
        "description": "the benchmark's backlog: below every other pod",
    }


def waiting_manifest(index: int, gpus_per_node: int) -> dict[str, Any]:
    """The index-th waiting gang: a Muster gang of two whole-node workers in the pool."""
    job = GangJob(
        name=f"waiting-{index:05d}", size=PAIR, gpus_per_pod=gpus_per_node, topology_key=None
    )
    manifest = job_manifest(job, "muster", namespace=NAMESPACE, hold=HOLD)
    pod_spec = manifest["spec"]["template"]["spec"]
    pod_spec["nodeSelector"] = {POOL_LABEL: POOL}
    pod_spec["priorityClassName"] = PRIORITY_CLASS
    return manifest


async def _submit(api: ApiClient, count: int, gpus_per_node: int) -> None:
    limit = asyncio.Semaphore(8)
    path = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs"

    async def create(index: int) -> None:
        async with limit:
            await api.create(path, waiting_manifest(index, gpus_per_node))

    await asyncio.gather(*(create(index) for index in range(count)))


async def _until_refused(api: ApiClient, count: int, *, deadline: float) -> None:
    """Wait until the operator has told every waiting gang it does not fit."""
    path = f"/apis/{API_VERSION}/namespaces/{NAMESPACE}/{POD_GROUP_PLURAL}"
    while True:
        listing = await api.request("GET", path)
        refused = sum(
            scheduled_condition(group).get("reason") == REASON_UNSCHEDULABLE
            for group in listing.get("items") or []
        )
        if refused >= count:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{refused} of {count} waiting gangs refused before the deadline")
        await asyncio.sleep(5)


async def _until_told(api: ApiClient, *, deadline: float, quiet_s: float = 10.0) -> None:
    """Wait until the operator's Events about the waiting gangs are written: they trail
    the statuses, and the burst's requests must not count them."""
    written = -1
    while True:
        # A list of one item still says how many remain: a count without the list.
        page = await api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/events?limit=1")
        now = len(page.get("items") or []) + page["metadata"].get("remainingItemCount", 0)
        if now == written or time.monotonic() > deadline:
            return
        written = now
        await asyncio.sleep(quiet_s)


def _is_waiting_gang_pod(pod: dict[str, Any]) -> bool:
    return not pod["metadata"]["name"].startswith(OCCUPANT)
