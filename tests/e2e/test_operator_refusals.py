"""kube-scheduler refusing a released pod: rolled back at once, remembered, not looped.

The refusal comes from a rule the engine does not model: the gang's pods mount a
PersistentVolume labelled with one zone (the older way of tying a volume to a zone;
the engine models `spec.nodeAffinity`, not these labels), so kube-scheduler's
VolumeZone filter refuses the nodes of every other zone ("had no available volume
zone"), whatever the engine planned. Each node of the pool is in a zone of its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import (
    admissions_for,
    events_for,
    group_status,
    is_gated,
    pods_of,
    scheduled_condition,
    steps_for,
    wait_all_bound,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e

RELEASE_TIMEOUT = 120
CONFLICT = "had no available volume zone"
ZONE = "topology.kubernetes.io/zone"


@pytest.fixture
def long_release_timeout(operator: OperatorProcess) -> Iterator[OperatorProcess]:
    """The operator with a release timeout no rollback in these tests may wait for."""
    operator.restart(f"--release-timeout={RELEASE_TIMEOUT}", "--max-rollbacks=2")
    yield operator
    operator.restart()


def volume_in(kubectl: Kubectl, namespace: str, zone: str) -> str:
    """A claim bound to a volume only nodes of `zone` can mount; the claim's name."""
    name = f"data-{namespace}"
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": {ZONE: zone}},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": "",
                "hostPath": {"path": f"/tmp/{name}"},
                "claimRef": {"namespace": namespace, "name": name},
            },
        }
    )
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": name,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        namespace,
    )

    def bound() -> bool:
        claim = kubectl.json("get", "pvc", name, "-n", namespace)
        return bool(claim.get("status", {}).get("phase") == "Bound")

    wait_until(f"claim {name} to be bound", bound)
    return name


def job_with_claim(name: str, pool: NodePool, claim: str, workers: int) -> dict[str, Any]:
    job = gang_job(name, pool, workers=workers)
    spec = job["spec"]["template"]["spec"]
    spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    return job


def refusals(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    """The gang's refusal memory ({} while it has none, or its PodGroup is not made yet)."""
    found: dict[str, Any] = group_status(kubectl, namespace, name).get("refusals") or {}
    return found


def test_a_refused_gang_rolls_back_at_once_quoting_kube_scheduler_and_lands_elsewhere(
    long_release_timeout: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    volumes: list[str],
) -> None:
    refusing = pool.add(gpus=4, zone=f"{namespace}-a")
    accepting = pool.add(gpus=4, zone=f"{namespace}-b")
    claim = volume_in(kubectl, namespace, f"{namespace}-b")
    volumes.append(claim)
    kubectl.apply(job_with_claim("train", pool, claim, workers=2), namespace)

    # The engine plans the first node by name; kube-scheduler refuses it, and the gang
    # is rolled back long before the release timeout.
    condition = wait_for_reason(kubectl, namespace, "train", "RolledBack", timeout=20)
    assert f"on node {refusing}" in condition["message"]
    assert CONFLICT in condition["message"]  # kube-scheduler's own words
    memory = refusals(kubectl, namespace, "train")
    assert memory["rollbacks"] == 1
    assert [entry["node"] for entry in memory["nodes"]] == [refusing]
    assert CONFLICT in memory["nodes"][0]["message"]
    rolled_back = [
        e for e in events_for(kubectl, namespace, "train") if e["reason"] == "RolledBack"
    ]
    assert any(CONFLICT in event["message"] for event in rolled_back)

    # The next plan leaves the refused node out, and the gang binds on the other one.
    pods = wait_all_bound(kubectl, namespace, "train", 2, timeout=90)
    assert {pod["spec"]["nodeName"] for pod in pods} == {accepting}
    wait_for_reason(kubectl, namespace, "train", "Scheduled")
    wait_until(
        "the run of rollbacks to end",
        lambda: refusals(kubectl, namespace, "train").get("rollbacks") == 0,
        timeout=30,
    )

    cycles = long_release_timeout.replayed()
    kinds = steps_for(cycles, namespace, "train")
    assert kinds.index("admit") < kinds.index("roll back")
    group = f"{namespace}/train"
    rollback_cycle = next(
        cycle
        for cycle in cycles
        if any(
            step["group"] == group and step["kind"] == "roll back"
            for step in cycle.replayed["steps"]
        )
    )
    said = rollback_cycle.replayed["statuses"][group]["conditions"][0]
    assert said["reason"] == "RolledBack" and CONFLICT in said["message"]
    first, *_, last = admissions_for(cycles, namespace, "train")
    assert refusing in first["placements"].values()
    assert set(last["placements"].values()) == {accepting}


def test_a_gang_refused_max_rollbacks_times_stays_unschedulable_until_a_node_changes(
    long_release_timeout: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    volumes: list[str],
) -> None:
    for index in range(3):
        pool.add(gpus=4, zone=f"{namespace}-{index}")
    claim = volume_in(kubectl, namespace, f"{namespace}-nowhere")  # no node can mount it
    volumes.append(claim)
    kubectl.apply(job_with_claim("stuck", pool, claim, workers=1), namespace)

    def refused_nodes() -> list[str]:
        return [entry["node"] for entry in refusals(kubectl, namespace, "stuck").get("nodes", [])]

    wait_until("two refusal rollbacks", lambda: len(refused_nodes()) == 2, timeout=120)
    assert refused_nodes() == pool.nodes[:2]  # the second plan avoided the first node
    condition = wait_for_reason(kubectl, namespace, "stuck", "Unschedulable", timeout=60)
    assert "refused its released pods in 2 rollbacks in a row" in condition["message"]
    assert CONFLICT in condition["message"]
    assert "until a node is added, removed or changed" in condition["message"]

    # It is not planned again: its pods stay gated, its status says the same.
    digest = refusals(kubectl, namespace, "stuck")["nodeSet"]
    for _ in range(10):
        pods = pods_of(kubectl, namespace, "stuck")
        assert pods and all(is_gated(pod) for pod in pods)
        assert scheduled_condition(kubectl, namespace, "stuck")["reason"] == "Unschedulable"
        time.sleep(1)

    # A changed node is a changed cluster: the gang is planned again, from a fresh memory.
    kubectl("label", "node", pool.nodes[2], "e2e.muster.dev/retry=1")

    def retried() -> bool:
        memory = refusals(kubectl, namespace, "stuck")
        return memory.get("nodeSet") != digest and memory.get("rollbacks") == 1

    wait_until("the gang to be planned again after a node changed", retried, timeout=60)
