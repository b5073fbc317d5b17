"""Adopted PodGroups on the real control plane (docs/frameworks.md).

The PodGroup CRDs are the real ones: scheduler-plugins' from its Go module, Volcano's
generated from the types of its API module (`hack/build.sh --adopted-crds-only`). No
Volcano or coscheduling scheduler runs. The tests create PodGroups and pods the way
the frameworks do (KubeRay and the training-operator create the PodGroup first,
Trainer v2 in either order; members name their group by the API's label or
annotation and name its scheduler) under the partial-gang observer, which sees them
as gangs by the Muster label the webhook gives them.

The session's operator adopts nothing; the first test checks that nothing of theirs
is touched then. The others run it as installed with the chart's `adoption` values
(`adopting`), and restore the default installation after them. Real frameworks are
in test_operator_frameworks.py.
"""

from __future__ import annotations

import pytest
from devtools import installed
from devtools.factories import GPU, NodePool
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.adoption import SCHEDULER_PLUGINS, VOLCANO, AdoptedApi
from tests.e2e.support.adoption import (
    RESOURCES,
    adopt,
    create_gang,
    foreign_group,
    foreign_status,
    member,
    wait_for_phase,
)
from tests.e2e.support.harness import (
    GROUP_LABEL,
    admissions_for,
    events_for,
    explained,
    is_gated,
    pod_group,
    simulated,
    wait_all_bound,
    wait_for_reason,
)


