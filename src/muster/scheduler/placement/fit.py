"""Placing pods of one gang onto free capacity: best fit, vectorised over nodes.

Pods are grouped into shapes (same request vector, same placement rules). For a shape,
`copies_per_node` says how many of its pods each node can still take; the greedy then
fills nodes in best-fit order:

1. the cheapest nodes, when placing has a cost per node (preemption: the victims a node
   would need);
2. nodes with the least scarce capacity the shape would not use (a pod that does not
   ask for a GPU goes to a GPU node only when nothing else is left, and then to the
   one with the fewest free GPUs);
3. nodes that can take the fewest copies first (the fullest nodes), so large holes stay
   whole for the gangs behind;
4. node name, for determinism.

Shapes are placed largest first (by dominant share of the biggest node), the classic
first-fit-decreasing order; if that leaves the gang short, the smallest-first order
(which maximises the number placed) is tried too, and both again with ties between
equally full nodes broken the other way round (reverse name order). For gangs of one shape this is
exact. For mixed shapes it is a heuristic: on random small clusters (2-3 nodes of cpu
and GPUs, gangs of 3-5 pods in two to four shapes, every pod required) an exhaustive
search found no placement the greedy missed in 6,560 feasible cases (before the
reverse tie-break and the graded stranding key: 3 in 1,333, typically two nodes tying
for a large pod where the wrong one strands the small pods' GPUs). It is not exact:
the unit tests keep measuring the gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from muster.scheduler.state.predicates import StaticFilter

Matrix = npt.NDArray[np.int64]
Counts = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int32]

COMMON_RESOURCES = frozenset({"pods", "cpu", "memory", "ephemeral-storage"})


@dataclass(frozen=True, slots=True)
class Shape:
    """Member pods that ask for the same amounts under the same rules."""

    demand: Counts  # per resource column; the pod-count column is 1
    rules_filter: StaticFilter
    pods: tuple[str, ...]  # pod names, sorted
    one_per_node: bool = False  # host ports, or one per node by anti-affinity
    inter_pod_filter: StaticFilter | None = None  # inter-pod rules before the gang is placed

    def copies(self, free: Matrix, within: BoolArray) -> Counts:
        """How many of these pods each node can still take."""
        allowed = self.rules_filter.allowed & within
        if self.inter_pod_filter is not None:
            allowed = allowed & self.inter_pod_filter.allowed
        copies = copies_per_node(free, self.demand, allowed)
        if self.one_per_node:
            np.minimum(copies, 1, out=copies)
        return copies

    def size_key(self, largest: Counts) -> float:
        """Dominant share: the largest fraction of the biggest node this pod takes."""
        asked = np.flatnonzero(self.demand)
        offered = largest[asked]
        if (offered == 0).any():
            return float("inf")
        return float((self.demand[asked] / offered).max())


@dataclass(frozen=True, slots=True)
class NodeOrder:
    """What best fit needs to know about the nodes besides free capacity."""

    name_rank: IntArray
    scarce_columns: tuple[int, ...]  # resources a pod should not strand (GPUs, ...)
    cost: Counts | None = None  # per node, lower first; None: all nodes cost the same
    stranded: Counts | None = None  # per node, scarce capacity outside `free` (devices)

    def with_cost(self, cost: Counts) -> NodeOrder:
        return replace(self, cost=cost)


def scarce_columns(resource_names: Sequence[str]) -> tuple[int, ...]:
    return tuple(
        column for column, name in enumerate(resource_names) if name not in COMMON_RESOURCES
    )


def copies_per_node(free: Matrix, demand: Counts, allowed: BoolArray) -> Counts:
    """How many pods of this demand fit on each node (0 where not allowed)."""
    asked = np.flatnonzero(demand)
    per_resource = free[:, asked] // demand[asked]
    copies: Counts = per_resource.min(axis=1)
    np.maximum(copies, 0, out=copies)
    copies[~allowed] = 0
    return copies


def domain_counts(per_node: Counts, values: IntArray, domains: int) -> Counts:
    """Per domain id, the sum of `per_node` over the nodes labelled with it (`values`:
    each node's domain id, -1 without the label)."""
    labelled = values >= 0
    counted: Counts = np.bincount(
        values[labelled], weights=per_node[labelled], minlength=domains
    ).astype(np.int64)
    return counted


def _strands(free: Matrix, demand: Counts, candidates: IntArray, order: NodeOrder) -> Counts:
    """Scarce capacity a pod would leave unused on each candidate (lower is better).
    `order.stranded` (free devices) counts whatever the pod claims: it claims as many on
    every candidate, so the fewest left is the fewest free."""
    strands = np.zeros(candidates.size, dtype=np.int64)
    for column in order.scarce_columns:
        if demand[column] == 0:
            strands += np.maximum(free[candidates, column], 0)
    if order.stranded is not None:
        strands += order.stranded[candidates]
    return strands


def fill_order(free: Matrix, demand: Counts, copies: Counts, order: NodeOrder) -> IntArray:
    candidates = np.flatnonzero(copies).astype(np.int32)
    strands = _strands(free, demand, candidates, order)
    keys: list[npt.NDArray[np.integer[Any]]] = [
        order.name_rank[candidates],
        copies[candidates],
        strands,
    ]
    if order.cost is not None:
        keys.append(order.cost[candidates])
    ranking = np.lexsort(keys)
    return candidates[ranking]


def best_slot(free: Matrix, demand: Counts, copies: Counts, order: NodeOrder) -> int:
    """The node `fill_order` would fill first (copies must not be all zero)."""
    candidates = np.flatnonzero(copies).astype(np.int32)
    if order.cost is not None:
        cost = order.cost[candidates]
        candidates = candidates[cost == cost.min()]
    strands = _strands(free, demand, candidates, order)
    candidates = candidates[strands == strands.min()]
    fewest = copies[candidates]
    candidates = candidates[fewest == fewest.min()]
    return int(candidates[np.argmin(order.name_rank[candidates])])


def place_shape(
    free: Matrix, shape: Shape, within: BoolArray, order: NodeOrder, limit: int
) -> list[tuple[str, int]]:
    """Place up to `limit` pods of the shape best-fit; subtract them from `free`."""
    copies = shape.copies(free, within)
    wanted = min(limit, len(shape.pods))
    if wanted == 0 or not copies.any():
        return []
    nodes = fill_order(free, shape.demand, copies, order)
    taken = copies[nodes]
    reach = int(np.searchsorted(np.cumsum(taken), wanted))
    nodes, taken = nodes[: reach + 1], taken[: reach + 1].copy()
    taken[-1] -= max(int(taken.sum()) - wanted, 0)
    free[nodes] -= taken[:, None] * shape.demand[None, :]
    slots = np.repeat(nodes, taken)
    return list(zip(shape.pods, (int(slot) for slot in slots), strict=False))


def place_greedily(
    free: Matrix, shapes: Sequence[Shape], within: BoolArray, order: NodeOrder, limit: int
) -> dict[str, int]:
    """Place shapes in the given order, up to `limit` pods in all, on a copy of `free`."""
    work = free.copy()
    placed: dict[str, int] = {}
    for shape in shapes:
        placed.update(place_shape(work, shape, within, order, limit - len(placed)))
    return placed


def place_gang(
    free: Matrix,
    shapes: Sequence[Shape],
    *,
    within: BoolArray,
    order: NodeOrder,
    largest: Counts,
    needed: int,
    limit: int | None = None,
) -> dict[str, int]:
    """Pod name -> node slot for as many members as fit (up to `limit`), trying other
    orders if short.

    The result may hold fewer than `needed` pods: the caller decides what that means.
    """
    total = sum(len(shape.pods) for shape in shapes) if limit is None else limit
    by_size = sorted(shapes, key=lambda shape: (-shape.size_key(largest), shape.pods))
    best = place_greedily(free, by_size, within, order, total)
    if len(best) >= needed or len(shapes) == 1:
        return best
    mirrored = replace(order, name_rank=order.name_rank.max(initial=0) - order.name_rank)
    for shape_order, node_order in (
        (by_size[::-1], order),
        (by_size, mirrored),
        (by_size[::-1], mirrored),
    ):
        placed = place_greedily(free, shape_order, within, node_order, total)
        if len(placed) >= needed:
            return placed
        if len(placed) > len(best):
            best = placed
    return best


def upper_bound(free: Matrix, shapes: Sequence[Shape], within: BoolArray) -> int:
    """At most this many members fit at once (exact for a single shape)."""
    return sum(min(len(shape.pods), int(shape.copies(free, within).sum())) for shape in shapes)
