"""Jobs that opt in through the native 1.37 field `spec.scheduling` run as gangs too.

Only on an API server that keeps the field (`hack/cluster.py up --job-scheduling-field`);
elsewhere the API server drops it and these tests are skipped.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.cluster import Kubectl, wait_until
from tests.e2e.harness import (
    NodePool,
    OperatorProcess,
    events_for,
    gang_job,
    is_gated,
    pod_group,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e


def native_job(name: str, pool: NodePool, *, workers: int, gang: dict[str, Any]) -> dict[str, Any]:
    job = gang_job(name, pool, workers=workers)
    del job["metadata"]["labels"]["scheduling.muster.dev/policy"]
    job["spec"]["scheduling"] = {"schedulingPolicy": {"gang": gang}}
    return job


@pytest.fixture
def field_kept(kubectl: Kubectl, namespace: str, pool: NodePool) -> None:
    probe = native_job("probe", pool, workers=1, gang={})
    answer = kubectl(
        "apply",
        "-n",
        namespace,
        "--dry-run=server",
        "-o",
        "json",
        "-f",
        "-",
        input=json.dumps(probe),
    )
    if "scheduling" not in json.loads(answer.stdout)["spec"]:
        pytest.skip("this API server drops Job spec.scheduling")


def test_a_native_gang_job_is_held_until_it_fits_then_admitted_whole(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool, field_kept: None
) -> None:
    pool.add(gpus=3)
    kubectl.apply(native_job("train", pool, workers=4, gang={}), namespace)

    wait_for_reason(kubectl, namespace, "train", "Unschedulable")
    assert pod_group(kubectl, namespace, "train")["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 4}
    }
    pods = pods_of(kubectl, namespace, "train")
    assert len(pods) == 4 and all(is_gated(pod) for pod in pods)

    pool.add(gpus=4)
    wait_all_bound(kubectl, namespace, "train", 4)


def test_the_field_wins_over_the_label_and_says_so(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool, field_kept: None
) -> None:
    pool.add(gpus=4)
    job = native_job("train", pool, workers=2, gang={"minCount": 2})
    job["metadata"]["labels"]["scheduling.muster.dev/policy"] = "basic"
    kubectl.apply(job, namespace)

    wait_all_bound(kubectl, namespace, "train", 2)
    assert pod_group(kubectl, namespace, "train")["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 2}
    }
    wait_until(
        "the OptInLabelIgnored warning on the Job",
        lambda: any(
            event["reason"] == "OptInLabelIgnored"
            for event in events_for(kubectl, namespace, "train")
        ),
    )