def test_with_adoption_off_nothing_of_theirs_is_touched(
    operator: OperatorProcess, crds: None, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    pool.add(gpus=8)
    kubectl.apply(foreign_group(VOLCANO, "ray-a-pg", 1), namespace)
    kubectl.apply(member(VOLCANO, "ray-a-pg", "ray-a-0", pool), namespace)
    pod = kubectl.json("get", "pod", "ray-a-0", "-n", namespace)
    assert pod["spec"]["schedulerName"] == "volcano"
    assert GROUP_LABEL not in (pod["metadata"].get("labels") or {})
    assert not is_gated(pod)
    found = kubectl("get", "podgroups.scheduling.muster.dev", "-n", namespace, "-o", "name")
    assert found.stdout.strip() == ""
    assert foreign_status(kubectl, VOLCANO, namespace, "ray-a-pg") == {}


@pytest.mark.parametrize("api", [VOLCANO, SCHEDULER_PLUGINS], ids=lambda api: api.name)
def test_an_adopted_gang_starts_whole_and_its_status_is_told(
    api: AdoptedApi, adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    for _ in range(4):
        pool.add(gpus=8)
    kubectl.apply(foreign_group(api, "ray-a", 4), namespace)
    create_gang(kubectl, namespace, pool, api, name="ray-a", size=4)
    pods = wait_all_bound(kubectl, namespace, "ray-a", 4)
    assert {pod["spec"]["schedulerName"] for pod in pods} == {"default-scheduler"}
    assert len({pod["spec"]["nodeName"] for pod in pods}) == 4
    made = pod_group(kubectl, namespace, "ray-a")
    assert made["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    [owner] = made["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["name"]) == (api.api_version, "ray-a")
    status = wait_for_phase(kubectl, api, namespace, "ray-a", "Running")
    assert status["running"] == 4
    # The decisions were the engine's: its trace replays to the same ones.
    assert admissions_for(adopting.replayed(), namespace, "ray-a")


def test_an_adopted_group_naming_a_system_class_is_refused_and_told(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """A Volcano PodGroup's class is resolved as admission resolves a PodGroup's: one
    for the system's own pods is no pod group's, so its gang is not adopted (and its
    pods, gated, never preempt anyone with it)."""
    adopt(kubectl, namespace)
    pool.add(gpus=8)
    critical = foreign_group(VOLCANO, "climber", 1)
    critical["spec"]["priorityClassName"] = "system-cluster-critical"
    kubectl.apply(critical, namespace)
    create_gang(kubectl, namespace, pool, VOLCANO, name="climber", size=1)
    wait_until(
        "the refusal to be told",
        lambda: any(
            event["reason"] == "AdoptionRefused"
            for event in events_for(kubectl, namespace, "climber")
        ),
    )
    [refusal] = [
        e for e in events_for(kubectl, namespace, "climber") if e["reason"] == "AdoptionRefused"
    ]
    assert "spec.priorityClassName" in refusal["message"], refusal["message"]
    assert "2000000000" in refusal["message"], refusal["message"]
    found = kubectl("get", "podgroups.scheduling.muster.dev", "-n", namespace, "-o", "name")
    assert found.stdout.strip() == ""
    assert is_gated(kubectl.json("get", "pod", "climber-0", "-n", namespace))


@pytest.mark.parametrize("api", [VOLCANO, SCHEDULER_PLUGINS], ids=lambda api: api.name)
def test_pods_created_before_their_group_wait_for_it(
    api: AdoptedApi, adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    for _ in range(3):
        pool.add(gpus=8)
    create_gang(kubectl, namespace, pool, api, name="trainer", size=3)
    pods = [kubectl.json("get", "pod", f"trainer-{index}", "-n", namespace) for index in range(3)]
    assert all(is_gated(pod) and not pod["spec"].get("nodeName") for pod in pods)
    kubectl.apply(foreign_group(api, "trainer", 3), namespace)
    wait_all_bound(kubectl, namespace, "trainer", 3)


def test_a_gang_that_does_not_fit_waits_whole_with_muster_s_reason(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    for _ in range(2):
        pool.add(gpus=8)
    big = foreign_group(VOLCANO, "ray-big-pg", 3)
    big["spec"]["minResources"] = {GPU: "100000"}  # more than any test cluster holds
    kubectl.apply(big, namespace)
    status = wait_for_phase(kubectl, VOLCANO, namespace, "ray-big-pg", "Inqueue")
    create_gang(kubectl, namespace, pool, VOLCANO, name="ray-big-pg", size=3)
    condition = wait_for_reason(kubectl, namespace, "ray-big-pg", "Unschedulable")
    wait_until(
        "Muster's reason on the Volcano PodGroup",
        lambda: (
            (foreign_status(kubectl, VOLCANO, namespace, "ray-big-pg").get("conditions") or [{}])[
                0
            ].get("message")
            == condition["message"]
        ),
    )
    status = foreign_status(kubectl, VOLCANO, namespace, "ray-big-pg")
    assert status["phase"] == "Inqueue"  # never back to Pending once it left it
    assert status["conditions"][0]["type"] == "Unschedulable"
    pods = [
        kubectl.json("get", "pod", f"ray-big-pg-{index}", "-n", namespace) for index in range(3)
    ]
    assert all(is_gated(pod) and not pod["spec"].get("nodeName") for pod in pods)
    # The adopted gang is a gang like any other to explain and simulate.
    assert condition["message"] in explained(adopting, namespace, "ray-big-pg")
    assert simulated(kubectl, namespace, "ray-big-pg")["scheduled"] is False
    # Its minResources is beyond the cluster: told, advisory only (judged by its pods).
    wait_until(
        "the minResources precheck on the Volcano PodGroup",
        lambda: any(
            event["reason"] == "MinResourcesBeyondCluster"
            and event["involvedObject"]["apiVersion"] == VOLCANO.api_version
            and GPU in event["message"]
            for event in events_for(kubectl, namespace, "ray-big-pg")
        ),
    )


def test_members_beyond_min_member_join_once_the_gang_is_bound(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    for _ in range(3):
        pool.add(gpus=8)
    kubectl.apply(foreign_group(VOLCANO, "ray-c-pg", 2), namespace)
    create_gang(kubectl, namespace, pool, VOLCANO, name="ray-c-pg", size=2)
    wait_all_bound(kubectl, namespace, "ray-c-pg", 2)
    # An autoscaled worker, or a RayJob's submitter: beyond minMember.
    kubectl.apply(member(VOLCANO, "ray-c-pg", "ray-c-pg-2", pool), namespace)
    wait_all_bound(kubectl, namespace, "ray-c-pg", 3)
    assert pod_group(kubectl, namespace, "ray-c-pg")["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 2}
    }


def test_adoption_refuses_to_start_beside_a_running_adopted_scheduler(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str
) -> None:
    """A bind Volcano reported (as its scheduler reports them) keeps adoption from
    starting; the replica exits saying so."""
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "bound-by-volcano"},
        "involvedObject": {"kind": "Pod", "name": "somewhere", "namespace": namespace},
        "reason": "Scheduled",
        "message": "Successfully assigned somewhere to node-1",
        "source": {"component": "volcano"},
        "type": "Normal",
    }
    kubectl.apply(event, namespace)
    replica = adopting.replica("refused", "--adopt=volcano")
    try:
        with pytest.raises(AssertionError, match="the scheduler volcano binds pods"):
            replica.start()
        assert replica.process is not None and replica.process.wait(timeout=10) == 3
    finally:
        kubectl("delete", "event", "bound-by-volcano", "-n", namespace)
        replica.stop()


def test_outside_the_adopted_namespaces_nothing_is_touched_until_one_is_labelled(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=8)
    kubectl.apply(foreign_group(VOLCANO, "ray-a-pg", 1), namespace)
    kubectl.apply(member(VOLCANO, "ray-a-pg", "ray-a-0", pool), namespace)
    pod = kubectl.json("get", "pod", "ray-a-0", "-n", namespace)
    assert pod["spec"]["schedulerName"] == "volcano"
    assert not is_gated(pod)
    assert GROUP_LABEL not in (pod["metadata"].get("labels") or {})
    assert foreign_status(kubectl, VOLCANO, namespace, "ray-a-pg") == {}
    # Labelled, the namespace is adopted from then on: the PodGroup was seen and left.
    adopt(kubectl, namespace)
    wait_until(
        "the adopted PodGroup's Muster PodGroup",
        lambda: (
            kubectl(
                "get", "podgroups.scheduling.muster.dev", "ray-a-pg", "-n", namespace, check=False
            ).returncode
            == 0
        ),
    )


ADOPTION_RIGHTS = "muster-operator-adoption-rights"


def annotate_as_operator(
    kubectl: Kubectl, api: AdoptedApi, namespace: str, name: str
) -> tuple[bool, str]:
    """(allowed, stderr) of a change of another scheduler's PodGroup by the operator's
    ServiceAccount, as a dry run."""
    result = kubectl(
        "patch", RESOURCES[api], name, "-n", namespace, f"--as={installed.USER}",
        "--type=merge", "--dry-run=server", "-p", '{"metadata":{"annotations":{"x":"y"}}}',
        check=False,
    )  # fmt: skip
    return result.returncode == 0, result.stderr


@pytest.mark.parametrize("api", [VOLCANO, SCHEDULER_PLUGINS], ids=lambda api: api.name)
def test_the_operator_changes_their_podgroups_only_in_the_namespaces_it_adopts(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str, api: AdoptedApi
) -> None:
    """RBAC lets it patch their PodGroups in every namespace; the adoption-rights
    policy refuses it where the namespace is not adopted. `kubectl patch` reads before
    it writes: the ServiceAccount is granted `get` on them in the test's namespace."""
    kubectl(
        "create", "role", "read-groups", "--verb=get", f"--resource={RESOURCES[api]}",
        "-n", namespace,
    )  # fmt: skip
    kubectl(
        "create", "rolebinding", "read-groups", "--role=read-groups",
        f"--serviceaccount={installed.NAMESPACE}:{installed.SERVICE_ACCOUNT}", "-n", namespace,
    )  # fmt: skip
    kubectl.apply(foreign_group(api, "theirs", 1), namespace)

    def refused() -> bool:
        allowed, stderr = annotate_as_operator(kubectl, api, namespace, "theirs")
        return not allowed and f"ValidatingAdmissionPolicy '{ADOPTION_RIGHTS}'" in stderr

    wait_until("the operator's change to be refused outside the adopted namespaces", refused)
    adopt(kubectl, namespace)
    wait_until(
        "the operator's change to be allowed once the namespace is adopted",
        lambda: annotate_as_operator(kubectl, api, namespace, "theirs")[0],
    )
