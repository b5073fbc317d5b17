"""A node a gang's plan counts on lost after the release, before any pod binds: deleted,
or given a NoSchedule taint its pods do not tolerate (as the node lifecycle controller
taints a node gone silent `unreachable`; kube-scheduler then binds nothing there).

The window: the plan names the node, every pod is released, none is bound (a hold
gate of the test's own keeps them from binding, `held`), asserted when the node is
lost. The gang can no longer complete as planned: the operator must roll it back whole
at once, not at its release timeout (its released pods taken down; their Job makes
new ones), and plan it again on
the node that is left, where, once the test lifts the holds, it binds whole under the
observer. No pod of the gang ever binds before then, so it is never partial.
"""

from __future__ import annotations

import time

import pytest
from devtools.factories import NodePool, gang_job, held, lift_holds
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.scheduler import EngineConfig
from tests.e2e.faults.faults import released_of
from tests.e2e.support.harness import (
    bound,
    pinned_to,
    pod_group,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)

WORKERS = 4
# A taint of the test's own: the node lifecycle controller would take its `unreachable`
# off a node whose Lease KWOK renews.
MAINTENANCE = "e2e.muster.dev/maintenance"


@pytest.mark.parametrize("fault", ["deleted", "tainted"])
def test_a_planned_node_lost_before_binding_rolls_the_gang_back_and_it_lands_whole_elsewhere(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool, fault: str
) -> None:
    planned_node = pool.add(gpus=WORKERS)
    kubectl.apply(held(gang_job("train", pool, workers=WORKERS)), namespace)
    wait_until(
        "the gang to be released",
        lambda: released_of(kubectl, namespace, "train") == (WORKERS, WORKERS),
    )
    plan = pod_group(kubectl, namespace, "train")["status"]["plan"]
    assert set(plan.values()) == {planned_node}
    other_node = pool.add(gpus=WORKERS)
    assert not bound(pods_of(kubectl, namespace, "train")), "a pod bound before the fault"
    if fault == "deleted":
        kubectl("delete", "node", planned_node)
    else:
        kubectl("taint", "node", planned_node, f"{MAINTENANCE}:NoSchedule")
    lost = time.monotonic()

    condition = wait_for_reason(kubectl, namespace, "train", "RolledBack")
    assert (
        "can no longer bind: their node is gone, cordoned or tainted against them"
        in condition["message"]
    )
    assert time.monotonic() - lost < EngineConfig().release_timeout, "not rolled back at once"
    assert planned_node in condition["message"]
    wait_for_reason(kubectl, namespace, "train", "Scheduled", timeout=60)

    def released_elsewhere() -> bool:
        pods = pods_of(kubectl, namespace, "train")
        return released_of(kubectl, namespace, "train") == (WORKERS, WORKERS) and all(
            pinned_to(pod) == other_node and pod["metadata"]["name"] not in plan for pod in pods
        )

    wait_until("the gang released again onto the node left", released_elsewhere, timeout=60)
    replanned = time.monotonic() - lost
    lift_holds(kubectl, namespace, pods_of(kubectl, namespace, "train"))
    pods = wait_all_bound(kubectl, namespace, "train", WORKERS)
    assert {pod["spec"]["nodeName"] for pod in pods} == {other_node}
    print(
        f"planned node {fault} before binding: rolled back and released whole on "
        f"{other_node} {replanned:.1f}s after it was {fault}"
    )
