"""Why a gang waits: counted reasons per node in kube-scheduler's words, then the gang view.

For nodes that cannot take any member pod, the reasons are those of the gang's largest
shape, counted filter by filter in the one registry's order (`rules.filters`), as
kube-scheduler turns its Filter plugins' statuses into the FailedScheduling message:
the first failing filter, or else every resource that is short (`Insufficient cpu`,
`Too many pods`). Structured data comes
first (`Explanation`); the sentence is rendered from it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from muster.scheduler.decisions.results import (
    DomainFit,
    Explanation,
    Shortage,
    Shortfall,
    SliceFit,
)
from muster.scheduler.objects.quantity import MILLI_RESOURCES
from muster.scheduler.placement.fit import Matrix, Shape, domain_counts
from muster.scheduler.placement.slicing import Slicing
from muster.scheduler.rules.filters import (
    CLOSED_FOR_OLDER,
    CLOSED_FOR_OLDER_GANG,
    INSUFFICIENT,
    STAGES,
    TOO_MANY_PODS,
    TOPOLOGY_KEY,
    Stage,
    insufficient,
    missing_label,
    of_stage,
)
from muster.scheduler.state.intake import POD_COUNT
from muster.scheduler.state.predicates import PASSES, NodeTable, StaticFilter

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int32]

BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage"})

PREEMPTION_WOULD_NOT_HELP = "preempting every lower-priority pod would not make room"
NEVER_FITS = "it does not fit even on an empty cluster"
NO_NODE_CARRIES = "no node carries"
SHOWN_DOMAINS = 6


@dataclass(frozen=True, slots=True)
class GangBounds:
    """Where the gang may go at all (the filters of stage GANG): the nodes closed for
    gangs that have waited longer, and, with a topology key, the nodes without it."""

    closed: BoolArray
    topology_key: str | None
    unlabelled: BoolArray


def shortages(
    free: Matrix,
    *,
    shapes: Sequence[Shape],
    table: NodeTable,
    bounds: GangBounds,
    resource_names: Sequence[str],
    scope: BoolArray | None = None,
) -> tuple[int, tuple[Shortage, ...]]:
    """Nodes that can take some member pod, and what keeps the others out.

    The refused nodes are counted filter by filter in the registry's order
    (`rules.filters`), each for the first that fails it, as kube-scheduler's
    FailedScheduling message counts them; the node-alone and cycle filters come
    together as the shape's filter, which records the first of them that failed;
    resources count every short one. `scope`: the nodes counted (every live node when
    None: one domain when the gang's rules were judged inside it).
    """
    usable = ~bounds.closed & ~bounds.unlabelled
    counted = table.alive if scope is None else table.alive & scope
    feasible = np.zeros(table.size, dtype=np.bool_)
    for shape in shapes:
        feasible |= shape.copies(free, usable) > 0
    feasible &= counted
    tally = _Tally(counted & ~feasible, shapes[0], free, bounds)
    for stage in STAGES:
        tally.count(stage, resource_names)
    ordered = sorted(
        (Shortage(reason, nodes) for reason, nodes in tally.counts.items() if nodes),
        key=lambda shortage: (-shortage.nodes, shortage.reason),
    )
    return int(feasible.sum()), tuple(ordered)


class _Tally:
    """The blocked nodes not yet counted, and the counts so far, stage by stage."""

    def __init__(self, blocked: BoolArray, primary: Shape, free: Matrix, bounds: GangBounds):
        self.blocked = blocked
        self.primary = primary  # the gang's largest shape, whose reasons are told
        self.free = free
        self.bounds = bounds
        self.counts: Counter[str] = Counter()
        self.roomy = blocked  # nodes with room for the primary shape: inter-pod's to tell

    def count(self, stage: Stage, resource_names: Sequence[str]) -> None:
        if stage is Stage.NODE:  # with CYCLE: the first of either that failed, per node
            rules_filter = self.primary.rules_filter
            self._by_filter(rules_filter)
            self.blocked = self.blocked & (rules_filter.reason_of == PASSES)
        elif stage is Stage.GANG:
            for gang_filter in of_stage(Stage.GANG):
                self._by_gang_filter(gang_filter.name)
        elif stage is Stage.RESOURCES:
            self._by_resource(resource_names)
        elif stage is Stage.INTER_POD and self.primary.inter_pod_filter is not None:
            # kube-scheduler runs these filters after resources
            inter_pod = self.primary.inter_pod_filter
            for reason_id, reason in enumerate(inter_pod.reasons):
                self.counts[reason] += int((self.roomy & (inter_pod.reason_of == reason_id)).sum())

    def _by_filter(self, rules_filter: StaticFilter) -> None:
        for reason_id, reason in enumerate(rules_filter.reasons):
            self.counts[reason] += int((self.blocked & (rules_filter.reason_of == reason_id)).sum())

    def _by_gang_filter(self, name: str) -> None:
        bounds = self.bounds
        if name == TOPOLOGY_KEY and bounds.topology_key is not None:
            refused = bounds.unlabelled
            self.counts[missing_label(bounds.topology_key)] += int((self.blocked & refused).sum())
        elif name == CLOSED_FOR_OLDER:
            refused = bounds.closed
            self.counts[CLOSED_FOR_OLDER_GANG] += int((self.blocked & refused).sum())
        else:
            return
        self.blocked = self.blocked & ~refused

    def _by_resource(self, resource_names: Sequence[str]) -> None:
        primary, roomy = self.primary, self.blocked.copy()
        for column in np.flatnonzero(primary.demand):
            short = self.blocked & (self.free[:, column] < primary.demand[column])
            self.counts[insufficient(resource_names[int(column)])] += int(short.sum())
            roomy &= ~short
        self.roomy = roomy


def shortfalls(
    free: Matrix,
    *,
    shapes: Sequence[Shape],
    usable: BoolArray,
    missing: int,
    domain_of: IntArray | None,
    resource_names: Sequence[str],
) -> tuple[Shortfall, ...]:
    """Resources the gang lacks in total, not only on single nodes.

    What the `missing` smallest pending pods need of each resource is compared with
    what is free on the nodes any of its pods may use (per domain with a topology key,
    `domain_of` giving each node's domain id, -1 for none: the best domain counts).
    """
    reachable = np.zeros_like(usable)
    for shape in shapes:
        reachable |= shape.rules_filter.allowed & usable
    if not reachable.any():
        return ()  # a rule keeps every pod off every node: the reasons say which
    found = []
    for column, name in enumerate(resource_names):
        if name == POD_COUNT:
            continue  # "Too many pods" already says it, node by node
        asks = sorted(
            amount for shape in shapes for amount in [int(shape.demand[column])] * len(shape.pods)
        )
        needed = sum(asks[:missing])
        if needed == 0:
            continue
        room = np.maximum(free[:, column], 0)
        if domain_of is None:
            available = int(room[reachable].sum())
        else:
            inside = reachable & (domain_of >= 0)
            per_domain = np.bincount(domain_of[inside], weights=room[inside])
            available = int(per_domain.max(initial=0))
        if needed > available:
            found.append(Shortfall(name, needed, available))
    return tuple(sorted(found, key=lambda shortfall: shortfall.resource))


def format_amount(resource: str, amount: int) -> str:
    """An amount as users write it: cores for cpu, Gi/Mi for memory and storage."""
    if resource in MILLI_RESOURCES:
        return f"{amount / 1000:g}"
    if resource in BYTE_RESOURCES or resource.startswith("hugepages-"):
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount >= size:
                return f"{amount / size:.4g}{suffix}"
    return str(amount)


def too_large(
    capacity: Matrix, *, shapes: Sequence[Shape], alive: BoolArray, resource_names: Sequence[str]
) -> tuple[Shortfall, ...]:
    """Resources a member pod asks more of than any node it may use has allocatable
    (`free` is the most such a node has): no amount of waiting makes room for it.
    Shapes no node may take at all are left to the rules that keep them out."""
    found: dict[str, Shortfall] = {}
    for shape in shapes:
        allowed = shape.rules_filter.allowed & alive
        if not allowed.any():
            continue
        for column in np.flatnonzero(shape.demand):
            name = resource_names[int(column)]
            most = int(capacity[allowed, column].max())
            asked = int(shape.demand[column])
            known = found.get(name)
            if name != POD_COUNT and asked > most and (known is None or asked > known.needed):
                found[name] = Shortfall(name, asked, most)
    return tuple(sorted(found.values(), key=lambda shortfall: shortfall.resource))


def slice_fit(
    free: Matrix, *, shapes: Sequence[Shape], usable: BoolArray, slicing: Slicing
) -> SliceFit:
    """The gang's slices, and the slice domain taking the most of its pods on `free`
    when none has room for a whole slice (ties to the name that sorts first)."""
    values, names = slicing.values, slicing.names
    room = np.zeros(len(names), dtype=np.int64)
    for shape in shapes:
        per_domain = domain_counts(shape.copies(free, usable), values, len(names))
        room += np.minimum(per_domain, len(shape.pods))
    if not names or int(room.max()) >= slicing.size:
        return SliceFit(slicing.key, slicing.size)
    best = min(range(len(names)), key=lambda value_id: (-int(room[value_id]), names[value_id]))
    return SliceFit(
        slicing.key, slicing.size, DomainFit(f"{slicing.key}={names[best]}", int(room[best]))
    )


def _shown_domains(domains: Sequence[DomainFit]) -> str:
    if len(domains) <= SHOWN_DOMAINS:
        return ", ".join(f"{fit.domain}: {fit.fits}" for fit in domains)
    best = sorted(domains, key=lambda fit: (-fit.fits, fit.domain))[:SHOWN_DOMAINS]
    shown = ", ".join(f"{fit.domain}: {fit.fits}" for fit in sorted(best, key=lambda f: f.domain))
    return f"{shown}, {len(domains) - SHOWN_DOMAINS} more"


def nodes_line(explanation: Explanation) -> str:
    """`0/8 nodes can host a pod of the gang once 8 are placed`: what the node counts
    are of, so that they never contradict how many pods fit."""
    where = f"in {explanation.counted_in}, " if explanation.counted_in is not None else ""
    line = (
        f"{where}{explanation.nodes_feasible}/{explanation.nodes_total} nodes "
        "can host a pod of the gang"
    )
    if explanation.placed_first:
        line = f"{line} once {explanation.placed_first} are placed"
    return line


def _fragmented(explanation: Explanation) -> bool:
    """Whether only resources keep its pods off the nodes, and enough is free in total:
    the free capacity is split in pieces too small for its pods."""
    return (
        bool(explanation.nodes_total)
        and not explanation.shortfalls
        and not explanation.too_large
        and not explanation.placed_first
        and all(_is_resource_reason(item.reason) for item in explanation.shortages)
    )


def _is_resource_reason(reason: str) -> bool:
    return reason == TOO_MANY_PODS or reason.startswith(INSUFFICIENT)


def unschedulable_message(
    explanation: Explanation, topology_key: str | None, *, spread_limited: bool = False
) -> str:
    """`0/12 nodes can host a pod of the gang: 8 Insufficient nvidia.com/gpu; the gang ...`

    After the gang view comes what it lacks in total, or that a pod is larger than any
    node, or, when only resources keep its pods out and enough is free in total, that
    the free capacity is fragmented (unless `spread_limited`: pods that must not share
    a node are then the likelier cause). A gang that does not fit even on the empty
    cluster is told so first, with the counts of the empty cluster; one whose topology
    key no node carries (it has no domain at all), that first of all.
    """
    head = nodes_line(explanation)
    if topology_key is not None and not explanation.domains:
        head = f"{NO_NODE_CARRIES} {topology_key}; {head}"
    if explanation.shortages:
        reasons = ", ".join(f"{item.nodes} {item.reason}" for item in explanation.shortages)
        head = f"{head}: {reasons}"
    tail = f"the gang needs {explanation.needed} pods"
    slices = explanation.slices
    if slices is not None:
        tail = f"{tail} in slices of {slices.size}, each in one {slices.key} domain"
    tail = f"{tail}, at most {explanation.best_fit} fit at once"
    if topology_key is not None and explanation.domains:
        tail = f"{tail} ({_shown_domains(explanation.domains)})"
    if slices is not None and slices.most is not None:
        most = slices.most
        tail = (
            f"{tail}; no {slices.key} domain has room for a slice of {slices.size}: "
            f"{most.domain.split('=', 1)[1]} takes {most.fits}"
        )
    counted_as = "allocatable" if explanation.never else "free"
    if explanation.too_large:
        larger = ", ".join(
            f"no node has {format_amount(item.resource, item.needed)} {item.resource} allocatable"
            for item in explanation.too_large
        )
        tail = f"{tail}; {larger}"
    larger_than_nodes = {item.resource for item in explanation.too_large}
    in_total = [item for item in explanation.shortfalls if item.resource not in larger_than_nodes]
    if in_total:
        short = ", ".join(
            f"{item.resource} (needs {format_amount(item.resource, item.needed)}, "
            f"{format_amount(item.resource, item.free)} {counted_as})"
            for item in in_total
        )
        where = f" in any one {topology_key} domain" if topology_key is not None else ""
        tail = f"{tail}; short in total{where}: {short}"
    elif _fragmented(explanation) and not spread_limited:
        tail = f"{tail}; enough is free in total, but split across nodes in too small pieces"
    message = f"{head}; {tail}"
    return f"{NEVER_FITS}: {message}" if explanation.never else message


def waiting_message(existing: int, needed: int, *, paused: bool = False) -> str:
    """`2/4 member pods exist; waiting for 2 more`; for a gang whose Job is paused
    and has no pod left, that it is paused (it waits for no pod)."""
    if paused and existing == 0:
        return "paused: its Job runs no pods (parallelism 0)"
    return f"{existing}/{needed} member pods exist; waiting for {needed - existing} more"
