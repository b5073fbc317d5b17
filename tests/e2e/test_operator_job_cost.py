"""Rollbacks and preemptions cost a Job nothing: no failure counted, no pod backoff.

The Jobs here are written as a new user would write them: no podFailurePolicy, the
default backoffLimit (6), or a backoffLimit of 0. Each rollback of a 4-pod gang
takes 4 pods down; were they counted, the second rollback would fail the Job
(8 failures > 6), and the Job controller would wait 10 s x 2^(failures - 1), capped
at 10 minutes, before creating the next pods.

Rollbacks come from kube-scheduler's refusal, as in test_operator_refusals.py: the
pods mount a volume labelled with a zone no node is in, so every node is refused
("had no available volume zone"), each in a zone of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import pods_of, wait_all_bound, wait_for_reason
from tests.e2e.test_operator_refusals import job_with_claim, refusals, volume_in

pytestmark = pytest.mark.e2e

ZONE = "topology.kubernetes.io/zone"
ROLLBACKS = 5


@pytest.fixture
def quick_rollbacks(operator: OperatorProcess) -> Iterator[OperatorProcess]:
    """Rollbacks only on refusal (no release timeout reached), readmitted within
    seconds, and planned again until `ROLLBACKS` refusals in a row."""
    operator.restart(
        "--release-timeout=120",
        f"--max-rollbacks={ROLLBACKS}",
        "--rollback-backoff=1",
        "--rollback-backoff-max=2",
    )
    yield operator
    operator.restart()


def job_status(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = kubectl.json("get", "job", name, "-n", namespace).get("status", {})
    return status


def assert_nothing_counted(kubectl: Kubectl, namespace: str, name: str) -> None:
    """The Job counted no failure and is not failing."""
    status = job_status(kubectl, namespace, name)
    assert status.get("failed", 0) == 0, status
    failing = {
        c["type"]
        for c in status.get("conditions") or []
        if c["type"] in ("Failed", "FailureTarget") and c["status"] == "True"
    }
    assert not failing, status


def rollbacks_in_a_row(kubectl: Kubectl, namespace: str, name: str) -> int:
    return int(refusals(kubectl, namespace, name).get("rollbacks", 0))


def test_five_rollbacks_in_a_row_cost_a_plain_job_nothing_and_it_then_runs_whole(
    quick_rollbacks: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    volumes: list[str],
) -> None:
    for index in range(ROLLBACKS):
        pool.add(gpus=4, zone=f"{namespace}-{index}")
    claim = volume_in(kubectl, namespace, f"{namespace}-ok")  # no node is there yet
    volumes.append(claim)
    job = job_with_claim("train", pool, claim, workers=4)
    del job["spec"]["backoffLimit"]  # the default, 6
    # One zone, one node: each plan puts the whole gang on one node.
    job["metadata"]["annotations"]["scheduling.muster.dev/topology-key"] = ZONE
    kubectl.apply(job, namespace)
    assert kubectl.json("get", "job", "train", "-n", namespace)["spec"]["backoffLimit"] == 6

    seen: list[int] = []

    def rolled_back_again() -> bool:
        # Checked at every step: a failure counted after the first rollback would
        # already be one too many.
        assert_nothing_counted(kubectl, namespace, "train")
        seen.append(rollbacks_in_a_row(kubectl, namespace, "train"))
        return ROLLBACKS in seen

    # Without the Job controller's backoff, each rollback's new pods come at once;
    # with it, the fourth pod set alone would wait 10 minutes (12 failures before it).
    wait_until(f"{ROLLBACKS} rollbacks in a row", rolled_back_again, timeout=300)
    # In a row: the count never fell back. A poll of a loaded machine may miss a step
    # (two rollbacks between two reads), so the steps are not each required.
    assert seen == sorted(seen), seen
    wait_for_reason(kubectl, namespace, "train", "Unschedulable", timeout=60)
    assert_nothing_counted(kubectl, namespace, "train")
    uids = {pod["metadata"]["uid"] for pod in pods_of(kubectl, namespace, "train")}
    assert len(uids) == 4

    # The obstacle goes: one node moves into the volume's zone. The gang lands there,
    # whole, and runs; the Job still counts no failure.
    kubectl("label", "node", pool.nodes[0], f"{ZONE}={namespace}-ok", "--overwrite")
    pods = wait_all_bound(kubectl, namespace, "train", 4, timeout=180)
    assert {pod["spec"]["nodeName"] for pod in pods} == {pool.nodes[0]}
    wait_for_reason(kubectl, namespace, "train", "Scheduled")
    wait_until(
        "the Job to run all 4 pods",
        lambda: (
            job_status(kubectl, namespace, "train").get("active") == 4
            and all(
                pod["status"].get("phase") == "Running"
                for pod in pods_of(kubectl, namespace, "train")
            )
        ),
        timeout=60,
    )
    assert_nothing_counted(kubectl, namespace, "train")


def test_a_preempted_job_with_restart_policy_on_failure_and_no_backoff_left_survives(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    priorities: tuple[str, str],
) -> None:
    """A podFailurePolicy cannot help this Job (it needs restartPolicy Never); a
    single counted eviction would fail it (backoffLimit 0)."""
    low, high = priorities
    pool.add(gpus=4)
    batch = gang_job("batch", pool, workers=2, gpus=2, priority_class=low)
    batch["spec"]["backoffLimit"] = 0
    batch["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    kubectl.apply(batch, namespace)
    first = {pod["metadata"]["uid"] for pod in wait_all_bound(kubectl, namespace, "batch", 2)}

    kubectl.apply(
        gang_job("urgent", pool, workers=2, gpus=2, priority_class=high, run_for="5s"),
        namespace,
    )
    wait_all_bound(kubectl, namespace, "urgent", 2, timeout=60)
    assert_nothing_counted(kubectl, namespace, "batch")

    # When the urgent Job completes, the preempted gang is admitted again, whole.
    again = wait_all_bound(kubectl, namespace, "batch", 2, timeout=90)
    assert not {pod["metadata"]["uid"] for pod in again} & first
    wait_for_reason(kubectl, namespace, "batch", "Scheduled")
    assert_nothing_counted(kubectl, namespace, "batch")
