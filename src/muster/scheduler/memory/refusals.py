"""The gang's memory of kube-scheduler's refusals: read from status, and brought up to date.

The engine plans with the rules it models; kube-scheduler binds with all of its own
(volumes, pod affinity, plugins of the cluster's choosing). When it refuses a
released pod, the operator rolls the gang back at once and records the refusal in
`status.refusals`; the next plans leave the refused nodes out, and after
`max_rollbacks` refusals in a row the gang is not planned again until the node set
changes (see `muster.scheduler.lifecycle.avoidance`).

The memory is per gang, not per pod shape: a Job's pods share one template, and a
gang of mixed pods avoiding one node too many is the safe side of the trade. It is
bounded (`MAX_REFUSED_NODES` nodes, the most recent; messages cut at
`MAX_REFUSAL_MESSAGE`), and it is written only by rollbacks and by the gang binding
completely, so it costs no status writes in steady operation.

Parsing is lenient: a malformed memory is no memory, since a status Muster wrote
itself must never keep a gang out of the queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from muster.api import podgroup
from muster.api.constants import MAX_REFUSAL_MESSAGE, MAX_REFUSED_NODES


@dataclass(frozen=True, slots=True)
class Refused:
    """One released pod kube-scheduler would not bind where the plan pinned it."""

    pod: str
    node: str
    message: str  # the pod's PodScheduled condition message


@dataclass(frozen=True, slots=True)
class NodeRefusal:
    node: str
    pod: str  # the member refused there last
    message: str
    count: int  # rollbacks in which this node refused a member


@dataclass(frozen=True, slots=True)
class RefusalMemory:
    """`status.refusals` as the engine reads it."""

    node_set: str  # digest of the node set it was learnt on
    rollbacks: int  # refusal rollbacks in a row
    nodes: tuple[NodeRefusal, ...]  # oldest first

    @property
    def node_names(self) -> frozenset[str]:
        return frozenset(refusal.node for refusal in self.nodes)

    def latest(self) -> NodeRefusal | None:
        return self.nodes[-1] if self.nodes else None


def refusals_from(status: Mapping[str, Any]) -> RefusalMemory | None:
    """The memory in a PodGroup's status; None when there is none (or it is malformed)."""
    raw = status.get("refusals")
    if not isinstance(raw, Mapping):
        return None
    node_set, rollbacks, nodes = raw.get("nodeSet"), raw.get("rollbacks", 0), raw.get("nodes")
    if not isinstance(node_set, str) or not _count(rollbacks, minimum=0):
        return None
    parsed = []
    for item in nodes if isinstance(nodes, list) else []:
        if not isinstance(item, Mapping) or not isinstance(item.get("node"), str):
            return None
        count = item.get("count", 1)
        if not _count(count, minimum=1):
            return None
        pod, message = str(item.get("pod") or ""), str(item.get("message") or "")
        parsed.append(NodeRefusal(item["node"], pod, message, count))
    return RefusalMemory(node_set, rollbacks, tuple(parsed))


def _count(value: object, *, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def after_rollback(
    memory: RefusalMemory | None, refused: Iterable[Refused], *, node_set: str
) -> RefusalMemory:
    """The memory after a rollback caused by `refused` (on the node set `node_set`).

    Learnt on another node set, the old memory is dropped first: it described nodes
    that have changed since. Each refused node counts once per rollback, moves to the
    end (most recent) and keeps the latest message; the oldest nodes fall off past
    `MAX_REFUSED_NODES`.
    """
    if memory is None or memory.node_set != node_set:
        memory = RefusalMemory(node_set, 0, ())
    by_node = {refusal.node: refusal for refusal in memory.nodes}
    fresh: dict[str, NodeRefusal] = {}
    for item in refused:
        if item.node in fresh:
            continue
        previous = by_node.pop(item.node, None)
        fresh[item.node] = NodeRefusal(
            node=item.node,
            pod=item.pod,
            message=_cut(item.message),
            count=1 if previous is None else previous.count + 1,
        )
    kept = [refusal for refusal in memory.nodes if refusal.node in by_node]
    nodes = (*kept, *fresh.values())[-MAX_REFUSED_NODES:]
    return RefusalMemory(node_set, memory.rollbacks + 1, tuple(nodes))


def after_success(memory: RefusalMemory | None) -> RefusalMemory | None:
    """The memory once the gang has bound completely: no rollbacks in a row any more
    (the refused nodes stay avoided). None when nothing changes."""
    if memory is None or memory.rollbacks == 0:
        return None
    return replace(memory, rollbacks=0)


def exhausted(memory: RefusalMemory | None, max_rollbacks: int, *, node_set: str) -> bool:
    """Whether the gang has been refused `max_rollbacks` times in a row on this node
    set (0: never)."""
    return (
        max_rollbacks > 0
        and memory is not None
        and memory.node_set == node_set
        and memory.rollbacks >= max_rollbacks
    )


def to_status(memory: RefusalMemory) -> dict[str, Any]:
    """`status.refusals` as written, through the API's `Refusals` model."""
    return podgroup.Refusals(
        node_set=memory.node_set,
        rollbacks=memory.rollbacks,
        nodes=[
            podgroup.NodeRefusal(
                node=refusal.node, pod=refusal.pod, message=refusal.message, count=refusal.count
            )
            for refusal in memory.nodes
        ],
    ).to_manifest()


def describe(refusal: NodeRefusal) -> str:
    """`pod P on node N: "message"`, for condition messages."""
    return f'pod {refusal.pod} on node {refusal.node}: "{refusal.message}"'


def _cut(message: str) -> str:
    if len(message) <= MAX_REFUSAL_MESSAGE:
        return message
    return message[: MAX_REFUSAL_MESSAGE - 3] + "..."
