"""The advisory precheck of an adopted PodGroup's `minResources`.

Volcano PodGroups may say the least resources their gang needs (`spec.minResources`,
a `ResourceList`); Volcano's enqueue step holds back a group whose `minResources`
the cluster cannot hold. Muster does not judge a gang by it: its fit test is the
members' own requests, as for every gang. But an ask that exceeds what all the
schedulable nodes together could ever give is worth telling, since the framework
that wrote it expects no start; this says so, in words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from muster.scheduler.objects.quantity import MILLI_RESOURCES, QuantityError, to_amount
from muster.scheduler.state.intake import NodeRecord


def schedulable_allocatable(nodes: Iterable[NodeRecord]) -> dict[str, int]:
    """The allocatable amounts of the nodes that take new pods (not cordoned), summed."""
    total: dict[str, int] = {}
    for node in nodes:
        if node.unschedulable:
            continue
        for resource, amount in node.allocatable:
            total[resource] = total.get(resource, 0) + amount
    return total


def beyond_cluster(min_resources: object, allocatable: Mapping[str, int]) -> str | None:
    """What of `min_resources` exceeds the summed `allocatable` of the schedulable
    nodes, as a message; None when all of it could be hosted, or when it says nothing
    Muster can read (a malformed ask is the framework's business, not a verdict)."""
    if not isinstance(min_resources, Mapping):
        return None
    over: list[str] = []
    for resource, raw in sorted(min_resources.items()):
        try:
            asked = to_amount(str(resource), raw)
        except QuantityError:
            continue
        offered = allocatable.get(str(resource), 0)
        if asked > offered:
            over.append(f"{resource} {_shown(str(resource), asked)} > {_shown(resource, offered)}")
    if not over:
        return None
    return (
        "minResources exceeds the allocatable sum of the schedulable nodes ("
        + ", ".join(over)
        + "); advisory only: Muster judges the gang by its pods' requests"
    )


def _shown(resource: str, amount: int) -> str:
    if resource in MILLI_RESOURCES:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    return str(amount)
