"""Gang Jobs on the real control plane: all or nothing, with reasons users can read."""

from __future__ import annotations

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import (
    GROUP_LABEL,
    POD_GROUPS,
    WORKLOADS,
    admissions_for,
    bound,
    events_for,
    explained,
    is_gated,
    pod_group,
    pods_of,
    releases_for,
    steps_for,
    wait_all_bound,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e


def metric(text: str, name: str) -> float:
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))


def wait_three_bound_and_one_held(kubectl: Kubectl, namespace: str, name: str) -> None:
    def three_and_one() -> bool:
        pods = pods_of(kubectl, namespace, name)
        return len(bound(pods)) == 3 and sum(is_gated(pod) for pod in pods) == 1

    wait_until("three pods bound and the fourth held", three_and_one)


def test_four_worker_job_with_four_free_gpus_is_admitted_at_once(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=4)
    kubectl.apply(gang_job("train", pool, workers=4), namespace)

    pods = wait_all_bound(kubectl, namespace, "train", 4)
    assert {pod["metadata"]["labels"][GROUP_LABEL] for pod in pods} == {"train"}
    cycles = operator.replayed()
    [admission] = admissions_for(cycles, namespace, "train")
    assert admission["placements"] == {
        pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in pods
    }
    # Each pod released once: the answer to its release, not the watch, tells the
    # next cycle that it is released.
    assert sorted(releases_for(cycles, namespace, "train")) == sorted(admission["placements"])
    group = pod_group(kubectl, namespace, "train")
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    wait_for_reason(kubectl, namespace, "train", "Scheduled")
    assert set(pod_group(kubectl, namespace, "train")["status"]["plan"]) == {
        pod["metadata"]["name"] for pod in pods
    }
    listing = kubectl("get", POD_GROUPS, "-n", namespace).stdout
    assert "train" in listing

    def told() -> list[tuple[str, str]]:
        """Muster's events about the gang: (the object each is on, its reason)."""
        return sorted(
            (event["involvedObject"]["kind"], event["reason"])
            for event in events_for(kubectl, namespace, "train")
            if event.get("reportingComponent") == "muster"
        )

    # Two events for the gang, each on one object: the Job's PodGroup made, on the
    # Job; its admission, on the PodGroup, where `describe` shows it.
    wait_until(
        "the Job told Created and its PodGroup Scheduled, once each",
        lambda: told() == [("Job", "Created"), ("PodGroup", "Scheduled")],
    )
    described = kubectl("describe", POD_GROUPS, "train", "-n", namespace).stdout
    assert "4 pods placed" in described.split("Events:")[-1], described
    metrics = operator.metrics()
    for name in (
        "muster_gangs_admitted_total",
        "muster_pods_released_total",
        "muster_cycle_duration_seconds_count",
    ):
        assert metric(metrics, name) > 0, name

    kubectl("delete", "job", "train", "-n", namespace, "--wait=false")
    wait_until(
        "the Workload and PodGroup to go with their Job",
        lambda: not kubectl.json("get", f"{POD_GROUPS},{WORKLOADS}", "-n", namespace)["items"],
    )


def test_a_basic_job_gets_its_pod_group_but_its_pods_are_never_held(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=1)
    kubectl.apply(gang_job("loose", pool, workers=2, policy="basic"), namespace)

    wait_until(
        "one pod bound and one pending, ungated",
        lambda: (
            len(bound(pods_of(kubectl, namespace, "loose"))) == 1
            and len(pods_of(kubectl, namespace, "loose")) == 2
        ),
    )
    assert not any(is_gated(pod) for pod in pods_of(kubectl, namespace, "loose"))
    wait_until(
        "the basic PodGroup's counts",
        lambda: pod_group(kubectl, namespace, "loose").get("status", {}).get("minCount") == "basic",
    )


def test_three_free_gpus_hold_the_whole_gang_until_a_node_is_added(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=3)
    kubectl.apply(gang_job("train", pool, workers=4), namespace)

    condition = wait_for_reason(kubectl, namespace, "train", "Unschedulable")
    assert condition["status"] == "False"
    assert "needs 4 pods, at most 3 fit" in condition["message"]
    pods = pods_of(kubectl, namespace, "train")
    assert len(pods) == 4
    assert all(is_gated(pod) for pod in pods)
    assert not bound(pods)
    explanation = explained(operator, namespace, "train")
    assert "waiting (Unschedulable)" in explanation
    assert "needs 4, 4 exist, at most 3 fit at once" in explanation

    pool.add(gpus=4)
    wait_all_bound(kubectl, namespace, "train", 4)
    wait_for_reason(kubectl, namespace, "train", "Scheduled")


