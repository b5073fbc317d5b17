"""Muster's plans against kube-scheduler's allocations, on random gangs claiming GPUs.

Seeded random gang Jobs claim GPUs through three ResourceClaimTemplates (one H100 by
the product attribute; two GPUs of any product; one GPU with at least 60Gi of memory,
a selector on capacity) on eight simulated nodes whose slices publish two to six GPUs
of either product. They run in batches until every gang of the batch is decided (the
batch is then cleared; its claims may still hold devices when the next one starts):
every gang Muster releases must bind exactly where its plan put it, each claim
allocated by kube-scheduler on its pod's node, with no FailedScheduling event and no
rollback (and no partial gang: the gang observer watches throughout). A gang Muster
holds back is confirmed infeasible against the devices the claims of the cluster hold
at that moment: its pods ask alike, so it fits when the nodes' free matching GPUs,
each divided by what a pod asks, add up to it.

A refusal by DynamicResources' PreBind because the pod's claim is gone ("not found",
"got deleted in the meantime") is counted as the pod's lost race with its own
deletion (`failed_scheduling`), not as a refusal. What deletes such pods is the
clearing of a batch: with the API server's audit log on (`cluster.py up --audit`),
the only deleters of this test's pods are the garbage collector, after the test's
own `kubectl delete jobs --all` (its first delete of a pod may meet a conflict and
be retried), KWOK finishing those deletions, and the namespace controller at the
end; of its claims, the resource-claim-controller (the claim made for a pod goes
with the pod) and the garbage collector. Neither Muster nor the Job controller
deletes any. The race: a gang held back in a batch keeps its gated pods, orphaned,
after its Job is deleted and until the garbage collector deletes them, while the
devices of the batch's other gangs are freed; Muster may then admit and release the
orphaned gang, and kube-scheduler meets its claim deleted with its pod. That is the
test's own clearing, not a defect, so the allowance stays.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from devtools.factories import NodePool
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import POD_GROUPS, is_gated
from tests.e2e.test_interpod_differential import (
    clear_batch,
    condition,
    failed_scheduling,
    members,
    rolled_back,
)
from tests.e2e.test_operator_devices import DRIVER, RESOURCE, claiming_job

pytestmark = pytest.mark.e2e

SEED = 20371
NODES = 8
GANGS = 15
BATCH = 5
GIB = 2**30
# template -> (class, selectors, GPUs a pod asks, which products qualify)
TEMPLATES: dict[str, tuple[str, tuple[str, ...], int, frozenset[str]]] = {
    "h100x1": ("h100", (), 1, frozenset({"H100"})),
    "gpux2": ("gpu", (), 2, frozenset({"H100", "A100"})),
    "bigx1": (
        "gpu",
        (f'device.capacity["{DRIVER}"].memory.compareTo(quantity("60Gi")) >= 0',),
        1,
        frozenset({"H100"}),
    ),
}
MEMORY = {"H100": "80Gi", "A100": "40Gi"}


@dataclass(frozen=True)
class Gang:
    name: str
    workers: int
    template: str


def published(pool: NodePool, node: str, devices: int, product: str) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus", "labels": {"e2e.muster.dev/pool": pool.name}},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{index}",
                    "attributes": {"product": {"string": product}},
                    "capacity": {"memory": {"value": MEMORY[product]}},
                }
                for index in range(devices)
            ],
        },
    }


@pytest.fixture
def products(kubectl: Kubectl, pool: NodePool, namespace: str) -> Iterator[dict[str, str]]:
    """Eight nodes, their slices, the two classes and the three templates: node -> product."""
    rng = random.Random(SEED)
    product_of = {}
    for _ in range(NODES):
        node = pool.add(gpus=0)
        product = rng.choice(("H100", "A100"))
        kubectl.apply(published(pool, node, rng.randint(2, 6), product))
        product_of[node] = product
    driver = f'device.driver == "{DRIVER}"'
    h100 = f'{driver} && device.attributes["{DRIVER}"].product == "H100"'
    for name, selector in (("h100", h100), ("gpu", driver)):
        kubectl.apply(
            {
                "apiVersion": RESOURCE,
                "kind": "DeviceClass",
                "metadata": {"name": f"{pool.name}-{name}"},
                "spec": {"selectors": [{"cel": {"expression": selector}}]},
            }
        )
    for template, (device_class, selectors, count, _) in TEMPLATES.items():
        exactly: dict[str, Any] = {"deviceClassName": f"{pool.name}-{device_class}", "count": count}
        if selectors:
            exactly["selectors"] = [{"cel": {"expression": text}} for text in selectors]
        kubectl.apply(
            {
                "apiVersion": RESOURCE,
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": template},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
            },
            namespace,
        )
    yield product_of
    kubectl("delete", "deviceclass", f"{pool.name}-h100", f"{pool.name}-gpu", check=False)
    kubectl("delete", "resourceslices", "-l", f"e2e.muster.dev/pool={pool.name}", check=False)


def random_gangs(seed: int) -> list[Gang]:
    rng = random.Random(seed)
    return [
        Gang(f"g{index:02d}", rng.randint(1, 3), rng.choice(sorted(TEMPLATES)))
        for index in range(GANGS)
    ]


@dataclass
class Snapshot:
    groups: dict[str, dict[str, Any]]
    pods: list[dict[str, Any]]
    claims: dict[str, dict[str, Any]]
    slices: list[dict[str, Any]]

    @classmethod
    def take(cls, kubectl: Kubectl, namespace: str, pool: NodePool) -> Snapshot:
        groups = kubectl.json("get", POD_GROUPS, "-n", namespace)["items"]
        claims = kubectl.json("get", "resourceclaims", "-n", namespace)["items"]
        slices = kubectl.json("get", "resourceslices", "-l", f"e2e.muster.dev/pool={pool.name}")[
            "items"
        ]
        return cls(
            {g["metadata"]["name"]: g for g in groups},
            kubectl.json("get", "pods", "-n", namespace)["items"],
            {c["metadata"]["name"]: c for c in claims},
            slices,
        )

    def decided(self, gang: Gang) -> bool:
        reason = condition(self.groups.get(gang.name, {})).get("reason")
        pods = members(self.pods, gang.name)
        if reason == "Unschedulable":
            return True
        return (
            reason == "Scheduled"
            and len(pods) == gang.workers
            and all(pod["spec"].get("nodeName") and self.allocated(pod) for pod in pods)
        )

    def allocated(self, pod: dict[str, Any]) -> set[str]:
        """The nodes (pools) of the devices allocated to the pod's claims."""
        found = set()
        for entry in pod.get("status", {}).get("resourceClaimStatuses") or []:
            claim = self.claims.get(entry.get("resourceClaimName") or "", {})
            allocation = claim.get("status", {}).get("allocation") or {}
            found |= {r["pool"] for r in allocation.get("devices", {}).get("results", [])}
        return found

    def free(self, products: frozenset[str]) -> dict[str, int]:
        """Per node, the GPUs of these products no claim holds."""
        held = {
            (result["pool"], result["device"])
            for claim in self.claims.values()
            for result in (claim.get("status", {}).get("allocation") or {})
            .get("devices", {})
            .get("results", [])
        }
        free = {}
        for item in self.slices:
            node = item["spec"]["nodeName"]
            free[node] = sum(
                1
                for device in item["spec"]["devices"]
                if device["attributes"]["product"]["string"] in products
                and (node, device["name"]) not in held
            )
        return free


