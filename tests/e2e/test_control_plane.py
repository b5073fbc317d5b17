"""The local control plane behaves like a real cluster for what Muster relies on."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from devtools.builds import ROOT
from devtools.kubectl import Kubectl
from devtools.waiting import wait_until

from muster.operator.execution.pods import pinned_terms, release_patch
from muster.scheduler.state.intake import required_terms

pytestmark = pytest.mark.e2e

DEFAULT_NODES = ROOT / "hack" / "nodes" / "gpu-cluster.yaml"


def condition(obj: dict[str, Any], kind: str) -> str | None:
    for cond in obj.get("status", {}).get("conditions", []):
        if cond["type"] == kind:
            return str(cond["status"])
    return None


def test_simulated_nodes_are_ready_with_capacity_and_labels(kubectl: Kubectl) -> None:
    expected = {
        doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(DEFAULT_NODES.read_text())
    }
    nodes = {n["metadata"]["name"]: n for n in kubectl.json("get", "nodes")["items"]}
    for name, want in expected.items():
        got = nodes[name]
        assert condition(got, "Ready") == "True", name
        assert got["status"]["allocatable"]["nvidia.com/gpu"] == "4"
        assert got["status"]["allocatable"]["cpu"] == want["status"]["allocatable"]["cpu"]
        for key in ("topology.kubernetes.io/zone", "topology.muster.dev/rack"):
            assert got["metadata"]["labels"][key] == want["metadata"]["labels"][key]
        assert not any(
            t["key"] == "node.kubernetes.io/not-ready" for t in got["spec"].get("taints", [])
        )


def test_plain_job_runs_to_complete(kubectl: Kubectl, namespace: str) -> None:
    kubectl.apply(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "plain", "namespace": namespace},
            "spec": {
                "parallelism": 4,
                "completions": 4,
                "template": {
                    "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "1s"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "work",
                                "image": "busybox",
                                "resources": {"requests": {"cpu": "100m"}},
                            }
                        ],
                    },
                },
            },
        }
    )

    def complete() -> bool:
        job = kubectl.json("get", "job", "plain", "-n", namespace)
        return condition(job, "Complete") == "True"

    wait_until("the Job to complete", complete, timeout=90)
    pods = kubectl.json("get", "pods", "-n", namespace, "-l", "job-name=plain")["items"]
    assert len(pods) == 4
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)


ZONE_B = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}
KWOK = {"key": "type", "operator": "In", "values": ["kwok"]}
TYPED = {"key": "type", "operator": "Exists"}  # stored without values


@pytest.mark.parametrize(
    "terms",
    [[], [{"matchExpressions": [ZONE_B]}, {"matchExpressions": [KWOK, TYPED]}]],
    ids=["without-node-affinity", "with-required-terms"],
)
def test_gated_pod_binds_to_the_node_it_is_pinned_to_once_ungated(
    kubectl: Kubectl, namespace: str, terms: list[dict[str, Any]]
) -> None:
    """The operator's release patch, as is: the API server takes it as a narrowing."""
    node = "gpu-b1-7"
    spec: dict[str, Any] = {
        "schedulingGates": [{"name": "scheduling.muster.dev/gang"}],
        "containers": [
            {"name": "work", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
        ],
    }
    if terms:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "gated", "namespace": namespace},
            "spec": spec,
        }
    )

    def pod() -> dict[str, Any]:
        result: dict[str, Any] = kubectl.json("get", "pod", "gated", "-n", namespace)
        return result

    wait_until(
        "the pod to be reported SchedulingGated",
        lambda: any(
            c.get("reason") == "SchedulingGated" for c in pod()["status"].get("conditions", [])
        ),
    )
    assert "nodeName" not in pod()["spec"]

    # One patch: the gate goes, and the required node affinity narrows to the node's name,
    # from the version read only.
    version = pod()["metadata"]["resourceVersion"]
    patch = json.dumps(release_patch(node, version, required_terms(spec) or ()))
    kubectl("patch", "pod", "gated", "-n", namespace, "--type=strategic", "-p", patch)

    wait_until("the pod to run", lambda: pod()["status"].get("phase") == "Running")
    assert pod()["spec"]["nodeName"] == node
    required = pod()["spec"]["affinity"]["nodeAffinity"]
    pinned = required["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert pinned == pinned_terms(node, required_terms(spec) or ())


def test_a_release_from_a_version_the_pod_has_left_is_refused_and_changes_nothing(
    kubectl: Kubectl, namespace: str
) -> None:
    """The resourceVersion in the release patch is a precondition the API server checks:
    a pod written since (here a label, as a new leader's release would write it) is
    not released from the older version."""
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "gated", "namespace": namespace},
            "spec": {
                "schedulingGates": [{"name": "scheduling.muster.dev/gang"}],
                "containers": [{"name": "work", "image": "busybox"}],
            },
        }
    )
    read = kubectl.json("get", "pod", "gated", "-n", namespace)["metadata"]["resourceVersion"]
    kubectl("label", "pod", "gated", "-n", namespace, "written=since")
    patch = json.dumps(release_patch("gpu-b1-7", read))
    stale = kubectl(
        "patch", "pod", "gated", "-n", namespace, "--type=strategic", "-p", patch, check=False
    )
    assert stale.returncode != 0
    assert "the object has been modified" in stale.stderr  # 409 Conflict
    pod = kubectl.json("get", "pod", "gated", "-n", namespace)
    assert pod["spec"]["schedulingGates"] == [{"name": "scheduling.muster.dev/gang"}]
    assert "affinity" not in pod["spec"]
