"""Jobs that opt in through the native 1.37 field `spec.scheduling` run as gangs too.

Only on an API server that keeps the field (`hack/cluster.py up --job-scheduling-field`,
as the suite's cluster is started); elsewhere the API server drops it and these tests
are skipped. The last test brings up a second control plane with the cluster's own
gang scheduling on (`--native-gang`), where Muster must leave such Jobs alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import Kubectl, LocalCluster, fresh_namespace, wait_until
from tests.e2e.harness import (
    POD_GROUPS,
    NodePool,
    OperatorProcess,
    cluster_mode,
    events_for,
    gang_job,
    install_crds,
    is_gated,
    pod_group,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)
from tests.e2e.observer import NATIVE, observing

pytestmark = pytest.mark.e2e


def native_job(name: str, pool: NodePool, *, workers: int, gang: dict[str, Any]) -> dict[str, Any]:
    job = gang_job(name, pool, workers=workers)
    del job["metadata"]["labels"]["scheduling.muster.dev/policy"]
    job["spec"]["scheduling"] = {"schedulingPolicy": {"gang": gang}}
    return job


@pytest.fixture
def muster_schedules_the_field(kubeconfig: Path, field_kept: None) -> None:
    if cluster_mode(kubeconfig) == "native-gang":
        pytest.skip("the cluster's own gang scheduling takes these Jobs")


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
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    muster_schedules_the_field: None,
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
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    muster_schedules_the_field: None,
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


def native_workloads(kubectl: Kubectl, namespace: str) -> list[dict[str, Any]]:
    found = kubectl(
        "get", "workloads.scheduling.k8s.io", "-n", namespace, "-o", "json", check=False
    )
    if found.returncode != 0:
        return []
    items: list[dict[str, Any]] = json.loads(found.stdout)["items"]
    return items


@pytest.fixture(scope="module")
def native_gang_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """A second control plane whose own controllers and scheduler do gang scheduling,
    with Muster running against it as on any other cluster."""
    cluster = LocalCluster.start(tmp_path_factory.mktemp("native-gang"), "--native-gang")
    kubectl = Kubectl(cluster.kubeconfig)
    install_crds(kubectl)
    operator = OperatorProcess(
        kubeconfig=cluster.kubeconfig, log_path=cluster.state_dir / "operator.log"
    )
    operator.start()
    try:
        yield kubectl
    finally:
        operator.stop()
        cluster.release()


@pytest.fixture
def native_gang_namespace(
    native_gang_cluster: Kubectl, request: pytest.FixtureRequest
) -> Iterator[str]:
    yield from fresh_namespace(native_gang_cluster, request.node.name)


def test_where_the_cluster_schedules_gangs_itself_muster_leaves_the_job_alone(
    native_gang_cluster: Kubectl, native_gang_namespace: str
) -> None:
    """Under the gang observer, which knows the cluster's own gangs: it sees this one
    rise whole."""
    kubectl, namespace = native_gang_cluster, native_gang_namespace
    pool = NodePool(kubectl)
    pool.add(gpus=4)
    with observing(kubectl.kubeconfig, namespace) as observer:
        kubectl.apply(native_job("train", pool, workers=2, gang={"minCount": 2}), namespace)
        wait_until(
            "a native Workload for the Job", lambda: bool(native_workloads(kubectl, namespace))
        )

        wait_until(
            "the NativeGangScheduling event on the Job",
            lambda: any(
                event["reason"] == "NativeGangScheduling"
                for event in events_for(kubectl, namespace, "train")
            ),
        )
        wait_all_bound(kubectl, namespace, "train", 2)
        assert not any(is_gated(pod) for pod in pods_of(kubectl, namespace, "train"))
        assert kubectl("get", POD_GROUPS, "train", "-n", namespace, check=False).returncode != 0
        observer.finish()
    assert [rise.gang.startswith(NATIVE) for rise in observer.ledger.risen] == [True]
    pool.delete()
