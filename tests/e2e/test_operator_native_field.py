"""Jobs that opt in through the native 1.37 field `spec.scheduling` run as gangs too.

Only on an API server that keeps the field (`hack/cluster.py up --job-scheduling-field`,
as the suite's cluster is started); elsewhere the API server drops it and those tests
are skipped. Two more control planes of their own: one with the cluster's own gang
scheduling on (`--native-gang`), where Muster must leave such Jobs alone, and a plain
one (no flags: the API server drops the field), where such a Job must run without
gang scheduling, as the API server stored it, and be told why (warned at apply, and
by an event).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from devtools.builds import ROOT
from devtools.cluster.local import LocalCluster
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.constants import GATED_FOR_ANNOTATION, GATED_FOR_FIELD
from muster.webhooks.advice import DROPPED_FIELD_WARNING
from tests.e2e.support.harness import (
    POD_GROUPS,
    bound,
    cluster_mode,
    events_for,
    installed_operator,
    is_gated,
    pod_group,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)
from tests.e2e.support.namespaces import fresh_namespace
from tests.e2e.support.observer import NATIVE, observing

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "examples" / "training-job-native.yaml"
EXAMPLE_JOB = "train-native"


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
        check=False,
    )
    if 'unknown field "spec.scheduling"' in answer.stderr:
        pytest.skip("this API server does not know Job spec.scheduling (before 1.37)")
    assert answer.returncode == 0, answer.stderr
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


@contextmanager
def muster_on_a_cluster_of_its_own(state: Path, *flags: str) -> Iterator[Kubectl]:
    """A control plane of this run's own (`cluster.py up` flags), with Muster running
    against it as on any other cluster."""
    cluster = LocalCluster.start(state, *flags)
    try:
        operator = installed_operator(cluster.kubeconfig, cluster.state_dir / "operator.log")
        next(operator)
        try:
            yield Kubectl(cluster.kubeconfig)
        finally:
            operator.close()
    finally:
        cluster.release()


@pytest.fixture(scope="module")
def native_gang_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """A second control plane whose own controllers and scheduler do gang scheduling."""
    with muster_on_a_cluster_of_its_own(
        tmp_path_factory.mktemp("native-gang"), "--native-gang"
    ) as kubectl:
        yield kubectl


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


def job_completed(kubectl: Kubectl, namespace: str, name: str) -> bool:
    job = kubectl.json("get", "job", name, "-n", namespace)
    conditions = job.get("status", {}).get("conditions") or []
    return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)


def test_the_native_example_runs_as_a_gang_where_the_field_is_kept(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    muster_schedules_the_field: None,
) -> None:
    """On the default simulated nodes, as `examples/` are written for."""
    kubectl("apply", "-n", namespace, "-f", str(EXAMPLE))

    pods = wait_all_bound(kubectl, namespace, EXAMPLE_JOB, 4)
    group = pod_group(kubectl, namespace, EXAMPLE_JOB)
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert {(c["type"], c["status"]) for c in group["status"]["conditions"]} >= {
        ("PodGroupInitiallyScheduled", "True")
    }
    zones = {
        kubectl.json("get", "node", pod["spec"]["nodeName"])["metadata"]["labels"][
            "topology.kubernetes.io/zone"
        ]
        for pod in pods
    }
    assert len(zones) == 1
    wait_until("the Job to complete", lambda: job_completed(kubectl, namespace, EXAMPLE_JOB))


@pytest.fixture(scope="module")
def plain_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """A control plane as `hack/cluster.py up` starts it without flags: like most 1.37
    clusters, its API server drops the Job `spec.scheduling` field."""
    with muster_on_a_cluster_of_its_own(tmp_path_factory.mktemp("plain")) as kubectl:
        yield kubectl


@pytest.fixture
def plain_namespace(plain_cluster: Kubectl, request: pytest.FixtureRequest) -> Iterator[str]:
    yield from fresh_namespace(plain_cluster, request.node.name)


def test_where_the_api_server_drops_the_field_the_example_runs_without_gang_scheduling(
    plain_cluster: Kubectl, plain_namespace: str
) -> None:
    kubectl, namespace = plain_cluster, plain_namespace
    dry_run = kubectl("apply", "-n", namespace, "--dry-run=server", "-f", str(EXAMPLE))
    assert dry_run.stderr.count(f"Warning: {DROPPED_FIELD_WARNING}") == 1  # told before, too
    applied = kubectl("apply", "-n", namespace, "-f", str(EXAMPLE))
    assert applied.stderr.count(f"Warning: {DROPPED_FIELD_WARNING}") == 1, applied.stderr

    stored = kubectl.json("get", "job", EXAMPLE_JOB, "-n", namespace)
    assert "scheduling" not in stored["spec"], "this API server keeps the field"
    template = stored["spec"]["template"]
    assert is_gated(template), "the webhook saw the field: the pods are born gated"
    assert template["metadata"]["annotations"][GATED_FOR_ANNOTATION] == GATED_FOR_FIELD

    wait_until("the Job to complete", lambda: job_completed(kubectl, namespace, EXAMPLE_JOB))
    pods = pods_of(kubectl, namespace, EXAMPLE_JOB)
    assert len(pods) == 4 and len(bound(pods)) == 4
    assert not any(is_gated(pod) for pod in pods)
    told = [
        event
        for event in events_for(kubectl, namespace, EXAMPLE_JOB)
        if event["reason"] == "SchedulingFieldDropped"
    ]
    assert len(told) == 1, told
    (event,) = told
    assert (event["type"], event["involvedObject"]["kind"]) == ("Warning", "Job")
    assert event["involvedObject"]["uid"] == stored["metadata"]["uid"]
    assert "WorkloadWithJob" in event["message"]
    assert "without gang scheduling" in event["message"]
    found = kubectl("get", POD_GROUPS, EXAMPLE_JOB, "-n", namespace, check=False)
    assert found.returncode != 0, "no PodGroup for a Job stored without its opt-in"
