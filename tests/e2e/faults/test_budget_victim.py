"""A victim protected by a PodDisruptionBudget.

Two running low-priority gangs of 4 pods: `alpha`, under a PodDisruptionBudget
`minAvailable: 3` (it allows one disruption), and `beta`, under none. A 4-pod
high-priority gang needs the capacity of one of them.

- When either gang can make room, the one no budget protects goes (kube-scheduler
  prefers victims that violate no PDB). Without its budget `alpha` would go: equal
  victims are taken in name order (the budget turning such a choice is pinned in
  tests/unit/scheduler/placement/test_preemption_budgets.py). `alpha` is never touched: no
  eviction, no refusal, no delete.
- When only `alpha` can make room, it is preempted all the same, as kube-scheduler
  does, and the preemptor says so. The window is the budget refusing part-way: the
  Eviction API takes one pod and refuses the others (429, a DisruptionBudget cause,
  each asked once: not retried as throttling), and those are deleted at once, since
  a gang disrupted whole must not keep 3 of its 4 pods (docs/preemption-and-priorities.md).

Under both, no gang is ever partial: the observer judges the rises, and the falls, which
must end with no member of the victim standing within the same grace; the test reads
the falls the observer recorded, to see that the victim it expects fell.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from devtools.cluster.local import LocalCluster
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.waiting import wait_until

from tests.e2e.faults.faults import Request, audit_log
from tests.e2e.support.harness import (
    bound,
    events_for,
    pods_of,
    scheduled_condition,
    wait_all_bound,
)
from tests.e2e.support.ledger import Fall
from tests.e2e.support.observer import GangObserver

OPERATOR_AGENT = "muster/"
OK = (200, 201)
PREEMPTED = ("Preempted",)


def keep_three(kubectl: Kubectl, namespace: str) -> None:
    """`alpha`'s budget, once its controller counts 4 healthy pods (1 may go)."""
    kubectl.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep-alpha"},
            "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "alpha"}}},
        },
        namespace,
    )

    def counted() -> bool:
        budget = kubectl.json("get", "pdb", "keep-alpha", "-n", namespace)
        status = budget.get("status") or {}
        return status.get("observedGeneration") == budget["metadata"]["generation"] and (
            status.get("disruptionsAllowed") == 1
        )

    wait_until("the budget to allow one disruption", counted, timeout=60)


@dataclass(frozen=True)
class Played:
    """What a run of the scene saw."""

    first: dict[str, set[str]]  # the low gangs' pods before the preemption
    took: float  # from the preemptor's creation to all its pods bound
    falls: list[Fall]


@dataclass(frozen=True)
class Scene:
    cluster: LocalCluster
    kubectl: Kubectl
    namespace: str
    pool: NodePool
    observer: GangObserver
    low: str
    high: str

    def play(self, *, nodes: int, gpus: dict[str, int], victim: str) -> Played:
        """`nodes` nodes of 4 GPUs; `alpha` and `beta` running whole, `alpha` under its
        budget; then the preemptor (each pod as large as alpha's), until it runs whole
        and `victim`'s pods have left."""
        for _ in range(nodes):
            self.pool.add(gpus=4)
        for name, each in gpus.items():
            self._job(name, each, self.low, {"app": name})
        first = {name: {pod["metadata"]["name"] for pod in self._bound(name)} for name in gpus}
        keep_three(self.kubectl, self.namespace)
        created = time.monotonic()
        self._job("high", gpus["alpha"], self.high, {})
        self._bound("high")
        took = time.monotonic() - created
        wait_until(f"{victim}'s pods to leave", lambda: self._gone(victim, first[victim]))
        self.observer.settle()  # a fall that stuck is judged by now
        return Played(first, took, list(self.observer.ledger.falls))

    def _job(self, name: str, gpus: int, priority: str, labels: dict[str, str]) -> None:
        job = gang_job(
            name, self.pool, workers=4, gpus=gpus, priority_class=priority, pod_labels=labels
        )
        self.kubectl.apply(job, self.namespace)

    def _bound(self, name: str) -> list[dict[str, Any]]:
        return wait_all_bound(self.kubectl, self.namespace, name, 4, timeout=90)

    def _gone(self, group: str, pods: set[str]) -> bool:
        return not pods & self.running(group)

    def running(self, group: str) -> set[str]:
        return {p["metadata"]["name"] for p in bound(pods_of(self.kubectl, self.namespace, group))}

    def requests(self, pods: set[str]) -> list[Request]:
        """The operator's requests on these pods, from the API server's audit log."""
        return [
            r
            for r in audit_log(self.cluster.state_dir)
            if r.user_agent.startswith(OPERATOR_AGENT) and r.resource == "pods" and r.name in pods
        ]

    def taken_down(self, name: str) -> list[str]:
        """The messages of the events that tell the group (or its Job) it is preempted
        (its condition moves on to Unschedulable once its Job has made its pods again)."""
        events = events_for(self.kubectl, self.namespace, name)
        return [event["message"] for event in events if event.get("reason") in PREEMPTED]


