"""A tenant cannot climb in priority: Muster as installed, `kubectl --as` a user bound
to the built-in `edit` role in its own namespace only (the chart folds PodGroups and
Workloads into `edit`, tenant-roles.yaml).

The tenant's gang waits behind another team's running gang of the same priority. Every
way of raising it is tried: a higher `spec.priority` or another class on the waiting
PodGroup, a made-up `system-` class with the highest value, a new PodGroup naming a
system class or a bare priority, and a PodGroup naming a higher class whose pods were
admitted with the lower one. Each write is refused naming the field, or leaves a gang
no higher than its pods; the other team's pods are watched from before the first
attempt to after the last cycle that judged the tenant's gangs, and none is ever taken
down.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from devtools.factories import GPU, NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.constants import POD_GROUP_LABEL
from tests.e2e.support.harness import (
    POD_GROUPS,
    admissions_for,
    pod_group,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)
from tests.e2e.support.namespaces import fresh_namespace

pytestmark = pytest.mark.e2e

TENANT = "tenant-climber"
HIGHEST_USER_PRIORITY = 1000000000


@dataclass
class PodWatch:
    """Every change the API server reports for a namespace's pods, from before the
    first attempt: a preemption shows as a deletionTimestamp or a DELETED event even
    if the pod is replaced at once."""

    kubectl: Kubectl
    namespace: str
    takedowns: list[str] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None
    reader: threading.Thread | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.kubectl.command(
                "get", "pods", "-n", self.namespace, "--watch", "--output-watch-events",
                "-o", "jsonpath={.type} {.object.metadata.name} "
                '{.object.metadata.deletionTimestamp}{"\\n"}',
            ),
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            kind, name, *deleting = line.split()
            if kind == "DELETED" or deleting:
                self.takedowns.append(f"{kind} {name}")

    def stop(self) -> None:
        assert self.process is not None
        assert self.process.poll() is None, "the watch ended before it was stopped"
        self.process.terminate()
        self.process.wait(timeout=10)


@dataclass(frozen=True)
class Tenant:
    """TENANT's requests in `namespace`, where it has the built-in `edit` role and
    nothing elsewhere; `kubectl` is the cluster admin's."""

    kubectl: Kubectl
    namespace: str

    def request(self, *args: str, **kwargs: Any) -> str:
        """What the request answered; "refused: " and stderr when it was refused."""
        result = self.kubectl(*args, "-n", self.namespace, f"--as={TENANT}", check=False, **kwargs)
        return result.stdout if result.returncode == 0 else f"refused: {result.stderr}"

    def create(self, manifest: dict[str, Any]) -> str:
        return self.request("create", "-f", "-", input=json.dumps(manifest))

    def patch_group(self, name: str, **spec: Any) -> str:
        patch = json.dumps({"spec": spec})
        return self.request("patch", POD_GROUPS, name, "--type=merge", "-p", patch)

    def group(self, name: str) -> dict[str, Any]:
        return pod_group(self.kubectl, self.namespace, name)


@pytest.fixture
def tenant(kubectl: Kubectl, request: pytest.FixtureRequest) -> Iterator[Tenant]:
    for name in fresh_namespace(kubectl, f"tenant-{request.node.name}"):
        kubectl(
            "create", "rolebinding", "edit", "--clusterrole=edit", f"--user={TENANT}", "-n", name
        )
        yield Tenant(kubectl, name)


def new_group(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec},
    }


def member_pod(name: str, group: str, pool: NodePool, priority_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {POD_GROUP_LABEL: group}},
        "spec": {
            "priorityClassName": priority_class,
            "nodeSelector": pool.selector,
            "tolerations": [pool.toleration],
            "containers": [
                {"name": "worker", "image": "trainer", "resources": {"limits": {GPU: "2"}}}
            ],
        },
    }


def test_a_tenant_cannot_raise_its_gangs_priority_above_another_teams(
    operator: OperatorProcess,
    namespace: str,
    tenant: Tenant,
    pool: NodePool,
    priorities: tuple[str, str],
) -> None:
    low, high = priorities
    kubectl = tenant.kubectl
    pool.add(gpus=4)
    kubectl.apply(gang_job("batch", pool, workers=2, gpus=2, priority_class=low), namespace)
    running = {pod["metadata"]["uid"] for pod in wait_all_bound(kubectl, namespace, "batch", 2)}
    watch = PodWatch(kubectl, namespace)
    watch.start()

    job = gang_job("climber", pool, workers=2, gpus=2, priority_class=low)
    assert not tenant.create(job).startswith("refused"), "edit may create Jobs"
    wait_for_reason(kubectl, tenant.namespace, "climber", "Unschedulable")
    assert tenant.group("climber")["spec"]["priority"] == 100

    refusals = {
        "spec.priority": tenant.patch_group("climber", priority=HIGHEST_USER_PRIORITY),
        "spec.priorityClassName": tenant.patch_group("climber", priorityClassName=high),
        "spec.priorityClassName (system)": tenant.patch_group(
            "climber", priorityClassName="system-x", priority=2147483647
        ),
    }
    for named, answer in refusals.items():
        assert answer.startswith("refused"), f"{named}: {answer}"
        assert named.split()[0] in answer, f"the refusal does not name {named}: {answer}"
    assert tenant.group("climber")["spec"]["priority"] == 100

    critical = tenant.create(new_group("critical", priorityClassName="system-cluster-critical"))
    assert critical.startswith("refused") and "spec.priorityClassName" in critical, critical
    bare = tenant.create(new_group("bare", priority=HIGHEST_USER_PRIORITY))
    assert bare.startswith("refused") and "spec.priority" in bare, bare

    # A class the tenant may name, higher than the other team's, over pods admitted
    # with the lower one: the gang is worth what its pods are, and does not preempt.
    assert not tenant.create(new_group("sneak", priorityClassName=high)).startswith("refused")
    for index in range(2):
        pod = member_pod(f"sneak-{index}", "sneak", pool, low)
        assert not tenant.create(pod).startswith("refused")
    assert tenant.group("sneak")["spec"]["priority"] == 1000

    # A cycle that began after every pod existed judged both gangs: still nothing of
    # the other team was touched.
    judged = len(operator.replayed())
    wait_until("one more cycle", lambda: len(operator.replayed()) > judged, timeout=45)
    watch.stop()
    assert watch.takedowns == [], f"the other team's pods were taken down: {watch.takedowns}"
    assert {pod["metadata"]["uid"] for pod in pods_of(kubectl, namespace, "batch")} == running
    cycles = operator.replayed()
    assert admissions_for(cycles, tenant.namespace, "climber") == []
    assert admissions_for(cycles, tenant.namespace, "sneak") == []
