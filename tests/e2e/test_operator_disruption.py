"""Gangs taken down and brought back: preemption and rollback.

An operator killed mid-release is a fault test: tests/e2e/faults/test_operator_killed.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from devtools.factories import NodePool, gang_job, held, lift_holds
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import (
    GROUP_LABEL,
    admissions_for,
    bound,
    events_for,
    explained,
    is_gated,
    pinned_to,
    pod_group,
    pods_of,
    scheduled_condition,
    simulated,
    steps_for,
    wait_all_bound,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e


def test_a_high_priority_gang_preempts_a_whole_lower_one_which_runs_again_later(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    priorities: tuple[str, str],
) -> None:
    low, high = priorities
    pool.add(gpus=4)
    kubectl.apply(gang_job("batch", pool, workers=2, gpus=2, priority_class=low), namespace)
    first = {pod["metadata"]["name"] for pod in wait_all_bound(kubectl, namespace, "batch", 2)}

    kubectl.apply(
        gang_job("urgent", pool, workers=2, gpus=2, priority_class=high, run_for="5s"),
        namespace,
    )
    wait_all_bound(kubectl, namespace, "urgent", 2)

    victim = pod_group(kubectl, namespace, "batch")
    conditions = {c["type"]: c for c in victim["status"]["conditions"]}
    assert conditions["PodGroupScheduled"]["reason"] in ("Preempted", "Unschedulable")
    assert conditions["PodGroupInitiallyScheduled"]["status"] == "True"
    assert conditions["DisruptionTarget"]["reason"] == "PreemptionByScheduler"
    remaining = pods_of(kubectl, namespace, "batch")
    assert not {pod["metadata"]["name"] for pod in remaining} & first, "a partial preemption"
    assert not bound(remaining)

    # When the urgent Job completes, the preempted gang is admitted again, whole.
    again = wait_all_bound(kubectl, namespace, "batch", 2, timeout=60)
    assert not {pod["metadata"]["name"] for pod in again} & first
    wait_for_reason(kubectl, namespace, "batch", "Scheduled")

    cycles = operator.replayed()
    [preemption] = admissions_for(cycles, namespace, "urgent")
    assert set(preemption["victims"]) == {f"{namespace}/{name}" for name in first}
    assert steps_for(cycles, namespace, "urgent")[0] == "preempt"
    assert len(admissions_for(cycles, namespace, "batch")) == 2


def test_a_gang_whose_node_is_cordoned_before_binding_rolls_back_and_lands_elsewhere(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    first_node = pool.add(gpus=4)
    # The hold gate keeps released pods from binding until the test lets them: the
    # window in which the planned node is cordoned.
    kubectl.apply(held(gang_job("train", pool, workers=2)), namespace)
    wait_for_reason(kubectl, namespace, "train", "Scheduled")
    planned = pod_group(kubectl, namespace, "train")["status"]["plan"]
    assert set(planned.values()) == {first_node}

    second_node = pool.add(gpus=4)
    kubectl("cordon", first_node)
    wait_for_reason(kubectl, namespace, "train", "RolledBack")
    wait_for_reason(kubectl, namespace, "train", "Scheduled", timeout=60)

    def released_to_second_node() -> bool:
        pods = pods_of(kubectl, namespace, "train")
        return len(pods) == 2 and all(
            not is_gated(pod) and pinned_to(pod) == second_node for pod in pods
        )

    wait_until("the gang released onto the second node", released_to_second_node)
    lift_holds(kubectl, namespace, pods_of(kubectl, namespace, "train"))
    pods = wait_all_bound(kubectl, namespace, "train", 2)
    assert {pod["spec"]["nodeName"] for pod in pods} == {second_node}


def test_a_gang_that_does_not_bind_in_time_is_rolled_back(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=2)
    operator.restart("--release-timeout=3", "--rollback-backoff=120")
    try:
        kubectl.apply(held(gang_job("stuck", pool, workers=2)), namespace)
        wait_for_reason(kubectl, namespace, "stuck", "Scheduled")
        first = set(pod_group(kubectl, namespace, "stuck")["status"]["plan"])
        condition = wait_for_reason(kubectl, namespace, "stuck", "RolledBack", timeout=20)
        assert "not bound within 3s" in condition["message"]
        assert "in backoff until" in condition["message"]
        assert "plan" not in pod_group(kubectl, namespace, "stuck")["status"]

        # Held in backoff: explain, and simulate over a dump of the cluster, say so in
        # the operator's words.
        explanation = explained(operator, namespace, "stuck")
        assert "Status:   waiting (RolledBack)" in explanation
        assert f"Message:  {condition['message']}" in explanation
        assert "Backoff:  until " in explanation and "Rollbacks: 1 in a row" in explanation
        entry = simulated(kubectl, namespace, "stuck")
        assert (entry["scheduled"], entry["reason"]) == (False, "RolledBack")
        assert entry["message"] == condition["message"]
        wait_until(
            "the stuck pods to be taken down",
            lambda: (
                not {p["metadata"]["name"] for p in pods_of(kubectl, namespace, "stuck")} & first
            ),
        )
    finally:
        operator.restart()


def plain_pod(name: str, pool: NodePool) -> dict[str, Any]:
    """A pod of no gang, asking for little, that kube-scheduler binds in the pool."""
    template = gang_job(name, pool, workers=1)["spec"]["template"]
    spec = {**template["spec"], "containers": [{"name": "main", "image": "tick"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_a_released_gang_waits_its_turn_while_kube_scheduler_keeps_binding(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """Its pods have no gate left and are not bound yet, as in a long queue of
    kube-scheduler's (here they name a scheduler that is not running): while
    kube-scheduler binds other pods the gang stays admitted past its release timeout,
    and once it has bound nothing for the timeout the gang is rolled back."""
    pool.add(gpus=2)
    operator.restart("--release-timeout=4", "--rollback-backoff=120")
    try:
        job = gang_job("queued", pool, workers=2)
        job["spec"]["template"]["spec"]["schedulerName"] = "e2e-not-running"
        kubectl.apply(job, namespace)
        wait_for_reason(kubectl, namespace, "queued", "Scheduled")
        released = time.monotonic()
        ticks = 0
        while time.monotonic() < released + 12:  # three release timeouts
            kubectl.apply(plain_pod(f"tick-{ticks}", pool), namespace)
            ticks += 1
            time.sleep(1)
            assert scheduled_condition(kubectl, namespace, "queued")["reason"] == "Scheduled"
        ticked = kubectl.json("get", "pods", "-n", namespace, "-l", "!" + GROUP_LABEL)["items"]
        assert sum(1 for pod in ticked if pod["spec"].get("nodeName")) >= ticks - 2
        assert not bound(pods_of(kubectl, namespace, "queued"))
        condition = wait_for_reason(kubectl, namespace, "queued", "RolledBack", timeout=30)
        assert "2 pod(s) not bound within 4s of release" in condition["message"]
    finally:
        operator.restart()


def test_a_preemptor_waits_for_victims_that_take_long_to_leave_and_keeps_its_place(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    priorities: tuple[str, str],
) -> None:
    """Victims stuck Terminating (a finalizer) for several release timeouts: the
    preemptor stays admitted with its plan, and binds once they are gone."""
    low, high = priorities
    pool.add(gpus=4)
    operator.restart("--release-timeout=3")
    try:
        kubectl.apply(gang_job("batch", pool, workers=2, gpus=2, priority_class=low), namespace)
        victims = [
            pod["metadata"]["name"] for pod in wait_all_bound(kubectl, namespace, "batch", 2)
        ]
        for victim in victims:
            kubectl(
                "patch",
                "pod",
                victim,
                "-n",
                namespace,
                "--type=merge",
                "-p",
                '{"metadata": {"finalizers": ["e2e.muster.dev/linger"]}}',
            )
        kubectl.apply(gang_job("urgent", pool, workers=2, gpus=2, priority_class=high), namespace)
        wait_for_reason(kubectl, namespace, "urgent", "Scheduled")

        reasons: set[str] = set()
        until = time.monotonic() + 12  # four release timeouts

        def four_timeouts_watched() -> bool:
            reasons.add(scheduled_condition(kubectl, namespace, "urgent").get("reason", ""))
            return time.monotonic() >= until

        wait_until("four release timeouts", four_timeouts_watched, timeout=60, interval=0.5)
        assert reasons == {"Scheduled"}
        assert "plan" in pod_group(kubectl, namespace, "urgent")["status"]

        for victim in victims:
            kubectl(
                "patch",
                "pod",
                victim,
                "-n",
                namespace,
                "--type=json",
                "-p",
                '[{"op": "remove", "path": "/metadata/finalizers"}]',
                check=False,
            )
            kubectl(
                "delete",
                "pod",
                victim,
                "-n",
                namespace,
                "--force",
                "--grace-period=0",
                "--ignore-not-found",
                check=False,
            )
        wait_all_bound(kubectl, namespace, "urgent", 2, timeout=60)
        rolled_back = [
            e for e in events_for(kubectl, namespace, "urgent") if e["reason"] == "RolledBack"
        ]
        assert not rolled_back
    finally:
        operator.restart()
