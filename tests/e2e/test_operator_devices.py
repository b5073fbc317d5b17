"""Gangs whose pods claim GPUs through Dynamic Resource Allocation (resource.k8s.io/v1).

No driver runs on KWOK nodes: the test publishes each node's devices as a ResourceSlice,
as a driver would, and kube-scheduler's DynamicResources plugin allocates from them.
A plan on devices that are taken would leave pinned pods Pending with "cannot allocate
all claims", and the gang partly bound, which the gang observer fails at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess

from tests.e2e.support.harness import (
    bound,
    events_for,
    explained,
    is_gated,
    pod_group,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e

DRIVER = "gpu.e2e.muster.dev"
RESOURCE = "resource.k8s.io/v1"


@pytest.fixture(autouse=True)
def devices_served(kubectl: Kubectl) -> None:
    """Where the API server does not serve DRA (before 1.34), claims are refused
    instead (test_operator_features.py)."""
    if not kubectl.serves(RESOURCE):
        pytest.skip(f"{RESOURCE} is not served by this API server")


def published(pool: NodePool, node: str, devices: int, product: str) -> dict[str, Any]:
    """The ResourceSlice a driver would publish for the node's GPUs."""
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
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for index in range(devices)
            ],
        },
    }


@pytest.fixture
def h100(kubectl: Kubectl, pool: NodePool) -> Iterator[str]:
    """A DeviceClass of the pool's H100s (a selector on the product attribute)."""
    name = f"{pool.name}-h100"
    selector = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].product == "H100"'
    kubectl.apply(
        {
            "apiVersion": RESOURCE,
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": selector}}]},
        }
    )
    yield name
    kubectl("delete", "deviceclass", name, "--ignore-not-found", check=False)
    kubectl("delete", "resourceslices", "-l", f"e2e.muster.dev/pool={pool.name}", check=False)


def gpu_nodes(kubectl: Kubectl, pool: NodePool, products: list[tuple[int, str]]) -> list[str]:
    """Nodes with the extended resource at 0 and their GPUs in slices."""
    nodes = []
    for devices, product in products:
        node = pool.add(gpus=0)
        kubectl.apply(published(pool, node, devices, product))
        nodes.append(node)
    return nodes


def claiming_job(name: str, pool: NodePool, workers: int, template: str) -> dict[str, Any]:
    """A gang Job whose every pod claims one GPU through the template."""
    job = gang_job(name, pool, workers=workers, gpus=0)
    spec = job["spec"]["template"]["spec"]
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return job


def one_gpu(kubectl: Kubectl, namespace: str, device_class: str) -> str:
    kubectl.apply(
        {
            "apiVersion": RESOURCE,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]
                    }
                }
            },
        },
        namespace,
    )
    return "one-gpu"


def allocated_nodes(kubectl: Kubectl, namespace: str, pod: dict[str, Any]) -> set[str]:
    """The pools (one per node here) of the devices allocated to the pod's claims."""
    pools = set()
    for entry in pod["status"].get("resourceClaimStatuses") or []:
        claim = kubectl.json("get", "resourceclaim", "-n", namespace, entry["resourceClaimName"])
        allocation = claim["status"]["allocation"]
        pools |= {result["pool"] for result in allocation["devices"]["results"]}
    return pools


def test_a_gang_claiming_gpus_lands_whole_where_its_claims_are_allocated(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool, h100: str
) -> None:
    h100_nodes = gpu_nodes(kubectl, pool, [(2, "H100"), (2, "H100")])
    gpu_nodes(kubectl, pool, [(8, "A100")])
    template = one_gpu(kubectl, namespace, h100)
    kubectl.apply(claiming_job("train", pool, 4, template), namespace)

    pods = wait_all_bound(kubectl, namespace, "train", 4, timeout=60)
    plan = pod_group(kubectl, namespace, "train")["status"]["plan"]
    assert plan == {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in pods}
    assert sorted(plan.values()) == sorted(h100_nodes * 2)
    for pod in pods:
        assert allocated_nodes(kubectl, namespace, pod) == {pod["spec"]["nodeName"]}
    wait_for_reason(kubectl, namespace, "train", "Scheduled")


def test_a_gang_whose_gpus_are_taken_waits_with_the_reason(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool, h100: str
) -> None:
    gpu_nodes(kubectl, pool, [(2, "H100"), (2, "H100")])
    template = one_gpu(kubectl, namespace, h100)
    kubectl.apply(claiming_job("first", pool, 3, template), namespace)
    wait_all_bound(kubectl, namespace, "first", 3, timeout=60)
    kubectl.apply(claiming_job("second", pool, 2, template), namespace)

    condition = wait_for_reason(kubectl, namespace, "second", "Unschedulable")
    assert "cannot allocate all claims" in condition["message"], condition["message"]
    pods = pods_of(kubectl, namespace, "second")
    assert len(pods) == 2 and all(is_gated(pod) for pod in pods)
    explanation = explained(operator, namespace, "second")
    assert "cannot allocate all claims" in explanation
    rows = [line.split() for line in explanation.splitlines() if line.startswith(pool.name)]
    assert sorted(row[1] for row in rows) == ["0/2", "1/2"], explanation


