"""What the board tells of each gang beside the engine's verdict: what it asks for, at
what priority, and how long it waited (pure).

What a gang asks for is told as one resource, its scarcest: of every resource its
member pods request, the one of which it asks the largest share of what the
cluster's nodes can allocate (on a GPU cluster, its GPUs). That is the figure a
platform team reads first, as KueueViz shows a workload's flavors' GPUs and
Volcano's queues their `nvidia.com/gpu`; the amount is written as `explain` writes
it (`format_amount`).

How long it waited counts from when its present wait began (`GroupRecord.waiting_since`:
its creation, or when it was last taken down), until now while it waits, until its
admission once admitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from muster.api.keys import GroupKey
from muster.scheduler import (
    ClusterState,
    GroupRecord,
    format_amount,
    group_records,
    member_records,
    node_records,
)

NOTHING = "nothing"  # a gang whose pods request nothing the nodes allocate


@dataclass(frozen=True, slots=True)
class Facts:
    demand: str  # `16 nvidia.com/gpu`: its scarcest resource, requested by all its pods
    priority: int
    waited: float | None  # seconds; None when its times are unknown


def allocatable_totals(state: ClusterState) -> dict[str, int]:
    """What the cluster's nodes can allocate, per resource (not counting pods)."""
    totals: dict[str, int] = {}
    for record in node_records(state):
        for resource, amount in record.allocatable:
            if resource != "pods":
                totals[resource] = totals.get(resource, 0) + amount
    return totals


def facts_of(state: ClusterState, key: GroupKey, totals: Mapping[str, int], now: float) -> Facts:
    """The gang's facts at `now`, with `totals` from `allocatable_totals`."""
    record = group_records(state)[key]
    return Facts(
        demand=demand_words(requested(state, key), totals),
        priority=record.priority or 0,
        waited=waited(record, now),
    )


def requested(state: ClusterState, key: GroupKey) -> dict[str, int]:
    """What the gang's member pods request together, per resource."""
    summed: dict[str, int] = {}
    for record in member_records(state, key):
        for resource, amount in record.requests:
            summed[resource] = summed.get(resource, 0) + amount
    return summed


def demand_words(requests: Mapping[str, int], totals: Mapping[str, int]) -> str:
    """`16 nvidia.com/gpu`: the requested resource with the largest share of the
    cluster's allocatable (a resource no node offers counts as the scarcest of all);
    ties go to the name first in order, so that the words are the same each board."""
    asked = [(resource, amount) for resource, amount in requests.items() if amount > 0]
    if not asked:
        return NOTHING

    def share(item: tuple[str, int]) -> float:
        resource, amount = item
        total = totals.get(resource, 0)
        return amount / total if total > 0 else float("inf")

    resource, amount = max(sorted(asked), key=share)
    return f"{format_amount(resource, amount)} {resource}"


def waited(record: GroupRecord, now: float) -> float | None:
    """Seconds the gang waited: until `now` while it waits, until its admission once
    admitted (from the start of the wait that admission ended)."""
    began = record.waiting_since if record.waiting_since is not None else record.created
    if record.admitted:
        if record.admitted_at is None:
            return None
        if began is None or began > record.admitted_at:
            began = record.created
        end = record.admitted_at
    else:
        end = now
    return None if began is None else max(0.0, end - began)
