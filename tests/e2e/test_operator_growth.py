"""Members beyond minCount join an admitted gang as soon as they fit, on the real
control plane (docs/frameworks.md), whatever made the room: a node added, a taint
removed, a pod gone. Two gangs of four pods with minCount 2, each pod asking for a
whole node: an adopted Volcano PodGroup (minMember 2), made the way the frameworks
make it, and a gang Job with parallelism 4. Both run under the partial-gang
observer, with the operator as the chart installs it (with adoption on, for the
Volcano group)."""

from __future__ import annotations

from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.adoption import VOLCANO
from tests.e2e.support.adoption import adopt, create_gang, foreign_group
from tests.e2e.support.harness import (
    bound,
    is_gated,
    pod_group,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)

BLOCKER = "e2e.muster.dev/blocked"
QUIET_SECONDS = 5


def wait_bound_and_gated(
    kubectl: Kubectl, namespace: str, group: str, *, placed: int, gated: int
) -> None:
    def counted() -> bool:
        pods = pods_of(kubectl, namespace, group)
        return len(bound(pods)) == placed and sum(is_gated(pod) for pod in pods) == gated

    wait_until(f"{placed} pods of {group} bound and {gated} gated", counted)


def wait_settled(kubectl: Kubectl, namespace: str, group: str) -> None:
    """Until the PodGroup has not changed for `QUIET_SECONDS`: the operator has nothing
    left to do for it (cycles after that leave it out until it changes)."""
    seen: list[str] = []

    def unchanged() -> bool:
        seen.append(pod_group(kubectl, namespace, group)["metadata"]["resourceVersion"])
        return len(seen) > QUIET_SECONDS and len(set(seen[-QUIET_SECONDS - 1 :])) == 1

    wait_until(f"PodGroup {group} to settle", unchanged, interval=1.0, timeout=60)


def wait_quiet(kubectl: Kubectl, namespace: str, group: str, pool: NodePool) -> None:
    """Until the operator has found the gang with nothing left to do: it has settled,
    and cycles have run since (started by nodes where none of its pods fits), which
    leave it out until it changes."""
    wait_settled(kubectl, namespace, group)
    for _ in range(2):
        pool.add(gpus=1)
    wait_settled(kubectl, namespace, group)


def test_an_adopted_group_s_members_beyond_min_member_join_as_nodes_appear(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    for _ in range(2):
        pool.add(gpus=8)
    kubectl.apply(foreign_group(VOLCANO, "ray-d-pg", 2), namespace)
    create_gang(kubectl, namespace, pool, VOLCANO, name="ray-d-pg", size=4)
    wait_bound_and_gated(kubectl, namespace, "ray-d-pg", placed=2, gated=2)
    wait_for_reason(kubectl, namespace, "ray-d-pg", "Scheduled")
    wait_quiet(kubectl, namespace, "ray-d-pg", pool)

    pool.add(gpus=8)  # a node added
    wait_bound_and_gated(kubectl, namespace, "ray-d-pg", placed=3, gated=1)

    blocked = pool.add(gpus=8, taints=[{"key": BLOCKER, "effect": "NoSchedule"}])
    wait_quiet(kubectl, namespace, "ray-d-pg", pool)
    kubectl("taint", "node", blocked, f"{BLOCKER}:NoSchedule-")  # a taint removed
    wait_all_bound(kubectl, namespace, "ray-d-pg", 4)


def test_a_gang_job_s_members_beyond_min_count_join_when_a_pod_is_gone(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    for _ in range(3):
        pool.add(gpus=8)
    kubectl.apply(gang_job("first", pool, workers=1, gpus=8), namespace)
    wait_all_bound(kubectl, namespace, "first", 1)
    elastic = gang_job(
        "elastic", pool, workers=4, gpus=8, annotations={"scheduling.muster.dev/min-count": "2"}
    )
    kubectl.apply(elastic, namespace)
    wait_bound_and_gated(kubectl, namespace, "elastic", placed=2, gated=2)
    wait_quiet(kubectl, namespace, "elastic", pool)

    kubectl("delete", "job", "first", "-n", namespace, "--cascade=foreground")  # a pod gone
    wait_bound_and_gated(kubectl, namespace, "elastic", placed=3, gated=1)

    wait_quiet(kubectl, namespace, "elastic", pool)
    pool.add(gpus=8)  # a node added
    wait_all_bound(kubectl, namespace, "elastic", 4)
