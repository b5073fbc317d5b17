"""Admission as upstream's: a PodGroup's workloadRef must resolve, a pod that names
its node is not gated (and counts as a bound member of its gang), and a resized gang
Job's PodGroup follows its minCount, while a size the Job cannot run is refused; a
labelled Job costs one webhook call, its gating."""

from __future__ import annotations

import concurrent.futures
import json
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from bench.e2e.spending import webhook_calls
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.constants import BYPASSED_ANNOTATION
from tests.e2e.support.harness import (
    GROUP_LABEL,
    POD_GROUPS,
    WORKLOADS,
    cluster_mode,
    events_for,
    is_gated,
    pod_group,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e

API_VERSION = "scheduling.muster.dev/v1beta1"
MIN_COUNT = "scheduling.muster.dev/min-count"


def workload(name: str, *templates: str, finalizers: list[str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {"name": name, "finalizers": finalizers or []},
        "spec": {
            "podGroupTemplates": [
                {"name": template, "schedulingPolicy": {"gang": {"minCount": 2}}}
                for template in templates
            ]
        },
    }


def referring(name: str, workload_name: str, template: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {
            "workloadRef": {"workloadName": workload_name, "templateName": template},
            "schedulingPolicy": {"gang": {"minCount": 2}},
        },
    }


def create(kubectl: Kubectl, namespace: str, manifest: dict[str, Any]) -> Any:
    return kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(manifest), check=False)


def test_a_workload_ref_must_name_an_existing_workload_and_template(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str
) -> None:
    refused = create(kubectl, namespace, referring("typo", "mpii", "workers"))
    assert refused.returncode != 0
    assert 'spec.workloadRef.workloadName: Forbidden: Workload "mpii" not found' in refused.stderr

    # Applied together, as users do: the PodGroup's admission finds the new Workload.
    items = [workload("mpi", "workers"), referring("mpi-workers-by-hand", "mpi", "workers")]
    both = {"apiVersion": "v1", "kind": "List", "items": items}
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(both))

    refused = create(kubectl, namespace, referring("launcher", "mpi", "launcher"))
    assert refused.returncode != 0
    assert (
        'spec.workloadRef.templateName: Forbidden: Workload "mpi" has no podGroupTemplate'
        ' "launcher"'
    ) in refused.stderr

    plain = {**referring("plain", "-", "-"), "spec": {"schedulingPolicy": {"basic": {}}}}
    assert create(kubectl, namespace, plain).returncode == 0


def test_admission_asks_the_api_server_from_the_webhook_thread(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str
) -> None:
    """The webhooks answer on a thread and event loop of their own, while the client
    they ask the API server with belongs to the operator's loop. A reference the
    Workload cache cannot honour is looked up live before it is refused: several at
    once, each is refused with the API server's present answer (not an error of the
    webhook), and one whose Workload the cache may not hold yet is admitted."""
    names = [f"missing-{index}" for index in range(6)]
    with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
        refusals = list(
            pool.map(lambda name: create(kubectl, namespace, referring(name, name, "w")), names)
        )
    for name, refused in zip(names, refusals, strict=True):
        assert refused.returncode != 0
        expected = f'spec.workloadRef.workloadName: Forbidden: Workload "{name}" not found'
        assert expected in refused.stderr, refused.stderr

    kubectl.apply(workload("fresh", "workers"), namespace)
    created = create(kubectl, namespace, referring("fresh-workers-by-hand", "fresh", "workers"))
    assert created.returncode == 0, created.stderr


def test_a_workload_being_deleted_may_not_be_referred_to(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str
) -> None:
    finalizer = "example.com/hold"
    kubectl.apply(workload("leaving", "workers", finalizers=[finalizer]), namespace)
    try:
        kubectl("delete", WORKLOADS, "leaving", "-n", namespace, "--wait=false")
        wait_until(
            "the Workload to be marked for deletion",
            lambda: bool(
                kubectl.json("get", WORKLOADS, "leaving", "-n", namespace)["metadata"].get(
                    "deletionTimestamp"
                )
            ),
        )
        refused = create(kubectl, namespace, referring("late", "leaving", "workers"))
        assert refused.returncode != 0
        assert 'Forbidden: Workload "leaving" is being deleted' in refused.stderr
    finally:
        kubectl(
            "patch", WORKLOADS, "leaving", "-n", namespace, "--type=merge",
            "-p", '{"metadata":{"finalizers":[]}}', check=False,
        )  # fmt: skip


