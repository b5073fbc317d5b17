"""A PodGroup's counts follow its pods: a pod joining or leaving a gang that waits is
written within a moment (the membership grace), not when a long grace or a resync
comes round. As installed."""

from __future__ import annotations

from typing import Any

import pytest
from devtools.factories import NodePool, gang_pod_group
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import (
    GROUP_LABEL,
    POD_GROUPS,
    group_status,
    scheduled_condition,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e

FOLLOWS_WITHIN = 5.0  # a deadline for the wait, not a measured speed (see bench/)


def member(name: str, group: str, pool: NodePool) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {GROUP_LABEL: group}},
        "spec": {
            "nodeSelector": pool.selector,
            "tolerations": [pool.toleration],
            "containers": [{"name": "main", "image": "trainer"}],
        },
    }


def shows(kubectl: Kubectl, namespace: str, name: str, exist: int) -> bool:
    """Whether the group's counts and its waiting message both say `exist` pods."""
    total = (group_status(kubectl, namespace, name).get("pods") or {}).get("total")
    message = scheduled_condition(kubectl, namespace, name).get("message", "")
    return total == exist and message.startswith(f"{exist}/3 member pods exist")


def test_the_counts_follow_pods_joining_and_leaving_a_waiting_gang(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=1)
    kubectl.apply(gang_pod_group("forming", 3), namespace)
    wait_for_reason(kubectl, namespace, "forming", "WaitingForPods")

    for name in ("first", "second"):
        kubectl.apply(member(name, "forming", pool), namespace)
    wait_until(
        "the PodGroup to show the 2 pods that joined",
        lambda: shows(kubectl, namespace, "forming", 2),
        timeout=FOLLOWS_WITHIN,
    )
    columns = kubectl("get", POD_GROUPS, "forming", "-n", namespace).stdout.split("\n")
    header, row = columns[0].split(), columns[1].split()
    assert row[header.index("PODS")] == "2"

    kubectl("delete", "pod", "second", "-n", namespace, "--wait=false")
    wait_until(
        "the PodGroup to show the pod that left",
        lambda: shows(kubectl, namespace, "forming", 1),
        timeout=FOLLOWS_WITHIN,
    )
