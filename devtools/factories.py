"""The objects the scenarios submit: simulated GPU nodes of a test's own, and gang Jobs
and PodGroups that use exactly those nodes.

A pool's nodes are tainted and labelled with its name, so no other test's pods land
there; a Job tolerates and selects its pool. KWOK runs a pod for the delay in
`pod-complete.stage.kwok.x-k8s.io/delay` (devtools/cluster/kwok.py).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from devtools.kubectl import Kubectl
from devtools.waiting import wait_until

POOL_LABEL = "e2e.muster.dev/pool"
POLICY_LABEL = "scheduling.muster.dev/policy"
GPU = "nvidia.com/gpu"
LONG_RUNNING = "1h"


@dataclass
class NodePool:
    """Simulated nodes only one test uses: tainted and labelled with the pool's name."""

    kubectl: Kubectl
    name: str = field(default_factory=lambda: f"pool-{uuid.uuid4().hex[:6]}")
    nodes: list[str] = field(default_factory=list)

    def add(
        self,
        gpus: int,
        *,
        zone: str = "zone-x",
        cpu: str = "32",
        labels: dict[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
    ) -> str:
        """One more node; `labels` and `taints` come on top of the pool's own."""
        node = f"{self.name}-{len(self.nodes)}"
        capacity = {"cpu": cpu, "memory": "256Gi", "pods": "110", GPU: str(gpus)}
        self.kubectl.apply(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": node,
                    "annotations": {"kwok.x-k8s.io/node": "fake"},
                    "labels": {
                        "kubernetes.io/hostname": node,
                        "type": "kwok",
                        "topology.kubernetes.io/zone": zone,
                        POOL_LABEL: self.name,
                        **(labels or {}),
                    },
                },
                "spec": {
                    "taints": [
                        {"key": POOL_LABEL, "value": self.name, "effect": "NoSchedule"},
                        *(taints or []),
                    ]
                },
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
        self.nodes.append(node)
        wait_until(f"node {node} to be Ready", lambda: self.ready(node), timeout=30)
        return node

    @property
    def toleration(self) -> dict[str, str]:
        """What lets a pod onto the pool's nodes (they are tainted with its name)."""
        return {"key": POOL_LABEL, "operator": "Equal", "value": self.name}

    @property
    def selector(self) -> dict[str, str]:
        """What keeps a pod on the pool's nodes: a nodeSelector."""
        return {POOL_LABEL: self.name}

    def ready(self, node: str) -> bool:
        """Whether the node exists, is Ready and carries no taint of the node controllers."""
        found = self.kubectl("get", "node", node, "-o", "json", check=False)
        if found.returncode != 0:
            return False
        obj = json.loads(found.stdout)
        taints = obj.get("spec", {}).get("taints") or []
        ready = any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in obj.get("status", {}).get("conditions") or []
        )
        return ready and not any(t["key"].startswith("node.kubernetes.io/") for t in taints)

    def delete(self) -> None:
        for node in self.nodes:
            self.kubectl("delete", "node", node, "--ignore-not-found", "--wait=false", check=False)


def gang_job(
    name: str,
    pool: NodePool,
    *,
    workers: int,
    gpus: int = 1,
    policy: str = "gang",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    run_for: str = LONG_RUNNING,
    priority_class: str | None = None,
    pod_labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    affinity: dict[str, Any] | None = None,
    topology_spread: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Job of `workers` pods, each asking for `gpus` GPUs, on the pool's nodes only.

    `pod_labels`, `affinity` (the pod's `spec.affinity`) and `topology_spread` (its
    `topologySpreadConstraints`) go to the pod template as they are; `node_selector`
    and `tolerations` come on top of the pool's own.
    """
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": {**pool.selector, **(node_selector or {})},
        "tolerations": [pool.toleration, *(tolerations or [])],
        "containers": [
            {
                "name": "worker",
                "image": "trainer",
                "resources": {"requests": {"cpu": "100m"}, "limits": {GPU: str(gpus)}},
            }
        ],
    }
    if priority_class is not None:
        pod_spec["priorityClassName"] = priority_class
    if affinity is not None:
        pod_spec["affinity"] = affinity
    if topology_spread is not None:
        pod_spec["topologySpreadConstraints"] = topology_spread
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": {POLICY_LABEL: policy, **(labels or {})},
            "annotations": annotations or {},
        },
        "spec": {
            "parallelism": workers,
            "completions": workers,
            "backoffLimit": 100,
            "template": {
                "metadata": {
                    "labels": dict(pod_labels or {}),
                    "annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": run_for},
                },
                "spec": pod_spec,
            },
        },
    }


def gang_pod_group(name: str, min_count: int) -> dict[str, Any]:
    """A PodGroup of Muster's, a gang of `min_count`, for pods that name it."""
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


# A second scheduling gate of the user's own: a pod Muster has released stays unbound
# until the test lifts it, which holds a gang between its release and its binding.
HOLD_GATE = "e2e.muster.dev/hold"


def held(job: dict[str, Any]) -> dict[str, Any]:
    """The Job, its pods born with the hold gate."""
    job["spec"]["template"]["spec"]["schedulingGates"] = [{"name": HOLD_GATE}]
    return job


def lift_holds(kubectl: Kubectl, namespace: str, pods: list[dict[str, Any]]) -> None:
    """Remove the hold gate of pods Muster has released (their only gate left)."""
    for pod in pods:
        kubectl(
            "patch",
            "pod",
            pod["metadata"]["name"],
            "-n",
            namespace,
            "--type=json",
            "-p",
            '[{"op": "remove", "path": "/spec/schedulingGates"}]',
        )
