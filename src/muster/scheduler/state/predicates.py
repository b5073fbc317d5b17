"""Static predicates: which nodes a pod may use at all, whatever is free on them.

They follow kube-scheduler's filters in its order (the node-alone stage of the one
registry, `rules.filters`: NodeUnschedulable, TaintToleration, NodeAffinity) and
report, per node, the first one that fails, which is what kube-scheduler's messages
count. NodeName needs no filter: a pod that names its node is
bound there (it takes that node's capacity) and is never placed by the engine; the API
server refuses `spec.nodeName` on a pod that still carries scheduling gates. Resources
are checked separately (`fit`), because they change as pods are placed while these
answers do not.

Host ports (NodePorts) depend on the pods placed, not on the node alone, so they are
not cached here: `with_port_conflicts` narrows a cached filter per cycle, and pods with
host ports are placed at most one per node of their shape. Any IP counts as the same
IP (conservative), and a port used by a pod that is about to be preempted still counts.

Rules between pods (required pod affinity and anti-affinity, hard topology spread)
depend on where other pods are and on where the gang's own pods go, so they are not
static either: `interplay` applies them as a plan is built, after these filters and
resources, in kube-scheduler's order; `volumes` adds the nodes a bound volume can be
used from. Not modelled: other volume rules (zone labels, attach limits, unbound
claims), preferred terms and `ScheduleAnyway` spread (they only score nodes). A pod
planned onto a node kube-scheduler then refuses is rolled back with its gang as soon
as kube-scheduler marks it Unschedulable, and the refused node is left out of the
gang's next plans (`avoidance`), so a gang is never half-started because of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from muster.scheduler.rules.filters import (
    AFFINITY_MISMATCH,
    NODE_AFFINITY,
    NODE_UNSCHEDULABLE,
    PORTS_IN_USE,
    TAINT_TOLERATION,
    UNSCHEDULABLE,
    Stage,
    of_stage,
)
from muster.scheduler.rules.labels import LabelIndex
from muster.scheduler.rules.node_affinity import matching_nodes
from muster.scheduler.rules.taints import Taint, first_untolerated, tolerates_unschedulable
from muster.scheduler.state.intake import NodeRecord, PlacementRules

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int32]

PASSES = -1
FITS_ALONE_REMEMBERED = 10_000  # gangs of distinct shapes; then it starts afresh


@dataclass(frozen=True, slots=True)
class StaticFilter:
    """For one set of placement rules: allowed nodes, and for the others why not."""

    allowed: BoolArray
    reason_of: IntArray  # per node slot: index into `reasons`, PASSES when allowed
    reasons: tuple[str, ...]


def with_port_conflicts(rules_filter: StaticFilter, conflicts: BoolArray) -> StaticFilter:
    """The filter, also refusing nodes where a wanted host port is taken (NodePorts)."""
    return with_refusals(rules_filter, conflicts, PORTS_IN_USE)


def with_refusals(rules_filter: StaticFilter, refused: BoolArray, reason: str) -> StaticFilter:
    """The filter, also refusing `refused` nodes for `reason` (where nothing did before)."""
    fresh = refused & rules_filter.allowed
    if not fresh.any():
        return rules_filter
    reasons = (*rules_filter.reasons, reason)
    reason_of = np.where(fresh, len(reasons) - 1, rules_filter.reason_of).astype(np.int32)
    return StaticFilter(rules_filter.allowed & ~fresh, reason_of, reasons)


@dataclass(slots=True)
class NodeTable:
    """The predicate-relevant part of the node set at one version, shared by cycles.

    Made by `NodeColumns` when nodes are added, removed or relabelled, and never
    changed afterwards; filters computed for it are cached here for the same reason.
    """

    records: list[NodeRecord | None]  # by slot; None for a free slot
    alive: BoolArray
    unschedulable: BoolArray
    taint_set_of: IntArray  # per slot: the id of its node's taint set
    taint_sets: dict[int, tuple[Taint, ...]]  # by id, each set some node carries
    name_rank: IntArray  # orders the live slots by node name
    labels: LabelIndex = field(init=False)
    _filters: dict[PlacementRules, StaticFilter] = field(init=False)
    _digest: str | None = field(init=False)
    _fits_alone: set[Hashable] = field(init=False)

    def __post_init__(self) -> None:
        self.labels = LabelIndex(
            [record.name if record else None for record in self.records],
            [record.labels if record else {} for record in self.records],
        )
        self._filters = {}
        self._digest = None
        self._fits_alone = set()

    def fits_alone(self, gang_shapes: Hashable) -> bool:
        """Whether a gang of these shapes (and these allocatable amounts) was seen to fit
        on this node set with no other pod: a question asked of every gang that waits,
        every cycle, and answered the same until the nodes change."""
        return gang_shapes in self._fits_alone

    def remember_fits_alone(self, gang_shapes: Hashable) -> None:
        if len(self._fits_alone) >= FITS_ALONE_REMEMBERED:
            self._fits_alone.clear()
        self._fits_alone.add(gang_shapes)

    @property
    def size(self) -> int:
        return len(self.records)

    def name(self, slot: int) -> str:
        record = self.records[slot]
        assert record is not None, "a placement never names a free slot"
        return record.name

    def digest(self) -> str:
        """A short digest of every node's name, labels, taints and unschedulable flag:
        what a gang's refusal memory is tied to. Computed once per node set (a cycle
        that needs it would otherwise hash 5,000 nodes each time)."""
        if self._digest is None:
            views = sorted(
                (record.name, record.placement_view())
                for record in self.records
                if record is not None
            )
            self._digest = hashlib.sha256(repr(views).encode()).hexdigest()[:16]
        return self._digest

    def static_filter(self, rules: PlacementRules) -> StaticFilter:
        cached = self._filters.get(rules)
        if cached is None:
            cached = self._compute(rules)
            self._filters[rules] = cached
        return cached

    def _compute(self, rules: PlacementRules) -> StaticFilter:
        """Each node refused by the first of the node-alone filters (`rules.filters`)
        that fails it, in their order."""
        reasons: list[str] = []
        reason_of = np.full(self.size, PASSES, dtype=np.int32)
        checks: dict[str, Callable[[PlacementRules], Iterator[tuple[BoolArray, str]]]] = {
            NODE_UNSCHEDULABLE: self._unschedulable,
            TAINT_TOLERATION: self._untolerated,
            NODE_AFFINITY: self._mismatched,
        }
        for node_filter in of_stage(Stage.NODE):
            for nodes, reason in checks[node_filter.name](rules):
                fresh = nodes & (reason_of == PASSES) & self.alive
                if fresh.any():
                    if reason not in reasons:
                        reasons.append(reason)
                    reason_of[fresh] = reasons.index(reason)
        allowed = self.alive & (reason_of == PASSES)
        return StaticFilter(allowed=allowed, reason_of=reason_of, reasons=tuple(reasons))

    def _unschedulable(self, rules: PlacementRules) -> Iterator[tuple[BoolArray, str]]:
        if not tolerates_unschedulable(rules.tolerations):
            yield self.unschedulable, UNSCHEDULABLE

    def _untolerated(self, rules: PlacementRules) -> Iterator[tuple[BoolArray, str]]:
        for set_id, taints in self.taint_sets.items():
            untolerated = first_untolerated(taints, rules.tolerations)
            if untolerated is not None:
                yield self.taint_set_of == set_id, untolerated.describe()

    def _mismatched(self, rules: PlacementRules) -> Iterator[tuple[BoolArray, str]]:
        if rules.node_selector or rules.required_terms is not None:
            matching = matching_nodes(rules.node_selector, rules.required_terms, self.labels)
            yield ~matching, AFFINITY_MISMATCH
