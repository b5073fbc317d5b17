"""The soak's invariants, judged over what a watch saw: pure, so scripted sequences test it.

Partial gangs are judged by the e2e suite's own rule (`tests/e2e/support/observer.py`'s
`GangLedger`); this module judges the rest, each at the observation that breaks it:

- **over-committed**: a node whose bound pods (not finished; terminating ones still
  count, as kube-scheduler counts them) ask for more of a resource than it has
  allocatable, pods included;
- **bound-elsewhere**: a pod bound to a node other than the one its release pinned it
  to (the `metadata.name` node affinity Muster writes);
- **failure-charged**: a Job whose failed count is above the pods the soak itself
  deleted from it (Muster's rollbacks and preemptions must cost a Job nothing);
- **lost**: a Job submitted more than `LOST_AFTER` seconds before the end that has not
  completed;
- **non-leader-write**: a write that landed (2xx) from a replica other than the one
  whose Lease write landed last before it (the audit log's order, as the fence test
  reads it). What every replica writes to serve its webhooks, leader or not (the
  serving certificate's Secret and the `caBundle` of the webhook configurations:
  `muster.operator.webhook_feeds`), is not the leader's work and is left out.

A pod's requests are summed here from its containers (requests, else limits), not
taken from Muster's engine, so an error of the engine's arithmetic cannot hide an
over-commit; only the parsing of a quantity is shared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.faults.faults import Request
from tests.e2e.support.harness import WEBHOOK_CONFIGURATION

from muster.scheduler.objects.quantity import to_amount

LOST_AFTER = 300.0
LEASE_NAME = "muster-operator"
AGENT_PREFIX = "muster/"
# (resource, name) every replica writes to serve its webhooks.
SERVING_WRITES = frozenset(
    {
        ("secrets", "muster-webhook-tls"),
        ("mutatingwebhookconfigurations", WEBHOOK_CONFIGURATION),
        ("validatingwebhookconfigurations", WEBHOOK_CONFIGURATION),
    }
)


@dataclass(frozen=True)
class Violation:
    """One broken invariant: what, when (seconds after the start), and whose."""

    invariant: str
    at: float
    subject: str  # the gang, pod, Job, node or replica concerned
    detail: str


def requests_of(pod: Mapping[str, Any]) -> dict[str, int]:
    """What a pod holds on its node: its containers' requests (limits where a request is
    missing) and one pod."""
    total = {"pods": 1}
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, raw in asked.items():
            total[name] = total.get(name, 0) + to_amount(name, raw)
    return total


def allocatable_of(node: Mapping[str, Any]) -> dict[str, int]:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return {name: to_amount(name, raw) for name, raw in allocatable.items()}


@dataclass
class Holding:
    node: str
    requests: dict[str, int]


@dataclass
class PlacementJudge:
    """Over-commit and pins, checked at every pod observation."""

    allocatable: dict[str, dict[str, int]] = field(default_factory=dict)
    _held: dict[str, Holding] = field(default_factory=dict)
    _over: set[tuple[str, str]] = field(default_factory=set)  # (node, resource) over now
    _misbound: set[str] = field(default_factory=set)

    def node(self, name: str, allocatable: dict[str, int]) -> None:
        self.allocatable[name] = allocatable

    def pod(
        self,
        name: str,
        *,
        node: str | None,
        pinned: str | None,
        finished: bool,
        requests: dict[str, int],
        at: float,
    ) -> list[Violation]:
        found: list[Violation] = []
        if node and pinned and node != pinned and name not in self._misbound:
            self._misbound.add(name)
            found.append(
                Violation("bound-elsewhere", at, name, f"released for {pinned}, bound to {node}")
            )
        before = self._held.pop(name, None)
        if node and not finished:
            self._held[name] = Holding(node, requests)
        touched = {h.node for h in (before, self._held.get(name)) if h is not None}
        for each in sorted(touched):
            found += self._judge(each, at)
        return found

    def gone(self, name: str, at: float) -> list[Violation]:
        before = self._held.pop(name, None)
        return [] if before is None else self._judge(before.node, at)

    def _judge(self, node: str, at: float) -> list[Violation]:
        used: dict[str, int] = {}
        pods = sorted(name for name, h in self._held.items() if h.node == node)
        for name in pods:
            for resource, amount in self._held[name].requests.items():
                used[resource] = used.get(resource, 0) + amount
        found = []
        for resource, capacity in sorted(self.allocatable.get(node, {}).items()):
            key = (node, resource)
            if used.get(resource, 0) <= capacity:
                self._over.discard(key)
            elif key not in self._over:
                self._over.add(key)
                detail = (
                    f"{resource}: {used[resource]} bound > {capacity} allocatable "
                    f"({', '.join(pods)})"
                )
                found.append(Violation("over-committed", at, node, detail))
        return found


def charged_failures(
    failed: Mapping[str, int], deleted_by_faults: Mapping[str, int], at: float
) -> list[Violation]:
    """Jobs charged more failures than the pods the soak deleted from them."""
    return [
        Violation(
            "failure-charged",
            at,
            job,
            f"{count} failed pods, {deleted_by_faults.get(job, 0)} deleted by faults",
        )
        for job, count in sorted(failed.items())
        if count > deleted_by_faults.get(job, 0)
    ]


def lost_jobs(
    submitted: Mapping[str, float],
    completed: Iterable[str],
    end: float,
    states: Mapping[str, str] | None = None,
) -> list[Violation]:
    """Jobs submitted more than LOST_AFTER before `end` (seconds) that never completed,
    each with where it stood at the end (`states`, by Job), to find out why."""
    done, states = set(completed), states or {}
    return [
        Violation(
            "lost",
            end,
            job,
            f"submitted at +{at:.0f}s, not complete at the end"
            + (f"; at the end: {states[job]}" if job in states else ""),
        )
        for job, at in sorted(submitted.items(), key=lambda item: item[1])
        if at < end - LOST_AFTER and job not in done
    ]


def where_it_stands(
    job: Mapping[str, Any], group: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]]
) -> str:
    """A Job at the end of a run, in one line: its counts, its PodGroup's condition and
    each of its pods (phase, node, gated or not, being deleted or not)."""
    status = job.get("status") or {}
    counts = ", ".join(f"{k} {status[k]}" for k in ("active", "failed", "succeeded") if k in status)
    condition = next(
        (
            f"{c.get('reason')}: {c.get('message')}"
            for c in ((group or {}).get("status") or {}).get("conditions") or []
            if c.get("type") == "PodGroupScheduled"
        ),
        "no PodGroup" if group is None else "no PodGroupScheduled condition",
    )
    members = "; ".join(
        f"{pod['metadata']['name']} {(pod.get('status') or {}).get('phase', '?')}"
        f" on {(pod.get('spec') or {}).get('nodeName') or 'no node'}"
        + (" gated" if (pod.get("spec") or {}).get("schedulingGates") else "")
        + (" deleting" if pod["metadata"].get("deletionTimestamp") else "")
        for pod in sorted(pods, key=lambda pod: str(pod["metadata"]["name"]))
    )
    return f"Job {counts or 'no counts'}; PodGroup {condition}; pods: {members or 'none'}"


def non_leader_writes(requests: Iterable[Request], offset: float) -> list[Violation]:
    """Writes that landed from a replica whose Lease write was not the last to land;
    `offset` turns an audit timestamp (epoch seconds) into seconds after the start."""
    leader: str | None = None
    found = []
    for request in sorted(requests, key=lambda r: r.received):
        if not request.user_agent.startswith(AGENT_PREFIX) or not request.write:
            continue
        if not 200 <= request.code < 300 or (request.resource, request.name) in SERVING_WRITES:
            continue
        replica = request.user_agent.removeprefix(AGENT_PREFIX)
        if request.resource == "leases" and request.name == LEASE_NAME:
            leader = replica
        elif replica != leader:
            what = f"{request.verb} {request.resource}/{request.name} while {leader} led"
            at = request.received.timestamp() - offset
            found.append(Violation("non-leader-write", at, replica, what))
    return found