@pytest.fixture
def scene(
    cluster: LocalCluster,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    *,
    priorities: tuple[str, str],
    gang_observer: GangObserver,
) -> Scene:
    return Scene(cluster, kubectl, namespace, pool, gang_observer, *priorities)


def evictions(requests: list[Request], *codes: int) -> list[str]:
    """The pods of evictions answered with one of `codes`, once per answer."""
    return sorted(
        r.name
        for r in requests
        if r.verb == "create" and r.subresource == "eviction" and r.code in codes
    )


def deletions(requests: list[Request]) -> list[str]:
    return sorted(r.name for r in requests if r.verb == "delete" and not r.subresource)


def test_the_gang_no_budget_protects_is_preempted_instead(scene: Scene) -> None:
    """16 GPUs, alpha and beta 4 x 2 each: either can make room."""
    played = scene.play(nodes=4, gpus={"alpha": 2, "beta": 2}, victim="beta")
    first = played.first
    assert scene.taken_down("beta")
    assert scene.taken_down("alpha") == []
    assert scheduled_condition(scene.kubectl, scene.namespace, "alpha")["reason"] == "Scheduled"
    assert scene.running("alpha") == first["alpha"], "the protected gang lost pods"
    touched = scene.requests(first["alpha"])
    assert evictions(touched, *OK, 429) == deletions(touched) == []
    beta = scene.requests(first["beta"])
    assert evictions(beta, *OK) == sorted(first["beta"]) and deletions(beta) == []
    assert [fall.gang for fall in played.falls] == ["beta"]
    print(f"budget victim, spared: beta preempted, not alpha; high whole after {played.took:.1f}s")


def test_a_gang_only_protected_victims_make_room_for_is_taken_whole_all_the_same(
    scene: Scene,
) -> None:
    """12 GPUs, alpha 4 x 2 and beta 4 x 1: beta's 4 GPUs could host 2 of the
    preemptor's 2-GPU pods at most, so alpha must go."""
    played = scene.play(nodes=3, gpus={"alpha": 2, "beta": 1}, victim="alpha")
    first = played.first
    notices = scene.taken_down("alpha")
    assert notices and all("against PodDisruptionBudget" in notice for notice in notices)
    told = [event["message"] for event in events_for(scene.kubectl, scene.namespace, "high")]
    assert any("against PodDisruptionBudget" in message for message in told), told

    # The window: the budget let one eviction through and refused the others, each once.
    requests = scene.requests(first["alpha"])
    refused, evicted = evictions(requests, 429), evictions(requests, *OK)
    assert refused, "the budget never refused an eviction: the fault was not hit"
    assert len(set(refused)) == len(refused), f"a refusal was retried: {refused}"
    assert len(evicted) <= 1 and set(refused) | set(evicted) == first["alpha"]
    assert set(refused) <= set(deletions(requests)), "a refused victim was left running"

    fell = [fall for fall in played.falls if fall.gang == "alpha"]
    assert fell and all(fall.ended is not None and not fall.restored for fall in fell)
    took_down = max(fall.lasted(time.monotonic()) for fall in fell)
    print(
        f"budget victim, only protected room: {len(refused)} evictions refused (429) and "
        f"deleted, {len(evicted)} evicted; alpha fell from 4 to none standing in "
        f"{took_down:.2f}s (lowest {min(f.lowest for f in fell)}); "
        f"beta kept {len(scene.running('beta') & first['beta'])}/4; "
        f"high whole after {played.took:.1f}s"
    )
