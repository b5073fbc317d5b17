"""Every file in `examples/` does on the dev cluster what its comment says.

The dev cluster is `make cluster-up`'s: the nodes of `hack/nodes/gpu-cluster.yaml`
(2 zones x 2 racks x 2 nodes x 4 GPUs, untainted). The e2e cluster starts with the
same nodes; on a cluster handed over without them (`MUSTER_KUBECONFIG`) they are
added for the module and removed after it. Each example is applied as a user would,
`kubectl apply -n NS -f examples/FILE`, and the outcome its comment promises is
checked; the gang observer checks each gang rose whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from devtools.builds import ROOT
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import (
    GROUP_LABEL,
    WORKLOADS,
    cluster_mode,
    pod_group,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)

EXAMPLES = ROOT / "examples"
DEV_NODES = ROOT / "hack" / "nodes" / "gpu-cluster.yaml"
ZONE = "topology.kubernetes.io/zone"
RACK = "topology.muster.dev/rack"

pytestmark = pytest.mark.usefixtures("operator", "dev_nodes")


def _dev_nodes() -> list[dict[str, Any]]:
    return [node for node in yaml.safe_load_all(DEV_NODES.read_text()) if node]


@pytest.fixture(scope="module")
def dev_nodes(kubectl: Kubectl) -> Iterator[dict[str, dict[str, str]]]:
    """The dev cluster's nodes, by name, with their labels."""
    nodes = {node["metadata"]["name"]: node for node in _dev_nodes()}
    existing = {item["metadata"]["name"] for item in kubectl.json("get", "nodes")["items"]}
    missing = [node for name, node in nodes.items() if name not in existing]
    for node in missing:
        kubectl.apply(node)
    wait_until("the dev cluster's nodes to be Ready", lambda: _all_ready(kubectl, nodes))
    yield {name: node["metadata"]["labels"] for name, node in nodes.items()}
    for node in missing:
        kubectl("delete", "node", node["metadata"]["name"], "--wait=false", check=False)


def _all_ready(kubectl: Kubectl, names: dict[str, Any]) -> bool:
    ready = set()
    for item in kubectl.json("get", "nodes")["items"]:
        conditions = item.get("status", {}).get("conditions") or []
        if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            ready.add(item["metadata"]["name"])
    return names.keys() <= ready


def _apply(kubectl: Kubectl, namespace: str, example: str) -> None:
    kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / example))


def _nodes(pods: list[dict[str, Any]]) -> set[str]:
    return {pod["spec"]["nodeName"] for pod in pods}


def _one_domain(dev_nodes: dict[str, dict[str, str]], nodes: set[str], key: str) -> set[str]:
    return {dev_nodes[node][key] for node in nodes}


def test_the_training_job_starts_its_4_workers_together(
    kubectl: Kubectl,
    operator: OperatorProcess,
    namespace: str,
    dev_nodes: dict[str, dict[str, str]],
) -> None:
    _apply(kubectl, namespace, "training-job.yaml")
    pods = wait_all_bound(kubectl, namespace, "train", 4)
    assert _nodes(pods) <= dev_nodes.keys()
    scheduled = wait_for_reason(kubectl, namespace, "train", "Scheduled")
    assert scheduled["message"].startswith("4 pods placed")
    assert pod_group(kubectl, namespace, "train")["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 4}
    }
    # The operator's log: one line for the decision, no line per webhook call.
    log = operator.log_path.read_text()
    assert f"PodGroup {namespace}/train admitted: 4 pods placed" in log
    assert "aiohttp.access" not in log
    assert "Handler '" not in log


def test_the_zonal_job_runs_in_one_zone_at_research_priority(
    kubectl: Kubectl,
    namespace: str,
    dev_nodes: dict[str, dict[str, str]],
) -> None:
    try:
        _apply(kubectl, namespace, "training-job-zone-priority.yaml")
        pods = wait_all_bound(kubectl, namespace, "train-zonal", 4)
        assert len(_one_domain(dev_nodes, _nodes(pods), ZONE)) == 1
        group = pod_group(kubectl, namespace, "train-zonal")
        assert group["spec"]["priority"] == 1000
        assert group["spec"]["priorityClassName"] == "research"
        assert group["spec"]["disruptionMode"] == {"all": {}}
        assert (
            "in topology.kubernetes.io/zone=zone-"
            in (wait_for_reason(kubectl, namespace, "train-zonal", "Scheduled")["message"])
        )
    finally:
        kubectl("delete", "job", "train-zonal", "-n", namespace, "--wait=false", check=False)
        kubectl("delete", "priorityclass", "research", "--ignore-not-found", check=False)


def test_the_native_field_job_runs_like_the_labelled_one(
    kubectl: Kubectl,
    kubeconfig: Path,
    namespace: str,
    dev_nodes: dict[str, dict[str, str]],
) -> None:
    if cluster_mode(kubeconfig) != "job-field":
        pytest.skip("the API server drops spec.scheduling unless it keeps the Job field")
    _apply(kubectl, namespace, "training-job-native.yaml")
    pods = wait_all_bound(kubectl, namespace, "train-native", 4)
    assert len(_one_domain(dev_nodes, _nodes(pods), ZONE)) == 1
    assert pod_group(kubectl, namespace, "train-native")["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 4}
    }


def test_the_pod_group_holds_its_pods_until_4_exist(
    kubectl: Kubectl,
    namespace: str,
) -> None:
    _apply(kubectl, namespace, "podgroup-gang.yaml")

    def member(index: int) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"allreduce-{index}", "labels": {GROUP_LABEL: "allreduce"}},
            "spec": {"containers": [{"name": "worker", "image": "registry.example/ar:1"}]},
        }

    for index in range(3):
        kubectl.apply(member(index), namespace)
    wait_for_reason(kubectl, namespace, "allreduce", "WaitingForPods")
    waiting = pods_of(kubectl, namespace, "allreduce")
    assert len(waiting) == 3
    assert all(pod["spec"].get("schedulingGates") for pod in waiting)
    assert not any(pod["spec"].get("nodeName") for pod in waiting)
    kubectl.apply(member(3), namespace)
    wait_all_bound(kubectl, namespace, "allreduce", 4)
    wait_for_reason(kubectl, namespace, "allreduce", "Scheduled")


def test_the_workload_starts_its_launcher_and_its_8_workers_in_one_rack(
    kubectl: Kubectl,
    namespace: str,
    dev_nodes: dict[str, dict[str, str]],
) -> None:
    _apply(kubectl, namespace, "workload.yaml")
    workers = wait_all_bound(kubectl, namespace, "mpi-workers", 8, timeout=60)
    assert len(_one_domain(dev_nodes, _nodes(workers), RACK)) == 1
    wait_all_bound(kubectl, namespace, "mpi-launcher", 1)
    assert (
        "in topology.muster.dev/rack="
        in (wait_for_reason(kubectl, namespace, "mpi-workers", "Scheduled")["message"])
    )
    assert pod_group(kubectl, namespace, "mpi-launcher")["spec"]["schedulingPolicy"] == {
        "basic": {}
    }
    # `kubectl get workloads` lists both templates.
    wait_until(
        "the Workload's TEMPLATES column",
        lambda: _row(kubectl, namespace, WORKLOADS, "mpi").get("TEMPLATES") == "launcher,workers",
    )


def _row(kubectl: Kubectl, namespace: str, resource: str, name: str) -> dict[str, str]:
    """What `kubectl get` shows for the object, by column (none of its cells empty)."""
    header, row = kubectl("get", resource, name, "-n", namespace).stdout.splitlines()[:2]
    return dict(zip(header.split(), row.split(), strict=False))
