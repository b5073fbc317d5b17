"""Kueue in the benchmark: the queue the Kueue modes submit to, and what its Workloads say.

The queue is one ClusterQueue whose quota is exactly the cluster's capacity (every
node's allocatable cpu, memory and GPUs), one ResourceFlavor for every KWOK node, and
a LocalQueue in the benchmark's namespace. So Kueue never holds a Job back for quota
the nodes do not have; whatever else it holds back, it holds for where pods can go.

- ``kueue``: the flavor names a ``Topology`` (levels zone, then hostname), which turns
  on Kueue's topology-aware scheduling (TAS) for every Job of the queue: Kueue admits a
  Job only once its own model of the nodes has room for all of its pods (in one zone
  when the Job requires it), assigns each pod a node, and gates the pods
  (``kueue.x-k8s.io/topology``) until it has written that node into their
  nodeSelector.
- ``kueue-muster``: the same queue without the topology, as docs/kueue.md says to run
  Kueue beside Muster: Kueue admits against quota alone, and Muster decides whether
  the gang fits now, and where.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from hack.nodes import gpu_node

from bench.e2e.workload import GPU, HOSTNAME_KEY, LOCAL_QUEUE, ZONE_KEY
from muster.scheduler.objects.quantity import parse_quantity

API_VERSION = "kueue.x-k8s.io/v1beta2"
WORKLOADS = "workloads"
CLUSTER_QUEUES = "clusterqueues"
NAME = "bench"  # the Topology, ResourceFlavor and ClusterQueue
TOPOLOGY_LEVELS = (ZONE_KEY, HOSTNAME_KEY)
# Every KWOK node carries it (hack/nodes.py); a flavor with a topology must select
# its nodes by at least one label.
NODE_LABELS = {"type": "kwok"}
QUOTA_RESOURCES = ("cpu", "memory", GPU)
# Kueue's waitForPodsReady timeout for the benchmark (the tests' 40 s is shorter than a
# 200-Job burst takes on two cores for the Job controller to create all the pods,
# so Kueue evicted Jobs that were merely slow to start); as docs/kueue.md advises.
PODS_READY_TIMEOUT = "5m"
PLURALS = {
    "Topology": "topologies",
    "ResourceFlavor": "resourceflavors",
    "ClusterQueue": CLUSTER_QUEUES,
    "LocalQueue": "localqueues",
}


def quota(*, nodes: int, gpus_per_node: int) -> dict[str, str]:
    """The cluster's capacity per resource: what every node of hack/nodes.py has, times nodes."""
    allocatable = gpu_node("quota", zone="", rack="", gpus=gpus_per_node)["status"]["allocatable"]
    return {name: _quantity(nodes * parse_quantity(allocatable[name])) for name in QUOTA_RESOURCES}


def _quantity(value: Fraction) -> str:
    return str(int(value)) if value.denominator == 1 else f"{int(value * 1000)}m"


def queue_manifests(
    *, namespace: str, nodes: int, gpus_per_node: int, levels: Sequence[str]
) -> list[dict[str, Any]]:
    """The objects of the queue, in the order they must be created; with ``levels``
    (node label keys, widest first) the flavor names a Topology of them."""
    flavor: dict[str, Any] = {"nodeLabels": NODE_LABELS}
    made: list[dict[str, Any]] = []
    if levels:
        flavor["topologyName"] = NAME
        made.append(
            {
                "apiVersion": API_VERSION,
                "kind": "Topology",
                "metadata": {"name": NAME},
                "spec": {"levels": [{"nodeLabel": label} for label in levels]},
            }
        )
    resources = [
        {"name": name, "nominalQuota": amount}
        for name, amount in quota(nodes=nodes, gpus_per_node=gpus_per_node).items()
    ]
    made += [
        {
            "apiVersion": API_VERSION,
            "kind": "ResourceFlavor",
            "metadata": {"name": NAME},
            "spec": flavor,
        },
        {
            "apiVersion": API_VERSION,
            "kind": "ClusterQueue",
            "metadata": {"name": NAME},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": list(QUOTA_RESOURCES),
                        "flavors": [{"name": NAME, "resources": resources}],
                    }
                ],
            },
        },
        {
            "apiVersion": API_VERSION,
            "kind": "LocalQueue",
            "metadata": {"name": LOCAL_QUEUE, "namespace": namespace},
            "spec": {"clusterQueue": NAME},
        },
    ]
    return made


def collection_path(manifest: Mapping[str, Any]) -> str:
    """Where the object is created: cluster-scoped, or in its namespace."""
    plural = PLURALS[manifest["kind"]]
    namespace = manifest["metadata"].get("namespace")
    where = f"namespaces/{namespace}/" if namespace else ""
    return f"/apis/{API_VERSION}/{where}{plural}"


@dataclass(frozen=True, slots=True)
class WorkloadView:
    """What the benchmark reads from Kueue's Workload for a Job."""

    job: str
    admitted: bool
    evicted: bool
    evicted_reason: str | None
    # Kueue's topology-aware scheduling chose nodes for the pods it admitted.
    topology_assigned: bool

    @classmethod
    def of(cls, workload: Mapping[str, Any]) -> WorkloadView | None:
        """The view of a Job's Workload, or None for a Workload no Job owns."""
        owners = workload.get("metadata", {}).get("ownerReferences") or []
        job = next((owner["name"] for owner in owners if owner.get("kind") == "Job"), None)
        if job is None:
            return None
        status = workload.get("status") or {}
        conditions = status.get("conditions") or []
        true = {
            item.get("type"): item.get("reason")
            for item in conditions
            if item.get("status") == "True"
        }
        assignments = (status.get("admission") or {}).get("podSetAssignments") or []
        return cls(
            job=job,
            admitted="Admitted" in true,
            evicted="Evicted" in true,
            evicted_reason=true.get("Evicted"),
            topology_assigned=any(item.get("topologyAssignment") for item in assignments),
        )


def active(cluster_queue: Mapping[str, Any]) -> bool:
    """Whether Kueue admits into the ClusterQueue (its flavor, and topology, are ready)."""
    return any(
        item.get("type") == "Active" and item.get("status") == "True"
        for item in cluster_queue.get("status", {}).get("conditions") or []
    )
