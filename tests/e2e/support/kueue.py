"""Kueue beside Muster: queues for the tests, and what Kueue says of a Job.

The e2e cluster runs Kueue's manager (`hack/cluster.py up --kueue`, see
hack/kueue.py). The `kueue_queue` fixture gives a test a queue of its own: a
ResourceFlavor whose node labels Kueue injects into the Jobs it admits, a
ClusterQueue with the test's quota that serves only the test's namespace, and a
LocalQueue `queue` in that namespace. A Job joins it with the label
`kueue.x-k8s.io/queue-name: queue`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from devtools.cluster.local import LocalCluster
from devtools.factories import GPU
from devtools.kubectl import Kubectl
from devtools.waiting import wait_until
from hack.kueue import QUEUE_NAME_LABEL

KUEUE_API = "kueue.x-k8s.io/v1beta2"
CLUSTER_QUEUES = "clusterqueues.kueue.x-k8s.io"
KUEUE_WORKLOADS = "workloads.kueue.x-k8s.io"
LOCAL_QUEUE = "queue"
FLAVOR_LABEL = "e2e.muster.dev/flavor"


@dataclass(frozen=True)
class KueueQueue:
    """A test's queue: Jobs labelled with `labels` go to the LocalQueue; Kueue admits
    them against the ClusterQueue's quota and gives their pods `node_labels`."""

    cluster_queue: str
    flavor: str
    node_labels: dict[str, str]

    @property
    def labels(self) -> dict[str, str]:
        return {QUEUE_NAME_LABEL: LOCAL_QUEUE}


@pytest.fixture(scope="session")
def kueue(cluster: LocalCluster, kubectl: Kubectl) -> None:
    """Kueue runs on the test cluster; a cluster without it is named, not skipped."""
    found = kubectl("get", "crd", CLUSTER_QUEUES, check=False)
    if found.returncode != 0 or not (cluster.state_dir / "pids" / "kueue.pid").exists():
        pytest.fail(
            f"Kueue does not run on the cluster in {cluster.state_dir}: "
            "start it with `hack/cluster.py up --kueue`",
            pytrace=False,
        )


@pytest.fixture
def kueue_queue(
    kueue: None, kubectl: Kubectl, namespace: str
) -> Iterator[Callable[..., KueueQueue]]:
    """Makes the test's queue: `kueue_queue(gpus=8)`; removed after the test."""
    made: list[KueueQueue] = []

    def make(*, gpus: int, preempt_lower: bool = False) -> KueueQueue:
        """`preempt_lower`: Kueue evicts lower-priority Jobs of the queue for higher ones."""
        queue = KueueQueue(
            cluster_queue=namespace, flavor=namespace, node_labels={FLAVOR_LABEL: namespace}
        )
        for manifest in _manifests(queue, namespace, gpus, preempt_lower=preempt_lower):
            kubectl.apply(manifest)
        made.append(queue)
        wait_until(
            f"ClusterQueue {queue.cluster_queue} to be active",
            lambda: (
                _condition(kubectl.json("get", CLUSTER_QUEUES, queue.cluster_queue), "Active").get(
                    "status"
                )
                == "True"
            ),
        )
        return queue

    yield make
    for queue in made:
        kubectl("delete", "localqueue", LOCAL_QUEUE, "-n", namespace, "--wait=false", check=False)
        kubectl("delete", CLUSTER_QUEUES, queue.cluster_queue, "--wait=false", check=False)
        kubectl("delete", "resourceflavor", queue.flavor, "--wait=false", check=False)


def _manifests(
    queue: KueueQueue, namespace: str, gpus: int, *, preempt_lower: bool
) -> list[dict[str, Any]]:
    preemption = {"withinClusterQueue": "LowerPriority" if preempt_lower else "Never"}
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "ResourceFlavor",
            "metadata": {"name": queue.flavor},
            "spec": {"nodeLabels": queue.node_labels},
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "ClusterQueue",
            "metadata": {"name": queue.cluster_queue},
            "spec": {
                "preemption": preemption,
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", GPU],
                        "flavors": [
                            {
                                "name": queue.flavor,
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "100"},
                                    {"name": GPU, "nominalQuota": str(gpus)},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {"name": LOCAL_QUEUE, "namespace": namespace},
            "spec": {"clusterQueue": queue.cluster_queue},
        },
    ]


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return dict(item)
    return {}


def kueue_workload(kubectl: Kubectl, namespace: str, job: str) -> dict[str, Any]:
    """Kueue's Workload for the Job (the one it owns), or {} before Kueue made it."""
    items = kubectl.json("get", KUEUE_WORKLOADS, "-n", namespace)["items"]
    for item in items:
        owners = item["metadata"].get("ownerReferences") or []
        if any(owner["kind"] == "Job" and owner["name"] == job for owner in owners):
            return dict(item)
    return {}


def workload_condition(kubectl: Kubectl, namespace: str, job: str, kind: str) -> dict[str, Any]:
    """A condition of Kueue's Workload for the Job (QuotaReserved, Admitted, Evicted, ...)."""
    return _condition(kueue_workload(kubectl, namespace, job), kind)


def wait_for_workload(
    kubectl: Kubectl, namespace: str, job: str, kind: str, reason: str, *, timeout: float = 60
) -> dict[str, Any]:
    """Wait until Kueue's Workload for the Job has the condition with that reason."""
    wait_until(
        f"Kueue's Workload for {job} to say {kind} {reason}",
        lambda: workload_condition(kubectl, namespace, job, kind).get("reason") == reason,
        timeout=timeout,
    )
    return workload_condition(kubectl, namespace, job, kind)


def suspended(kubectl: Kubectl, namespace: str, job: str) -> bool:
    return bool(kubectl.json("get", "job", job, "-n", namespace)["spec"].get("suspend"))
