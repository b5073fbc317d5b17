"""Where a claim shared by a gang's pods is allocated: each node that could hold it.

kube-scheduler's DynamicResources plugin allocates a claim for the first pod that uses
it, on the node that pod is bound to, and from then on keeps the claim's other pods
to that node (the allocation's node selector, `pkg/scheduler/framework/plugins/
dynamicresources` in its source). The gang is placed pod by pod in best-fit order
(`interplay`), so the claim goes to the fullest node its first pod fits on, which may
have no room for the pods sharing it. When that placement falls short, the claim is
pinned in turn to each node it could be allocated on (`pin_choices`), so the search
refuses only after every such node was tried.

Its cost is bounded whatever the gang, its claims or the cluster: at most
`ATTEMPTS` more pod-by-pod placements per decision, each costing what the first did,
for at most `PINNED_CLAIMS` claims (those whose pods are placed first; the others go
where best fit puts their first pod).
Nodes are tried for a claim the roomiest for its pods first (then in best-fit order),
and a set of pins (one node per claim, claims with no pod in common) is tried before
any set that uses a later node for some claim. A claim with as many candidate nodes
as `ATTEMPTS` or fewer, alone in the gang, is tried on every one of them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice, product

import numpy as np

from muster.scheduler.devices.book import Need
from muster.scheduler.devices.gang import GangDevices
from muster.scheduler.devices.ledger import DeviceLedger
from muster.scheduler.placement.fit import (
    BoolArray,
    Matrix,
    NodeOrder,
    Shape,
    fill_order,
)

ATTEMPTS = 64
PINNED_CLAIMS = 8

Pins = Mapping[Hashable, int]  # claim -> the node slot it is allocated on


@dataclass(frozen=True, slots=True)
class _Shared:
    """A claim the gang's pods share and that is not allocated yet."""

    key: Hashable
    pods: frozenset[str]  # the gang's pods that use it
    first: str  # the first of them the search places
    shape: Shape  # its shape


def pin_choices(
    devices: GangDevices,
    free: Matrix,
    shapes: Sequence[Shape],
    *,
    within: BoolArray,
    order: NodeOrder,
) -> list[Pins]:
    """The pins to try, best first, at most `ATTEMPTS`; none when no claim is shared."""
    claims = _unallocated_shared(devices.ledger, devices.needs, shapes)[:PINNED_CLAIMS]
    if not claims:
        return []
    nodes = [_candidates(devices, free, claim, within=within, order=order) for claim in claims]
    combos = _by_latest_choice([len(found) for found in nodes])
    pins = (
        {claim.key: found[pick] for claim, found, pick in zip(claims, nodes, combo, strict=True)}
        for combo in combos
    )
    return list(islice(pins, ATTEMPTS))


def _unallocated_shared(
    ledger: DeviceLedger, needs: Mapping[str, tuple[Need, ...]], shapes: Sequence[Shape]
) -> list[_Shared]:
    """The claims two or more of the gang's pods share that are still to allocate, in
    the order their first pod is placed. A claim whose first pod uses an earlier one
    goes where that one goes, so it is not pinned itself."""
    pods_of: dict[Hashable, set[str]] = {}
    first: dict[Hashable, tuple[str, Shape]] = {}
    following: set[Hashable] = set()
    for shape in shapes:
        for pod in shape.pods:
            keys = [
                need.key
                for need in needs.get(pod, ())
                if need.shared and need.allocated is None and need.key not in ledger.made
            ]
            new = [key for key in keys if key not in pods_of]
            joined = len(new) < len(keys)  # the pod uses a claim met before
            following.update(new if joined else new[1:])
            for key in keys:
                pods_of.setdefault(key, set()).add(pod)
                first.setdefault(key, (pod, shape))
    return [
        _Shared(key, frozenset(pods), *first[key])
        for key, pods in pods_of.items()
        if len(pods) > 1 and key not in following
    ]


def _candidates(
    devices: GangDevices, free: Matrix, claim: _Shared, *, within: BoolArray, order: NodeOrder
) -> list[int]:
    """The nodes where the claim's first pod fits with all its claims: those that hold
    the most of the claim's pods first, then in best-fit order."""
    shape = claim.shape
    allowed = within & devices.ledger.allowed(devices.needs.get(claim.first, ()))
    copies = shape.copies(free, allowed)
    if not copies.any():
        return []
    ranked = fill_order(free, shape.demand, copies, order)
    hosted = np.minimum(copies[ranked], len(claim.pods))
    return [int(slot) for slot in ranked[np.argsort(-hosted, kind="stable")]]


def _by_latest_choice(lengths: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Index tuples into lists of these lengths, those whose largest index is the
    smallest first (every claim's first nodes before any claim's later ones)."""
    if not lengths or min(lengths) == 0:
        return
    reach = min(max(lengths), ATTEMPTS)
    for latest in range(reach):
        ranges = [range(min(latest + 1, length)) for length in lengths]
        for combo in product(*ranges):
            if max(combo) == latest:
                yield combo