def member(name: str, group: str, pool: NodePool, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeSelector": pool.selector,
        "tolerations": [pool.toleration],
        "containers": [
            {"name": "main", "image": "trainer", "resources": {"requests": {"cpu": "1"}}}
        ],
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {GROUP_LABEL: group}},
        "spec": spec,
    }


def test_a_pod_that_names_its_node_is_admitted_ungated_and_counts_as_a_bound_member(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    node = pool.add(gpus=0, cpu="2")
    gang = {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": "restored"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
    }
    kubectl.apply(gang, namespace)

    created = create(kubectl, namespace, member("restored-0", "restored", pool, node=node))
    assert created.returncode == 0, created.stderr
    assert "bypasses gang admission" in created.stderr
    (pod,) = pods_of(kubectl, namespace, "restored")
    assert not is_gated(pod) and pod["spec"]["nodeName"] == node
    assert pod["metadata"]["annotations"][BYPASSED_ANNOTATION] == node
    wait_until(
        "a BypassedGangAdmission event on the pod, from the leader",
        lambda: any(
            event["reason"] == "BypassedGangAdmission"
            and event["type"] == "Warning"
            and "PodGroup restored" in event["message"]
            and event["involvedObject"].get("uid") == pod["metadata"]["uid"]
            and event["reportingInstance"] == operator.identity
            for event in events_for(kubectl, namespace, "restored-0")
        ),
    )

    # The bound pod holds one of the node's two CPUs: two more members cannot both fit,
    # and the gang (the bound pod counted) is short of capacity, not of pods.
    for index in (1, 2):
        kubectl.apply(member(f"restored-{index}", "restored", pool), namespace)
    condition = wait_for_reason(kubectl, namespace, "restored", "Unschedulable")
    assert "cpu" in condition["message"]
    status = pod_group(kubectl, namespace, "restored")["status"]["pods"]
    assert (status["total"], status["gated"]) == (3, 2)

    # One more CPU on another node: the two gated members start beside the bound one.
    pool.add(gpus=0, cpu="1")
    wait_all_bound(kubectl, namespace, "restored", 3)
    wait_for_reason(kubectl, namespace, "restored", "Scheduled")


def test_a_forged_review_posted_to_the_pod_webhook_writes_nothing(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """Anyone who reaches the webhook port may post a review of their own making: the
    answer is all they get (the webhooks declare `sideEffects: None`). Before, such a
    review of a pod that names its node made a Warning event in any namespace."""
    forged = member("forged-0", "forged", pool, node="any-node")
    forged["metadata"]["namespace"] = namespace
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "b5a0d9bc-0000-4000-8000-000000000001",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "forged-0",
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "system:anonymous"},
            "object": forged,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the caller is anyone: no trust needed
    request = urllib.request.Request(
        f"https://127.0.0.1:{operator.webhook_port}/gate-pods",
        data=json.dumps(review).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        answer = json.loads(response.read())["response"]
    assert answer["allowed"] is True
    assert any("bypasses gang admission" in warning for warning in answer["warnings"])
    # The handler used to write its event before it answered: none is there now.
    events = kubectl.json("get", "events", "-n", namespace)["items"]
    assert events == [], events


def min_count(kubectl: Kubectl, namespace: str, kind: str, name: str) -> int:
    obj = kubectl.json("get", kind, name, "-n", namespace)
    if kind == POD_GROUPS:
        policy = obj["spec"]["schedulingPolicy"]
    else:
        policy = obj["spec"]["podGroupTemplates"][0]["schedulingPolicy"]
    return int(policy["gang"]["minCount"])


def wait_min_count(kubectl: Kubectl, namespace: str, name: str, expected: int) -> None:
    for kind in ("workloads.scheduling.muster.dev", POD_GROUPS):

        def followed(kind: str = kind) -> bool:
            found = kubectl("get", kind, name, "-n", namespace, check=False).returncode == 0
            return found and min_count(kubectl, namespace, kind, name) == expected

        wait_until(f"{kind} {name} to have minCount {expected}", followed)


def test_a_resized_gang_job_has_its_podgroup_follow_and_an_impossible_size_is_refused(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=0)
    job = gang_job("elastic", pool, workers=2, gpus=0)
    job["spec"].pop("completions")
    kubectl.apply(job, namespace)
    wait_min_count(kubectl, namespace, "elastic", 2)

    kubectl("patch", "job", "elastic", "-n", namespace, "-p", '{"spec":{"parallelism":3}}')
    wait_min_count(kubectl, namespace, "elastic", 3)
    wait_until(
        "a MinCountChanged event on the Job",
        lambda: any(
            event["reason"] == "MinCountChanged"
            for event in events_for(kubectl, namespace, "elastic")
        ),
    )

    kubectl("annotate", "job", "elastic", "-n", namespace, f"{MIN_COUNT}=2")
    wait_min_count(kubectl, namespace, "elastic", 2)

    refused = kubectl(
        "annotate", "job", "elastic", "-n", namespace, "--overwrite", f"{MIN_COUNT}=5",
        check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert f"metadata.annotations[{MIN_COUNT}]: 5 exceeds spec.parallelism 3" in refused.stderr
    assert min_count(kubectl, namespace, POD_GROUPS, "elastic") == 2


def native_field_kept(kubectl: Kubectl, job: dict[str, Any]) -> bool:
    probe = kubectl(
        "create", "--dry-run=server", "-n", "default", "-o", "json", "-f", "-",
        input=json.dumps(job),
    )  # fmt: skip
    return "scheduling" in json.loads(probe.stdout)["spec"]


def test_a_native_gang_job_resized_has_its_podgroup_follow(
    operator: OperatorProcess, kubectl: Kubectl, kubeconfig: Path, namespace: str, pool: NodePool
) -> None:
    if cluster_mode(kubeconfig) == "native-gang":
        pytest.skip("the cluster's own gang scheduling takes native Jobs")
    job = gang_job("native", pool, workers=2, gpus=0)
    del job["metadata"]["labels"]["scheduling.muster.dev/policy"]
    job["spec"].pop("completions")
    job["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    if not native_field_kept(kubectl, job):
        pytest.skip("this API server drops Job spec.scheduling (WorkloadWithJob is off)")
    pool.add(gpus=0)
    kubectl.apply(job, namespace)
    wait_min_count(kubectl, namespace, "native", 2)
    gang = {"schedulingPolicy": {"gang": {"minCount": 3}}}
    patch = {"spec": {"parallelism": 3, "scheduling": gang}}
    kubectl("patch", "job", "native", "-n", namespace, "--type=merge", "-p", json.dumps(patch))
    wait_min_count(kubectl, namespace, "native", 3)

    too_many = {"spec": {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 4}}}}}
    refused = kubectl(
        "patch", "job", "native", "-n", namespace, "--type=merge", "-p", json.dumps(too_many),
        check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "spec.scheduling.schedulingPolicy.gang.minCount" in refused.stderr


def test_a_job_pod_that_names_its_node_still_reaches_the_pod_webhook(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """The pod webhook skips a Job's pods (their template is gated), but not one that
    names its node: the API server refuses a bound pod with a gate, so without the
    webhook taking the gate away the Job could not create its pod at all."""
    node = pool.add(gpus=1)
    job = gang_job("pinned", pool, workers=1)
    job["spec"]["template"]["spec"]["nodeName"] = node
    kubectl.apply(job, namespace)

    (pod,) = wait_all_bound(kubectl, namespace, "pinned", 1)
    assert not is_gated(pod) and pod["spec"]["nodeName"] == node
    wait_until(
        "a BypassedGangAdmission event on the pod",
        lambda: any(
            event["reason"] == "BypassedGangAdmission"
            for event in events_for(kubectl, namespace, pod["metadata"]["name"])
        ),
    )


def test_a_labelled_gang_job_costs_one_webhook_call_and_its_podgroup_has_its_priority(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    priorities: tuple[str, str],
) -> None:
    """Its gating validates it; the Workload and PodGroup the operator makes for it
    call no webhook (the operator resolves the PodGroup's priority itself); its pods
    are gated by its template."""
    _, high = priorities
    pool.add(gpus=4)
    before = webhook_calls(kubectl("get", "--raw", "/metrics").stdout)
    for name in ("first", "second"):
        kubectl.apply(gang_job(name, pool, workers=2, priority_class=high), namespace)
    for name in ("first", "second"):
        wait_all_bound(kubectl, namespace, name, 2)
        wait_for_reason(kubectl, namespace, name, "Scheduled")
    made = webhook_calls(kubectl("get", "--raw", "/metrics").stdout) - before
    assert made == {"gate-jobs.scheduling.muster.dev": 2}
    spec = kubectl.json("get", POD_GROUPS, "first", "-n", namespace)["spec"]
    assert (spec["priorityClassName"], spec["priority"]) == (high, 1000)
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
