"""Gangs whose pods constrain each other: anti-affinity and spread over topology domains.

kube-scheduler enforces inter-pod (anti-)affinity on the pods Muster releases, so a plan
that ignores it leaves the pinned pods Pending and the gang partly bound (which the gang
observer fails at once). A topology spread constraint is different: kube-scheduler
measures skew only over the nodes the pod's own node affinity admits (nodeAffinityPolicy
Honor), and the release pins each pod to one node by name, so kube-scheduler sees one
domain and accepts any plan. Spread is therefore checked here on the final placement.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import (
    bound,
    events_for,
    is_gated,
    pod_group,
    pods_of,
    scheduled_condition,
    wait_all_bound,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def anti_affinity(app: str, topology_key: str = HOSTNAME) -> dict[str, Any]:
    """Required anti-affinity to the pods labelled app=<app>: one per `topology_key` domain."""
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": topology_key}
            ]
        }
    }


def zone_spread(app: str, max_skew: int = 1) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": max_skew,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}},
        }
    ]


def node_labels(kubectl: Kubectl, node: str) -> dict[str, str]:
    labels: dict[str, str] = kubectl.json("get", "node", node)["metadata"]["labels"]
    return labels


def rollbacks(kubectl: Kubectl, namespace: str, name: str) -> list[str]:
    """RolledBack events of the PodGroup and its Job, and a RolledBack condition."""
    found = [
        f"event: {event.get('message', '')}"
        for event in events_for(kubectl, namespace, name)
        if event["reason"] == "RolledBack"
    ]
    condition = scheduled_condition(kubectl, namespace, name)
    if condition.get("reason") == "RolledBack":
        found.append(f"condition: {condition.get('message', '')}")
    return found


def test_hostname_anti_affinity_spreads_a_gang_over_distinct_nodes(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    for _ in range(8):
        pool.add(gpus=4)
    for node in pool.nodes:
        assert node_labels(kubectl, node)[HOSTNAME] == node
    job = gang_job(
        "apart", pool, workers=4, pod_labels={"app": "apart"}, affinity=anti_affinity("apart")
    )
    kubectl.apply(job, namespace)

    pods = wait_all_bound(kubectl, namespace, "apart", 4)
    nodes = [pod["spec"]["nodeName"] for pod in pods]
    assert len(set(nodes)) == 4, f"anti-affine pods share nodes: {sorted(nodes)}"
    plan = pod_group(kubectl, namespace, "apart")["status"]["plan"]
    assert plan == {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in pods}
    wait_for_reason(kubectl, namespace, "apart", "Scheduled")
    assert not rollbacks(kubectl, namespace, "apart")


def test_more_anti_affine_workers_than_nodes_are_held_with_the_reason(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    for _ in range(4):
        pool.add(gpus=4)
    job = gang_job(
        "crowd", pool, workers=5, pod_labels={"app": "crowd"}, affinity=anti_affinity("crowd")
    )
    kubectl.apply(job, namespace)

    condition = wait_for_reason(kubectl, namespace, "crowd", "Unschedulable")
    assert condition["status"] == "False"
    assert "anti-affinity" in condition["message"], condition["message"]
    pods = pods_of(kubectl, namespace, "crowd")
    assert len(pods) == 5
    assert all(is_gated(pod) for pod in pods)
    assert not bound(pods)
    assert "plan" not in pod_group(kubectl, namespace, "crowd").get("status", {})


def test_a_zone_spread_gang_lands_evenly_over_two_zones(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    zones = (f"{pool.name}-a", f"{pool.name}-b")
    for zone in zones:
        for _ in range(3):
            pool.add(gpus=4, zone=zone)
    job = gang_job(
        "even", pool, workers=4, pod_labels={"app": "even"}, topology_spread=zone_spread("even")
    )
    kubectl.apply(job, namespace)

    pods = wait_all_bound(kubectl, namespace, "even", 4)
    per_zone = Counter(node_labels(kubectl, pod["spec"]["nodeName"])[ZONE] for pod in pods)
    assert per_zone == dict.fromkeys(zones, 2), f"spread {dict(per_zone)}"
    wait_until(
        "the gang to be Scheduled",
        lambda: scheduled_condition(kubectl, namespace, "even").get("reason") == "Scheduled",
    )
    assert not rollbacks(kubectl, namespace, "even")