def test_a_claim_shared_by_a_gang_is_allocated_once_on_the_node_of_all_its_pods(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool, h100: str
) -> None:
    gpu_nodes(kubectl, pool, [(1, "H100"), (2, "H100")])
    request = {"name": "gpu", "exactly": {"deviceClassName": h100, "count": 2}}
    kubectl.apply(
        {
            "apiVersion": RESOURCE,
            "kind": "ResourceClaim",
            "metadata": {"name": "team"},
            "spec": {"devices": {"requests": [request]}},
        },
        namespace,
    )
    job = gang_job("pair", pool, workers=2, gpus=0)
    spec = job["spec"]["template"]["spec"]
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "team"}]
    spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    kubectl.apply(job, namespace)

    pods = wait_all_bound(kubectl, namespace, "pair", 2, timeout=60)
    (node,) = {pod["spec"]["nodeName"] for pod in pods}
    claim = kubectl.json("get", "resourceclaim", "-n", namespace, "team")
    results = claim["status"]["allocation"]["devices"]["results"]
    assert {result["pool"] for result in results} == {node} and len(results) == 2
    assert len(claim["status"]["reservedFor"]) == 2


def test_gangs_of_claimed_and_of_extended_resource_gpus_land_side_by_side(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool, h100: str
) -> None:
    claimed = gpu_nodes(kubectl, pool, [(2, "H100")])
    counted = [pool.add(gpus=2), pool.add(gpus=2)]
    template = one_gpu(kubectl, namespace, h100)
    kubectl.apply(claiming_job("claimed", pool, 2, template), namespace)
    kubectl.apply(gang_job("counted", pool, workers=4, gpus=1), namespace)

    on_claimed = wait_all_bound(kubectl, namespace, "claimed", 2, timeout=60)
    assert {pod["spec"]["nodeName"] for pod in on_claimed} == set(claimed)
    on_counted = wait_all_bound(kubectl, namespace, "counted", 4, timeout=60)
    assert {pod["spec"]["nodeName"] for pod in on_counted} == set(counted)


def test_a_higher_priority_gang_preempts_the_gang_holding_its_gpus(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    *,
    h100: str,
    priorities: tuple[str, str],
) -> None:
    low, high = priorities
    gpu_nodes(kubectl, pool, [(2, "H100")])
    template = one_gpu(kubectl, namespace, h100)
    batch = claiming_job("batch", pool, 2, template)
    batch["spec"]["template"]["spec"]["priorityClassName"] = low
    kubectl.apply(batch, namespace)
    first = {pod["metadata"]["name"] for pod in wait_all_bound(kubectl, namespace, "batch", 2)}

    urgent = claiming_job("urgent", pool, 2, template)
    urgent["spec"]["template"]["spec"]["priorityClassName"] = high
    kubectl.apply(urgent, namespace)
    pods = wait_all_bound(kubectl, namespace, "urgent", 2, timeout=90)
    for pod in pods:
        assert allocated_nodes(kubectl, namespace, pod) == {pod["spec"]["nodeName"]}
    victim = pod_group(kubectl, namespace, "batch")
    conditions = {c["type"]: c for c in victim["status"]["conditions"]}
    assert conditions["DisruptionTarget"]["reason"] == "PreemptionByScheduler"
    assert not {pod["metadata"]["name"] for pod in pods_of(kubectl, namespace, "batch")} & first
    assert not bound(pods_of(kubectl, namespace, "batch"))


def test_a_claim_whose_gpus_must_share_a_numa_node_lands_where_two_do(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool, h100: str
) -> None:
    nodes = []
    for numa in ([0, 1], [1, 1]):
        node = pool.add(gpus=0)
        sliced = published(pool, node, 2, "H100")
        for device, value in zip(sliced["spec"]["devices"], numa, strict=True):
            device["attributes"]["numa"] = {"int": value}
        kubectl.apply(sliced)
        nodes.append(node)
    request = {"name": "gpu", "exactly": {"deviceClassName": h100, "count": 2}}
    constraint = {"matchAttribute": f"{DRIVER}/numa"}
    kubectl.apply(
        {
            "apiVersion": RESOURCE,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "numa-pair"},
            "spec": {"spec": {"devices": {"requests": [request], "constraints": [constraint]}}},
        },
        namespace,
    )
    kubectl.apply(claiming_job("pair", pool, 1, "numa-pair"), namespace)

    (pod,) = wait_all_bound(kubectl, namespace, "pair", 1, timeout=60)
    assert pod["spec"]["nodeName"] == nodes[1]
    assert allocated_nodes(kubectl, namespace, pod) == {nodes[1]}
    reasons = {event["reason"] for event in events_for(kubectl, namespace, "pair")}
    assert "RolledBack" not in reasons, reasons  # planned there at once


def test_a_first_available_claim_takes_its_later_choice_where_the_first_has_no_room(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool, h100: str
) -> None:
    gpu_nodes(kubectl, pool, [(1, "H100"), (1, "H100")])
    choices = [
        {"name": "pair", "deviceClassName": h100, "count": 2},
        {"name": "one", "deviceClassName": h100, "count": 1},
    ]
    kubectl.apply(
        {
            "apiVersion": RESOURCE,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "pair-or-one"},
            "spec": {
                "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": choices}]}}
            },
        },
        namespace,
    )
    kubectl.apply(claiming_job("either", pool, 2, "pair-or-one"), namespace)

    pods = wait_all_bound(kubectl, namespace, "either", 2, timeout=60)
    assert len({pod["spec"]["nodeName"] for pod in pods}) == 2
    for pod in pods:
        assert allocated_nodes(kubectl, namespace, pod) == {pod["spec"]["nodeName"]}
    reasons = {event["reason"] for event in events_for(kubectl, namespace, "either")}
    assert "RolledBack" not in reasons, reasons