def settle(kubectl: Kubectl, namespace: str, pool: NodePool, gangs: list[Gang]) -> Snapshot:
    """Wait until every gang of the batch is decided, the same for two polls in a row."""
    last: list[str] = []
    latest: list[Snapshot] = []

    def settled() -> bool:
        refused = failed_scheduling(kubectl, namespace) + rolled_back(kubectl, namespace)
        if refused:
            raise AssertionError("released pods refused or rolled back:\n" + "\n".join(refused))
        snapshot = Snapshot.take(kubectl, namespace, pool)
        latest[:] = [snapshot]
        if not all(snapshot.decided(gang) for gang in gangs):
            last.clear()
            return False
        fingerprint = repr(
            [(condition(snapshot.groups[g.name]).get("reason"), g.name) for g in gangs]
        )
        done = last == [fingerprint]
        last[:] = [fingerprint]
        return done

    wait_until("every gang of the batch to be decided", settled, timeout=120, interval=1.5)
    return latest[0]


def test_random_gangs_claiming_gpus_bind_where_muster_planned_their_devices(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    products: dict[str, str],
) -> None:
    gangs = random_gangs(SEED)
    admitted: list[str] = []
    held: list[str] = []
    problems: list[str] = []
    started = time.monotonic()
    for first in range(0, len(gangs), BATCH):
        batch = gangs[first : first + BATCH]
        jobs = [claiming_job(g.name, pool, g.workers, g.template) for g in batch]
        kubectl.apply({"apiVersion": "v1", "kind": "List", "items": jobs}, namespace)
        snapshot = settle(kubectl, namespace, pool, batch)
        for gang in batch:
            group = snapshot.groups[gang.name]
            pods = members(snapshot.pods, gang.name)
            _, _, count, qualify = TEMPLATES[gang.template]
            if condition(group)["reason"] == "Unschedulable":
                held.append(f"{gang.name} {gang.workers}x{gang.template}")
                assert all(is_gated(pod) for pod in pods), f"{gang.name} held, not gated"
                fits = sum(free // count for free in snapshot.free(qualify).values())
                if fits >= gang.workers:
                    problems.append(f"{gang.name} held back, yet {fits} pods fit: {group}")
                continue
            plan = group["status"]["plan"]
            admitted.append(f"{gang.name} {gang.workers}x{gang.template}: {sorted(plan.values())}")
            for pod in pods:
                node = pod["spec"]["nodeName"]
                if plan.get(pod["metadata"]["name"]) != node:
                    problems.append(f"{pod['metadata']['name']} bound on {node}, planned elsewhere")
                if snapshot.allocated(pod) != {node} or products[node] not in qualify:
                    problems.append(
                        f"{pod['metadata']['name']}: devices of {snapshot.allocated(pod)}"
                    )
        problems += [f"FailedScheduling {e}" for e in failed_scheduling(kubectl, namespace)]
        problems += [f"RolledBack {e}" for e in rolled_back(kubectl, namespace)]
        if problems:
            break
        clear_batch(kubectl, namespace)
    summary = (
        f"{len(admitted)} admitted, {len(held)} held back, in {time.monotonic() - started:.0f}s"
        + "\nadmitted:\n  "
        + "\n  ".join(admitted)
        + "\nheld back:\n  "
        + "\n  ".join(held)
    )
    print(summary)
    assert not problems, "\n".join(problems) + "\n" + summary
    assert admitted and held, summary  # both outcomes are exercised
