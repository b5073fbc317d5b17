"""The operator under test: `muster run` as a real process, installed as users install it.

The `operator` fixture applies the rendered manifests (`devtools/installed.py`: the CRDs,
the ServiceAccount `muster-system/muster-operator` with exactly the manifests' RBAC,
the pod-rights policy that judges it, the webhook configurations), then starts
`muster run` with the Deployment's settings, authenticated by a token of that
ServiceAccount, and stops it at the end of the session. Where the manifests name the
Service, the webhook configurations call a stand-in on 127.0.0.1 that forwards each
connection to a ready replica, as the Service's endpoints would. A test may kill the
operator with SIGKILL and start it again to check restart safety, or start a second
replica. The session's operator records its trace, which a test may replay
(`OperatorProcess.replayed`). A replica runs from the image instead when given one
(`OperatorProcess.image`); a test marked `process_and_image` runs a second time with
every replica so (tests/e2e/support/image.py).

The launcher itself is devtools/operator.py, the objects the scenarios submit
devtools/factories.py; here are the fixtures and what the tests read back.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from devtools import installed
from devtools.builds import ROOT
from devtools.factories import NodePool
from devtools.kubectl import Kubectl
from devtools.operator import MUSTER, OperatorProcess, WebhookService
from devtools.waiting import wait_until

from muster.api.gates import has_gang_gate
from muster.simulation.replay import ReplayedCycle

GROUP_LABEL = "scheduling.muster.dev/pod-group"
# Fully qualified: an API server with native gang scheduling serves `podgroups` too.
POD_GROUPS = "podgroups.scheduling.muster.dev"
WORKLOADS = "workloads.scheduling.muster.dev"
WEBHOOK_CONFIGURATION = installed.WEBHOOK_CONFIGURATION
LEASE = ("lease", "muster-operator", "-n", installed.NAMESPACE)
# What the e2e operator sets beyond the Deployment's settings, and why: a rolled-back
# gang is tried again after 2 s instead of 10, so the rollback tests take seconds.
TEST_FLAGS = ("--rollback-backoff=2",)


def install_crds(kubectl: Kubectl) -> None:
    """Only the CRDs, for tests of the API that need no operator."""
    kubectl("apply", "-f", str(ROOT / "crds"))
    kubectl("wait", "--for=condition=Established", *installed.CRDS, "--timeout=30s")


def installed_operator(
    kubeconfig: Path, log_path: Path, *flags: str, record_trace: bool = False
) -> Generator[OperatorProcess]:
    """Muster installed from the manifests and one replica running until the generator
    is closed; the webhook configurations go with it, so that the cluster does not
    refuse opted-in Jobs once no replica serves them."""
    service = WebhookService(
        kubeconfig=kubeconfig,
        credentials=log_path.with_suffix(".kubeconfig"),
        settings={},
        flags=TEST_FLAGS,
    )
    service.settings = installed.install(kubeconfig, service.url)
    installed.service_account_kubeconfig(kubeconfig, service.credentials)
    service.start()
    process = OperatorProcess(
        service=service, log_path=log_path, flags=flags, record_trace=record_trace
    )
    try:
        process.start()
        yield process
    finally:
        for replica in service.replicas:
            replica.stop()
        service.stop()
        installed.remove_webhooks(kubeconfig)


@pytest.fixture(scope="session")
def operator(
    kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """`muster run` for the whole session, as installed, recording its trace."""
    log_path = Path(
        os.environ.get(
            "MUSTER_E2E_OPERATOR_LOG", tmp_path_factory.mktemp("operator") / "operator.log"
        )
    )
    yield from installed_operator(kubeconfig, log_path, record_trace=True)


# ---- building blocks of the scenarios ------------------------------------------------


def cluster_mode(kubeconfig: Path) -> str:
    """How `hack/cluster.py up` started the cluster: plain, job-field or native-gang."""
    mode = kubeconfig.parent / "mode"
    return mode.read_text().strip() if mode.exists() else "plain"


@pytest.fixture
def pool(kubectl: Kubectl) -> Iterator[NodePool]:
    created = NodePool(kubectl)
    yield created
    created.delete()


def pods_of(kubectl: Kubectl, namespace: str, group: str) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = kubectl.json(
        "get", "pods", "-n", namespace, "-l", f"{GROUP_LABEL}={group}"
    )["items"]
    return [pod for pod in pods if not pod["metadata"].get("deletionTimestamp")]


def node_selector_terms(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod's required node affinity terms, as the API server stores them."""
    affinity = (pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return list(required.get("nodeSelectorTerms") or [])


def pinned_to(pod: dict[str, Any]) -> str | None:
    """The node a released pod is pinned to: the `metadata.name` its node affinity requires."""
    for term in node_selector_terms(pod):
        for requirement in term.get("matchFields") or []:
            if requirement.get("key") == "metadata.name" and requirement.get("operator") == "In":
                return str(requirement["values"][0])
    return None


def is_gated(pod: dict[str, Any]) -> bool:
    return has_gang_gate(pod["spec"].get("schedulingGates") or [])


def pod_group(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kubectl.json("get", POD_GROUPS, name, "-n", namespace)
    return found


def group_status(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    """The PodGroup's status, or {} while the group (made by its Job's expansion) is missing."""
    found = kubectl("get", POD_GROUPS, name, "-n", namespace, "-o", "json", check=False)
    if found.returncode != 0:
        return {}
    status: dict[str, Any] = json.loads(found.stdout).get("status") or {}
    return status


def scheduled_condition(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    """The PodGroupScheduled condition, or {} while the group or condition is missing."""
    for item in group_status(kubectl, namespace, name).get("conditions") or []:
        if item["type"] == "PodGroupScheduled":
            return dict(item)
    return {}


def wait_for_reason(
    kubectl: Kubectl, namespace: str, name: str, reason: str, timeout: float = 30
) -> dict[str, Any]:
    wait_until(
        f"PodGroup {name} to say {reason}",
        lambda: scheduled_condition(kubectl, namespace, name).get("reason") == reason,
        timeout=timeout,
    )
    return scheduled_condition(kubectl, namespace, name)


def bound(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [pod for pod in pods if pod["spec"].get("nodeName")]


def wait_all_bound(
    kubectl: Kubectl, namespace: str, group: str, count: int, timeout: float = 30
) -> list[dict[str, Any]]:
    def done() -> bool:
        pods = pods_of(kubectl, namespace, group)
        return len(pods) == count and len(bound(pods)) == count

    wait_until(f"{count} pods of {group} bound", done, timeout=timeout)
    return pods_of(kubectl, namespace, group)


def muster(*args: str, stdin: str | None = None) -> str:
    """What the `muster` command prints (it must succeed)."""
    return subprocess.run(
        [*MUSTER, *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout


def explained(operator: OperatorProcess, namespace: str, name: str) -> str:
    """`muster explain podgroup NAME` against the test cluster."""
    return muster(
        "explain", "podgroup", name, "-n", namespace, f"--kubeconfig={operator.kubeconfig}"
    )


def simulated(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    """The PodGroup's entry in `muster simulate -o json` over a dump of the cluster
    (`kubectl get nodes,pods,podgroups,workloads,jobs,priorityclasses -A -o yaml`)."""
    kinds = f"nodes,pods,{POD_GROUPS},{WORKLOADS},jobs,priorityclasses"
    dump = kubectl("get", kinds, "-A", "-o", "yaml").stdout
    report = json.loads(muster("simulate", "-", "-o", "json", stdin=dump))
    [entry] = [
        group
        for group in report["podGroups"]
        if (group["namespace"], group["name"]) == (namespace, name)
    ]
    found: dict[str, Any] = entry
    return found


def steps_for(cycles: list[ReplayedCycle], namespace: str, name: str) -> list[str]:
    """The kinds of the steps decided for one PodGroup, cycle after cycle."""
    group = f"{namespace}/{name}"
    return [
        step["kind"]
        for cycle in cycles
        for step in cycle.replayed["steps"]
        if step["group"] == group
    ]


def admissions_for(cycles: list[ReplayedCycle], namespace: str, name: str) -> list[dict[str, Any]]:
    """The admissions decided for one PodGroup (placements, domain, victims), in order."""
    group = f"{namespace}/{name}"
    return [
        admission
        for cycle in cycles
        for admission in cycle.replayed["admissions"]
        if admission["group"] == group
    ]


def releases_for(cycles: list[ReplayedCycle], namespace: str, name: str) -> list[str]:
    """Every pod the operator's cycles released for one PodGroup, once per release."""
    group = f"{namespace}/{name}"
    return [
        pod
        for cycle in cycles
        for step in cycle.replayed["steps"]
        for action in step["actions"]
        if action.get("release") == group
        for pod, _ in action["placements"]
    ]


def events_for(kubectl: Kubectl, namespace: str, name: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = kubectl.json(
        "get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}"
    )["items"]
    return events


def gang_scheduled_by(kubectl: Kubectl, namespace: str, name: str) -> set[str]:
    """The replicas (`reportingInstance`) that reported the PodGroup `name` Scheduled."""
    return {
        event["reportingInstance"]
        for event in events_for(kubectl, namespace, name)
        if event["reason"] == "Scheduled" and event["involvedObject"]["kind"] == "PodGroup"
    }


@pytest.fixture
def volumes(kubectl: Kubectl) -> Iterator[list[str]]:
    """PersistentVolumes a test makes (cluster-scoped: its namespace does not take them)."""
    made: list[str] = []
    yield made
    for name in made:
        kubectl("delete", "pv", name, "--ignore-not-found", "--wait=false", check=False)


@pytest.fixture
def priorities(kubectl: Kubectl, namespace: str) -> Iterator[tuple[str, str]]:
    """A low and a high PriorityClass (100, 1000) for the test, removed after it."""
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, 100), (high, 1000)):
        kubectl.apply(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    yield low, high
    kubectl("delete", "priorityclass", low, high, "--ignore-not-found", check=False)
