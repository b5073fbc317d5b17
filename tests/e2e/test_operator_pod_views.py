"""The operator keeps the pods kube-scheduler keeps, and every gang member.

Finished pods hold no capacity and, on a busy cluster, outnumber the others, so the
operator does not keep a finished pod unless it belongs to a gang (a finished member
still counts towards its gang and tells how long its pods run). Asserted against the
API server: the operator's `muster_cached_pods` equals the cluster's pods that are
not Succeeded or Failed plus its finished gang members, at a moment when this test's
finished Job pods are among the cluster's pods.
"""

from __future__ import annotations

from typing import Any

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.constants import POD_GROUP_LABEL, POLICY_LABEL
from tests.e2e.faults.faults import metric_total

pytestmark = pytest.mark.e2e

FINISHED = ("Succeeded", "Failed")


def kept_by_operator(pod: dict[str, Any]) -> bool:
    finished = pod.get("status", {}).get("phase") in FINISHED
    return not finished or POD_GROUP_LABEL in (pod["metadata"].get("labels") or {})


def completed(kubectl: Kubectl, namespace: str, name: str, pods: int) -> bool:
    status = kubectl.json("get", "job", name, "-n", namespace).get("status", {})
    return bool(status.get("succeeded", 0) == pods)


def test_finished_pods_are_kept_only_when_they_belong_to_a_gang(
    kubectl: Kubectl, namespace: str, pool: NodePool, operator: OperatorProcess
) -> None:
    pool.add(gpus=8)
    plain = gang_job("plain", pool, workers=3, run_for="1s")
    del plain["metadata"]["labels"][POLICY_LABEL]
    kubectl.apply(plain, namespace)
    kubectl.apply(gang_job("gang", pool, workers=2, run_for="1s"), namespace)
    wait_until("Job plain to complete", lambda: completed(kubectl, namespace, "plain", 3))
    wait_until("Job gang to complete", lambda: completed(kubectl, namespace, "gang", 2))

    observed: dict[str, int] = {}

    def cache_matches_the_cluster() -> bool:
        pods = kubectl.json("get", "pods", "-A")["items"]
        mine = [pod for pod in pods if pod["metadata"]["namespace"] == namespace]
        observed.update(
            cluster=len(pods),
            kept=sum(kept_by_operator(pod) for pod in pods),
            finished_plain=sum(not kept_by_operator(pod) for pod in mine),
            finished_members=sum(
                kept_by_operator(pod) and pod["status"].get("phase") in FINISHED for pod in mine
            ),
            cached=int(metric_total(operator, "muster_cached_pods")),
        )
        return observed["cached"] == observed["kept"]

    wait_until(f"the operator's pods to be the kept ones ({observed})", cache_matches_the_cluster)
    assert observed["finished_plain"] == 3, observed
    assert observed["finished_members"] == 2, observed
    assert observed["cluster"] >= observed["kept"] + 3, observed
