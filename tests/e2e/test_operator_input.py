"""Invalid input is refused or reported clearly, and nothing else is disturbed."""

from __future__ import annotations

import json

import pytest
from devtools.factories import NodePool, gang_job, gang_pod_group
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import (
    GROUP_LABEL,
    POD_GROUPS,
    WORKLOADS,
    events_for,
    is_gated,
    wait_all_bound,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e


def test_bad_min_count_is_refused_and_a_good_gang_beside_it_runs(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=4)
    bad = gang_job("bad", pool, workers=4, annotations={"scheduling.muster.dev/min-count": "four"})
    refused = kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(bad), check=False)
    if refused.returncode == 0:
        # Admission let it through (its webhook ignores failures): the operator says why.
        wait_until(
            "an InvalidOptIn event on the Job",
            lambda: any(
                e["reason"] == "InvalidOptIn" for e in events_for(kubectl, namespace, "bad")
            ),
        )
        assert kubectl("get", POD_GROUPS, "bad", "-n", namespace, check=False).returncode != 0
    else:
        assert "min-count" in refused.stderr and "four" in refused.stderr

    kubectl.apply(gang_job("good", pool, workers=4), namespace)
    wait_all_bound(kubectl, namespace, "good", 4)


def test_a_gang_job_naming_a_missing_priority_class_is_refused_or_told_and_nothing_is_half_made(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """Refused at apply time naming the field and the class, or (when admission let
    it through) Muster's Warning on the Job naming the class; never a Workload
    without its PodGroup."""
    pool.add(gpus=2)
    job = gang_job("research", pool, workers=2, priority_class="research")
    refused = kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(job), check=False)
    if refused.returncode == 0:
        wait_until(
            "Muster's InvalidOptIn warning on the Job, naming the class",
            lambda: any(
                e["reason"] == "InvalidOptIn" and '"research"' in e["message"]
                for e in events_for(kubectl, namespace, "research")
            ),
            timeout=10,
        )
    else:
        assert "spec.template.spec.priorityClassName" in refused.stderr
        assert 'PriorityClass "research" not found' in refused.stderr
    for kind in (WORKLOADS, POD_GROUPS):
        made = kubectl("get", kind, "-n", namespace, "-o", "name").stdout.split()
        assert made == [], (kind, made)


def test_a_pod_of_a_missing_pod_group_stays_gated_until_the_group_exists(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=1)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "lonely", "labels": {GROUP_LABEL: "ghost"}},
        "spec": {
            "nodeSelector": pool.selector,
            "tolerations": [pool.toleration],
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }
    kubectl.apply(pod, namespace)
    wait_until(
        "a PodGroupNotFound event on the pod",
        lambda: any(
            e["reason"] == "PodGroupNotFound" for e in events_for(kubectl, namespace, "lonely")
        ),
    )
    assert is_gated(kubectl.json("get", "pod", "lonely", "-n", namespace))

    kubectl.apply(gang_pod_group("ghost", 1), namespace)
    wait_for_reason(kubectl, namespace, "ghost", "Scheduled")
    wait_until(
        "the pod to be bound",
        lambda: bool(kubectl.json("get", "pod", "lonely", "-n", namespace)["spec"].get("nodeName")),
    )
