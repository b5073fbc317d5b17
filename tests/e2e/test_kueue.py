"""Kueue decides when a Job may start (quota), Muster whether and where it fits now.

A real Kueue (v0.17, `hack/cluster.py up --kueue`) runs beside the operator. Jobs
carry both Kueue's queue-name label and Muster's gang opt-in: Kueue creates them
suspended, admits them against its ClusterQueue's quota by unsuspending them (with
its ResourceFlavor's node labels in their pod template), and Muster gang-admits and
places the pods the Job controller then makes. The gang observer watches every
test: no gang is ever partly bound.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import (
    bound,
    is_gated,
    pods_of,
    scheduled_condition,
    wait_all_bound,
    wait_for_reason,
)
from tests.e2e.support.kueue import (
    FLAVOR_LABEL,
    KueueQueue,
    kueue_workload,
    suspended,
    wait_for_workload,
    workload_condition,
)

HOSTNAME = "kubernetes.io/hostname"
TOPOLOGY_ANNOTATION = "scheduling.muster.dev/topology-key"


def test_quota_admits_two_gangs_the_third_waits_in_kueue_then_runs(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    kueue_queue: Callable[..., KueueQueue],
) -> None:
    flavored = [pool.add(gpus=4, labels={FLAVOR_LABEL: namespace}) for _ in range(2)]
    outside = pool.add(gpus=4)  # in the pool, but not of the queue's flavor
    queue = kueue_queue(gpus=8)

    kubectl.apply(gang_job("first", pool, workers=4, run_for="30s", labels=queue.labels), namespace)
    kubectl.apply(gang_job("second", pool, workers=4, labels=queue.labels), namespace)
    running = [*wait_all_bound(kubectl, namespace, "first", 4, timeout=60)]
    running += wait_all_bound(kubectl, namespace, "second", 4, timeout=60)

    # Kueue's quota is used up: the third waits in Kueue's queue, suspended, podless.
    kubectl.apply(gang_job("third", pool, workers=4, labels=queue.labels), namespace)
    pending = wait_for_workload(kubectl, namespace, "third", "QuotaReserved", "Pending")
    assert pending["status"] == "False" and "nvidia.com/gpu" in pending["message"]
    assert suspended(kubectl, namespace, "third")
    assert pods_of(kubectl, namespace, "third") == []
    assert wait_for_reason(kubectl, namespace, "third", "WaitingForPods")["status"] == "False"
    assert not suspended(kubectl, namespace, "first")

    # The first finishes; Kueue admits the third, and Muster runs it as a gang.
    wait_until(
        "the first Job to complete",
        lambda: any(
            c["type"] == "Complete" and c["status"] == "True"
            for c in kubectl.json("get", "job", "first", "-n", namespace)["status"].get(
                "conditions", []
            )
        ),
        timeout=90,
    )
    running += wait_all_bound(kubectl, namespace, "third", 4, timeout=90)
    assert workload_condition(kubectl, namespace, "third", "Admitted")["status"] == "True"
    assert wait_for_reason(kubectl, namespace, "third", "Scheduled")["status"] == "True"

    # Kueue's flavor put its node labels into each admitted Job; Muster placed by them.
    for job in ("first", "second", "third"):
        selector = kubectl.json("get", "job", job, "-n", namespace)["spec"]["template"]["spec"][
            "nodeSelector"
        ]
        assert selector[FLAVOR_LABEL] == namespace
    assert {pod["spec"]["nodeName"] for pod in running} <= set(flavored)
    assert outside not in {pod["spec"]["nodeName"] for pod in running}


def test_admitted_by_quota_but_fragmented_muster_holds_it_and_kueue_takes_it_back(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    kueue_queue: Callable[..., KueueQueue],
) -> None:
    for _ in range(4):
        pool.add(gpus=1, labels={FLAVOR_LABEL: namespace})
    queue = kueue_queue(gpus=4)
    one_node = {TOPOLOGY_ANNOTATION: HOSTNAME}

    kubectl.apply(
        gang_job("together", pool, workers=4, annotations=one_node, labels=queue.labels),
        namespace,
    )
    held = wait_for_reason(kubectl, namespace, "together", "Unschedulable", timeout=60)
    assert workload_condition(kubectl, namespace, "together", "Admitted")["status"] == "True"
    assert not suspended(kubectl, namespace, "together")
    assert f"in any one {HOSTNAME} domain" in held["message"], held["message"]
    assert "at most 1 fit" in held["message"], held["message"]
    pods = pods_of(kubectl, namespace, "together")
    assert len(pods) == 4 and all(is_gated(pod) for pod in pods) and not bound(pods)

    # A Job that fits the same nodes waits in Kueue's queue: the quota is taken.
    kubectl.apply(gang_job("spread", pool, workers=4, labels=queue.labels), namespace)
    wait_for_workload(kubectl, namespace, "spread", "QuotaReserved", "Pending")

    # Its pods never become Ready, so Kueue's waitForPodsReady evicts it: the Job is
    # suspended, its pods go, and its quota goes to the Job that fits.
    wait_for_workload(kubectl, namespace, "together", "Evicted", "PodsReadyTimeout", timeout=120)
    pods = wait_all_bound(kubectl, namespace, "spread", 4, timeout=90)
    assert len({pod["spec"]["nodeName"] for pod in pods}) == 4
    wait_until("the held Job to be suspended", lambda: suspended(kubectl, namespace, "together"))
    wait_until(
        "the held Job's pods to be gone",
        lambda: pods_of(kubectl, namespace, "together") == [],
        timeout=60,
    )
    waiting = wait_for_reason(kubectl, namespace, "together", "WaitingForPods")
    assert waiting["status"] == "False"
    assert scheduled_condition(kubectl, namespace, "spread")["reason"] == "Scheduled"
    assert kueue_workload(kubectl, namespace, "together")["spec"].get("active", True)


@pytest.mark.usefixtures("operator")
def test_a_gang_kueue_preempts_waits_podless_and_runs_whole_when_readmitted(
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    priorities: tuple[str, str],
    kueue_queue: Callable[..., KueueQueue],
) -> None:
    low, high = priorities
    for _ in range(2):
        pool.add(gpus=2, labels={FLAVOR_LABEL: namespace})
    queue = kueue_queue(gpus=4, preempt_lower=True)

    kubectl.apply(
        gang_job("background", pool, workers=4, priority_class=low, labels=queue.labels),
        namespace,
    )
    wait_all_bound(kubectl, namespace, "background", 4, timeout=60)
    wait_for_reason(kubectl, namespace, "background", "Scheduled")

    # Kueue preempts the running gang (suspends its Job) for the urgent one.
    kubectl.apply(
        gang_job(
            "urgent", pool, workers=4, run_for="20s", priority_class=high, labels=queue.labels
        ),
        namespace,
    )
    wait_for_workload(kubectl, namespace, "background", "Evicted", "Preempted", timeout=60)
    wait_all_bound(kubectl, namespace, "urgent", 4, timeout=60)
    assert suspended(kubectl, namespace, "background")
    assert pods_of(kubectl, namespace, "background") == []
    # Podless, the gang is no longer admitted: it holds nothing and says it waits.
    waiting = wait_for_reason(kubectl, namespace, "background", "WaitingForPods")
    assert waiting["status"] == "False"
    assert waiting["message"] == "0/4 member pods exist; waiting for 4 more"

    # The urgent Job finishes; Kueue admits the background one again, and Muster
    # places its new pods as a whole gang.
    wait_all_bound(kubectl, namespace, "background", 4, timeout=120)
    assert wait_for_reason(kubectl, namespace, "background", "Scheduled")["status"] == "True"