def test_two_gangs_that_cannot_both_fit_run_one_after_the_other(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    # 8 GPUs in 4 fragments of 2: a gang of 4 two-GPU workers takes all of them.
    for _ in range(4):
        pool.add(gpus=2)
    kubectl.apply(gang_job("first", pool, workers=4, gpus=2, run_for="6s"), namespace)
    wait_all_bound(kubectl, namespace, "first", 4)
    kubectl.apply(gang_job("second", pool, workers=4, gpus=2, run_for="1h"), namespace)

    wait_for_reason(kubectl, namespace, "second", "Unschedulable")
    waiting = pods_of(kubectl, namespace, "second")
    assert len(waiting) == 4 and all(is_gated(pod) for pod in waiting)

    wait_all_bound(kubectl, namespace, "second", 4, timeout=40)
    wait_until(
        "the first Job to complete",
        lambda: any(
            c["type"] == "Complete" and c["status"] == "True"
            for c in kubectl.json("get", "job", "first", "-n", namespace)
            .get("status", {})
            .get("conditions", [])
        ),
        timeout=30,
    )


def test_zone_topology_keeps_a_gang_in_one_zone_or_waits(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    for zone in ("a", "a", "b", "b"):
        pool.add(gpus=2, zone=f"{pool.name}-{zone}")
    topology = {"scheduling.muster.dev/topology-key": "topology.kubernetes.io/zone"}

    kubectl.apply(gang_job("wide", pool, workers=6, annotations=topology), namespace)
    condition = wait_for_reason(kubectl, namespace, "wide", "Unschedulable")
    assert "at most 4 fit" in condition["message"]
    assert not bound(pods_of(kubectl, namespace, "wide"))

    kubectl.apply(gang_job("narrow", pool, workers=4, annotations=topology), namespace)
    pods = wait_all_bound(kubectl, namespace, "narrow", 4)
    nodes = {pod["spec"]["nodeName"] for pod in pods}
    zones = {
        kubectl.json("get", "node", node)["metadata"]["labels"]["topology.kubernetes.io/zone"]
        for node in nodes
    }
    assert len(zones) == 1
    assert not bound(pods_of(kubectl, namespace, "wide"))


def test_members_beyond_min_count_are_released_as_they_fit(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=3)
    elastic = gang_job(
        "elastic", pool, workers=4, annotations={"scheduling.muster.dev/min-count": "2"}
    )
    kubectl.apply(elastic, namespace)

    wait_three_bound_and_one_held(kubectl, namespace, "elastic")
    wait_for_reason(kubectl, namespace, "elastic", "Scheduled")

    pool.add(gpus=1)
    wait_all_bound(kubectl, namespace, "elastic", 4)
    assert len(pod_group(kubectl, namespace, "elastic")["status"]["plan"]) == 4


def test_lowering_min_count_lets_a_waiting_gang_start_as_soon_as_the_new_quorum_fits(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=3)
    kubectl.apply(gang_job("train", pool, workers=4), namespace)
    wait_for_reason(kubectl, namespace, "train", "Unschedulable")

    kubectl(
        "annotate",
        "job",
        "train",
        "-n",
        namespace,
        "scheduling.muster.dev/min-count=3",
        "--overwrite",
    )
    wait_three_bound_and_one_held(kubectl, namespace, "train")
    wait_for_reason(kubectl, namespace, "train", "Scheduled")

    cycles = operator.replayed()
    [admission] = admissions_for(cycles, namespace, "train")
    placed = bound(pods_of(kubectl, namespace, "train"))
    assert admission["placements"] == {
        pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in placed
    }
    verdicts = [cycle.replayed["verdicts"].get(f"{namespace}/train") for cycle in cycles]
    assert any(verdict and verdict["reason"] == "Unschedulable" for verdict in verdicts)
    assert "admit" in steps_for(cycles, namespace, "train")
