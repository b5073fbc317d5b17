from __future__ import annotations

from typing import Any

from bench.e2e.kueue import (
    TOPOLOGY_LEVELS,
    WorkloadView,
    active,
    collection_path,
    queue_manifests,
    quota,
)
from bench.e2e.workload import GPU, HOSTNAME_KEY, ZONE_KEY


def test_the_quota_is_the_clusters_capacity() -> None:
    assert quota(nodes=500, gpus_per_node=8) == {
        "cpu": "16000",
        "memory": str(500 * 256 * 2**30),
        GPU: "4000",
    }


def test_kueue_alone_gets_a_topology_of_zones_then_hosts() -> None:
    manifests = queue_manifests(namespace="bench", nodes=2, gpus_per_node=8, levels=TOPOLOGY_LEVELS)
    assert [m["kind"] for m in manifests] == [
        "Topology",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
    ]
    levels = [level["nodeLabel"] for level in manifests[0]["spec"]["levels"]]
    assert levels == [ZONE_KEY, HOSTNAME_KEY]
    flavor = manifests[1]["spec"]
    assert flavor["topologyName"] == manifests[0]["metadata"]["name"]
    assert flavor["nodeLabels"]  # Kueue refuses a topology flavor without them
    quota_of = {
        resource["name"]: resource["nominalQuota"]
        for resource in manifests[2]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    }
    assert quota_of[GPU] == "16"


def test_beside_muster_the_flavor_has_no_topology() -> None:
    manifests = queue_manifests(namespace="bench", nodes=2, gpus_per_node=8, levels=())
    assert [m["kind"] for m in manifests] == ["ResourceFlavor", "ClusterQueue", "LocalQueue"]
    assert "topologyName" not in manifests[0]["spec"]


def test_objects_are_created_where_their_scope_says() -> None:
    manifests = queue_manifests(namespace="bench", nodes=1, gpus_per_node=8, levels=TOPOLOGY_LEVELS)
    paths = [collection_path(manifest) for manifest in manifests]
    assert paths == [
        "/apis/kueue.x-k8s.io/v1beta2/topologies",
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/bench/localqueues",
    ]


def workload(
    job: str | None, *conditions: str, topology: bool = False, reason: str = "Because"
) -> dict[str, Any]:
    owners = [] if job is None else [{"kind": "Job", "name": job}]
    assignment: dict[str, Any] = {"name": "main"}
    if topology:
        assignment["topologyAssignment"] = {"levels": [HOSTNAME_KEY], "slices": []}
    return {
        "metadata": {"name": "job-x-1", "ownerReferences": owners},
        "status": {
            "conditions": [
                {"type": kind, "status": "True", "reason": reason} for kind in conditions
            ]
            + [{"type": "PodsReady", "status": "False"}],
            "admission": {"podSetAssignments": [assignment]},
        },
    }


def test_a_workload_names_its_job_and_what_kueue_decided() -> None:
    assert WorkloadView.of(workload("a", "QuotaReserved", "Admitted", topology=True)) == (
        WorkloadView(
            job="a", admitted=True, evicted=False, evicted_reason=None, topology_assigned=True
        )
    )
    assert WorkloadView.of(workload("a", "Evicted", reason="PodsReadyTimeout")) == WorkloadView(
        job="a",
        admitted=False,
        evicted=True,
        evicted_reason="PodsReadyTimeout",
        topology_assigned=False,
    )
    assert WorkloadView.of({"metadata": {"name": "fresh"}}) is None
    assert WorkloadView.of(workload(None, "Admitted")) is None


def test_a_queue_is_active_once_kueue_says_so() -> None:
    assert active({"status": {"conditions": [{"type": "Active", "status": "True"}]}})
    assert not active({"status": {"conditions": [{"type": "Active", "status": "False"}]}})
    assert not active({})
