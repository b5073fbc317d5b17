"""Making room for a gang by preempting strictly lower-priority pods.

A victim is a *unit*: a whole gang when its disruptionMode is `all` (the default), one
pod of a `single` gang, or one plain pod. Units are compared by priority (a gang
member counts with its gang's priority), and the search minimises:

1. the highest victim priority: a binary search over the distinct priorities finds
   the lowest level L such that the gang fits once every unit at or below L is gone;
2. the number of victim pods, approximately: the gang is placed as if all those units
   were gone, preferring nodes without candidates, then nodes whose candidates have
   the lowest priority and are fewest; only the nodes it lands on and that are short
   need victims; each such node takes units lowest priority first, smallest first,
   until it is no longer short; then every unit whose removal keeps all nodes covered
   is dropped again (highest priority, largest first); finally, when at most
   `REFIT_LIMIT` units remain, each is tried away with a fresh placement of the gang.
   On random tiny clusters this takes more victims than an exhaustive search in about
   0.2% of the cases (see the unit tests).

PodDisruptionBudgets weigh as they do in kube-scheduler, at the level of units (see
`budgets`): a unit that, taken alone, would take more pods of a budget than it allows
*violates* it. The whole search is first made among the units that violate nothing;
only when they cannot make room is it made again with every unit, and then nodes with
fewer violating candidates come first, non-violating units are taken first and
violating ones are the first tried away again (kube-scheduler reprieves PDB-violating
victims first, and picks the node with the fewest PDB violations). Victims that
violate a budget, and the pods of a gang that falls whole, must go even if an
eviction is refused (`Victim.must_go`): kube-scheduler deletes its victims.

With a topology key, the domains where more of the gang fits before any victim leaves
are tried first (the domain choice is not searched exhaustively for the fewest
victims). The gang is never admitted with victims unless its placement fits after they
are gone, and a pod is a victim at most once per cycle.

Unlike kube-scheduler, the engine never takes a pod of `kube-system` as a victim: the
installation's pod-rights policy refuses the operator's evictions there, so that an
operator that errs, or is taken over, cannot take the cluster's own components down,
and a plan that needed one could never be carried out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from muster.api.constants import UNEVICTABLE_NAMESPACE
from muster.api.keys import GroupKey, PodKey
from muster.scheduler.decisions.results import Victim
from muster.scheduler.placement.fit import Counts, Matrix
from muster.scheduler.placement.topology import GangPlacement
from muster.scheduler.rules.budgets import Violations, violations
from muster.scheduler.state.predicates import NodeTable
from muster.scheduler.state.state import ClusterState
from muster.scheduler.state.store import NO_GROUP

REFIT_LIMIT = 16  # victim units tried away one by one with a full refit

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
Demand = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class PreemptionPlan:
    placement: GangPlacement  # where the gang goes once the victims are gone
    victims: tuple[Victim, ...]  # sorted by pod
    remaining_free: Matrix  # the cycle's view afterwards, for the gangs behind
    violations: Violations  # what the victims break, taken together


@dataclass(frozen=True, slots=True)
class _Unit:
    """Pods that fall together, ranked cheapest first: violating no budget before
    violating one, then priority, pods, first pod's name."""

    rank: tuple[int, int, int, str, str]
    slots: tuple[int, ...]  # pod slots of its pods that take capacity
    nodes: tuple[int, ...]  # the node slot of each of those pods


@dataclass(frozen=True, slots=True)
class _LevelView:
    """Candidates at or below one priority level: what they free and how many per node."""

    freed: Matrix
    count: Counts
    top: Counts  # rank of the highest candidate priority per node (-1: none)
    violating: Counts  # candidates per node whose unit violates a budget
    scale: int  # more than any count, so that cost orders by top first
    ranks: int  # more than any top + 1, so that cost orders by violations first

    def cost(self) -> Counts:
        """Per node: 0 without candidates, else (their budget violations, their top
        priority, their count)."""
        order = self.violating * self.ranks + self.top + 1
        cost: Counts = np.where(self.count > 0, order * self.scale + self.count, 0)
        return cost


class PreemptionSearch:
    """Victim selection over the state's per-pod arrays, for one cycle."""

    def __init__(
        self,
        state: ClusterState,
        table: NodeTable,
        claimed: Callable[[], Counts] | None = None,
    ) -> None:
        self.state = state
        self.table = table
        # Per pod slot, the devices allocated to its claims: one more column of what a
        # victim frees, after the state's resources (`devices.preemption`), asked when
        # needed.
        self.claimed = claimed
        self._prepared = False
        self._lowest: int | None = None  # the lowest priority a placed pod is weighed at
        self.gone = np.zeros(len(state.pod_keys), dtype=np.bool_)
        self._at_level: dict[tuple[int, bool], _LevelView] = {}

    def _prepare(self) -> None:
        state = self.state
        size = len(state.pod_keys)
        groups = _Groups(state, range(len(state.group_keys)))
        self.priority: IntArray = groups.priority(np.arange(size))
        safe = groups.of(np.arange(size))
        whole = groups.whole
        self.unit_of: IntArray = np.where(whole[safe], safe, whole.shape[0] + np.arange(size))
        self.falls_whole: BoolArray = whole[safe]
        self.node_of = state.pod_node[:size].astype(np.int64)
        self.demand = state.pod_demand[:size]
        if self.claimed is not None:
            self.demand = np.hstack([self.demand, self.claimed()[:size, None]])
        self.live = np.zeros(size, dtype=np.bool_)
        self.live[_evictable_placed(state)] = True
        self.levels: IntArray = np.unique(self.priority[self.live])
        self.priority_rank = np.searchsorted(self.levels, self.priority)
        self.violating = self._violating()
        self._prepared = True

    def _violating(self) -> BoolArray:
        """Per pod slot: whether its unit, taken alone, violates a PodDisruptionBudget."""
        violating = np.zeros(len(self.node_of), dtype=np.bool_)
        budgets = list(self.state.budgets.values())
        if not budgets:
            return violating
        namespaces = {budget.namespace for budget in budgets}
        by_unit: dict[int, list[int]] = {}
        for slot in np.flatnonzero(self.live):
            key = self.state.pod_keys[slot]
            if key is not None and key.namespace in namespaces:
                by_unit.setdefault(int(self.unit_of[slot]), []).append(int(slot))
        for slots in by_unit.values():
            if violations([self._labelled(slots)], budgets):
                violating[slots] = True
        return violating

    def _labelled(self, slots: list[int]) -> list[tuple[PodKey, Mapping[str, str]]]:
        """The pods of these slots with their labels, by name (what budgets match)."""
        keys = sorted(key for key in (self.state.pod_keys[slot] for slot in slots) if key)
        return [(key, self.state.pods[key].record.labels) for key in keys]

    def _freed(self, slots: npt.NDArray[np.int64]) -> Matrix:
        """Capacity per node that leaves with these pods."""
        freed = np.zeros((self.table.size, self.demand.shape[1]), dtype=np.int64)
        if slots.size:
            np.add.at(freed, self.node_of[slots], self.demand[slots])
        return freed

    def _pool(self, level: int, spare_budgets: bool) -> BoolArray:
        """The candidates at or below `level`; only those violating no budget when
        `spare_budgets`."""
        pool: BoolArray = self.live & ~self.gone & (self.priority <= level)
        return pool & ~self.violating if spare_budgets else pool

    def _level(self, level: int, spare_budgets: bool) -> _LevelView:
        """What every candidate at or below `level` frees, and where they are.

        This depends only on the level (not on the gang asking), so the gangs of one
        cycle share it; victims taken are subtracted from it (`_forget`).
        """
        view = self._at_level.get((level, spare_budgets))
        if view is None:
            pool = self._pool(level, spare_budgets)
            nodes, demand = self.node_of[pool], self.demand[pool]
            freed = np.zeros((self.table.size, demand.shape[1]), dtype=np.int64)
            for column in range(demand.shape[1]):
                freed[:, column] = np.bincount(
                    nodes, weights=demand[:, column], minlength=self.table.size
                )
            count = np.bincount(nodes, minlength=self.table.size).astype(np.int64)
            top = np.full(self.table.size, -1, dtype=np.int64)
            np.maximum.at(top, nodes, self.priority_rank[pool])
            against = np.bincount(
                self.node_of[pool & self.violating], minlength=self.table.size
            ).astype(np.int64)
            view = _LevelView(
                freed, count, top, against, len(self.node_of) + 1, len(self.levels) + 1
            )
            self._at_level[(level, spare_budgets)] = view
        return view

    def _forget(self, victim_slots: npt.NDArray[np.int64]) -> None:
        """Victims are gone for the rest of the cycle: no other gang may count on them.

        `top` is left as it was: it may now overstate a node's highest candidate, which
        only makes that node look a little dearer in the placement's preference order.
        """
        self.gone[victim_slots] = True
        for (level, spare_budgets), view in self._at_level.items():
            inside = self.priority[victim_slots] <= level
            if spare_budgets:
                inside &= ~self.violating[victim_slots]
            slots = victim_slots[inside]
            np.subtract.at(view.freed, self.node_of[slots], self.demand[slots])
            np.subtract.at(view.count, self.node_of[slots], 1)
            np.subtract.at(view.violating, self.node_of[slots], self.violating[slots])

    def candidates(self, priority: int) -> npt.NDArray[np.int64]:
        """The pod slots a gang of this priority may take as victims, at most."""
        if not self._prepared:
            self._prepare()
        return np.flatnonzero(self.live & ~self.gone & (self.priority < priority))

    def has_candidates(self, priority: int) -> bool:
        """Whether any pod of lower priority takes capacity (so preemption was an option).
        Asked before any search, it weighs only the pods placed: a cycle that searches
        for none need not weigh every pod of a long queue."""
        if self._prepared:
            return bool((self.levels < priority).any())
        if self._lowest is None:
            placed = _evictable_placed(self.state)
            groups = _Groups(self.state, np.unique(self.state.pod_group[placed]))
            self._lowest = int(groups.priority(placed).min(initial=np.iinfo(np.int64).max))
        return self._lowest < priority

    def search(
        self,
        free: Matrix,
        priority: int,
        fits: Callable[[Matrix, Counts], GangPlacement],
        demands: Mapping[str, Demand],
    ) -> PreemptionPlan | None:
        if not self._prepared:
            self._prepare()
        levels = self.levels[self.levels < priority]
        if not levels.size:
            return None
        below = self.live & ~self.gone & (self.priority < priority)
        for spare_budgets in (True, False) if (below & self.violating).any() else (True,):
            lowest = self._lowest_level(free, levels, fits, spare_budgets)
            if lowest is None:
                continue
            level, best = lowest
            pool = self._pool(level, spare_budgets)
            chosen = self._cover(free, self._need(free, best, demands), pool)
            placement, chosen = self._refit_without(free, chosen, best, fits)
            return self._plan(free, placement, chosen, demands)
        return None

    def _lowest_level(
        self,
        free: Matrix,
        levels: IntArray,
        fits: Callable[[Matrix, Counts], GangPlacement],
        spare_budgets: bool,
    ) -> tuple[int, GangPlacement] | None:
        """The lowest priority level whose candidates make room, and the placement then."""

        def placement_at(level: int) -> GangPlacement:
            view = self._level(level, spare_budgets)
            return fits(free + view.freed, view.cost())

        low, high = 0, len(levels) - 1
        best = placement_at(int(levels[high]))
        if not best.placements:
            return None
        while low < high:
            middle = (low + high) // 2
            attempt = placement_at(int(levels[middle]))
            if attempt.placements:
                high, best = middle, attempt
            else:
                low = middle + 1
        return int(levels[high]), best

    @staticmethod
    def _need(free: Matrix, placement: GangPlacement, demands: Mapping[str, Demand]) -> Matrix:
        """What the placement asks of each node."""
        need = np.zeros_like(free)
        for pod, slot in placement.placements.items():
            for column, amount in demands[pod]:
                need[slot, column] += amount
        return need

    def _cover(self, free: Matrix, need: Matrix, pool: BoolArray) -> list[_Unit]:
        """Units that make room on every node the placement finds short, cheapest first,
        then without those that turn out unnecessary (most expensive tried first)."""
        short = np.flatnonzero((need > free).any(axis=1))
        short_nodes = sorted((int(node) for node in short), key=lambda n: self.table.name_rank[n])
        units = self._units_on(short_nodes, pool)
        on_node: dict[int, list[_Unit]] = {}
        for unit in units:
            for node in sorted(set(unit.nodes)):
                on_node.setdefault(node, []).append(unit)
        available = free.copy()
        chosen: list[_Unit] = []
        taken: set[_Unit] = set()
        for node in short_nodes:
            for unit in on_node.get(node, []):
                if not (need[node] > available[node]).any():
                    break
                if unit not in taken:
                    chosen.append(unit)
                    taken.add(unit)
                    self._give(available, unit, 1)
        for unit in sorted(chosen, key=lambda unit: unit.rank, reverse=True):
            self._give(available, unit, -1)
            touched = [node for node in sorted(set(unit.nodes)) if need[node].any()]
            if (need[touched] > available[touched]).any():
                self._give(available, unit, 1)
            else:
                chosen.remove(unit)
        return sorted(chosen, key=lambda unit: unit.rank)

    def _refit_without(
        self,
        free: Matrix,
        chosen: list[_Unit],
        placement: GangPlacement,
        fits: Callable[[Matrix, Counts], GangPlacement],
    ) -> tuple[GangPlacement, list[_Unit]]:
        """Try each victim away with a fresh placement (few victims only: one fit each).

        The cover keeps the placement fixed; another placement may need fewer victims,
        for instance one node emptied for several pods instead of one eviction per pod.
        """
        if len(chosen) > REFIT_LIMIT:
            return placement, chosen
        no_cost = np.zeros(self.table.size, dtype=np.int64)
        for unit in sorted(chosen, key=lambda unit: unit.rank, reverse=True):
            rest = [other for other in chosen if other is not unit]
            slots = np.array([slot for other in rest for slot in other.slots], dtype=np.int64)
            attempt = fits(free + self._freed(slots), no_cost)
            if attempt.placements:
                chosen, placement = rest, attempt
        return placement, chosen

    def _plan(
        self,
        free: Matrix,
        placement: GangPlacement,
        chosen: list[_Unit],
        demands: Mapping[str, Demand],
    ) -> PreemptionPlan:
        need = self._need(free, placement, demands)
        victim_slots = sorted(slot for unit in chosen for slot in unit.slots)
        self._forget(np.array(victim_slots, dtype=np.int64))
        freed = self._freed(np.array(victim_slots, dtype=np.int64))
        important_first = sorted(chosen, key=lambda unit: (-unit.rank[1], unit.rank[2:]))
        broken = violations(
            [self._labelled(list(unit.slots)) for unit in important_first],
            self.state.budgets.values(),
        )
        return PreemptionPlan(
            placement=placement,
            victims=self._victims(victim_slots, broken),
            remaining_free=np.minimum(free, free + freed - need),
            violations=broken,
        )

    def _give(self, available: Matrix, unit: _Unit, sign: int) -> None:
        slots = list(unit.slots)
        np.add.at(available, self.node_of[slots], sign * self.demand[slots])

    def _units_on(self, nodes: list[int], pool: BoolArray) -> list[_Unit]:
        """The candidate units with a pod on any of these nodes (with all their pods),
        cheapest first."""
        on_short = pool & np.isin(self.node_of, np.array(nodes, dtype=np.int64))
        wanted = np.unique(self.unit_of[on_short])
        members = np.flatnonzero(pool & np.isin(self.unit_of, wanted))
        slots_by_unit: dict[int, list[int]] = {}
        for slot in members:
            slots_by_unit.setdefault(int(self.unit_of[slot]), []).append(int(slot))
        units = []
        for slots in slots_by_unit.values():
            first = min(key for key in (self.state.pod_keys[slot] for slot in slots) if key)
            priority = int(self.priority[slots].max())
            violates = int(self.violating[slots].any())
            units.append(
                _Unit(
                    rank=(violates, priority, len(slots), first.namespace, first.name),
                    slots=tuple(slots),
                    nodes=tuple(int(node) for node in self.node_of[slots]),
                )
            )
        return sorted(units, key=lambda unit: unit.rank)

    def _victims(self, slots: list[int], broken: Violations) -> tuple[Victim, ...]:
        victims = []
        for slot in slots:
            key = self.state.pod_keys[slot]
            assert key is not None, "a victim's pod slot always names its pod"
            record = self.state.pods[key].record
            group = None
            if record.group_name is not None:
                candidate = GroupKey(key.namespace, record.group_name)
                group = candidate if candidate in self.state.groups else None
            must_go = bool(self.falls_whole[slot] or self.violating[slot]) or key in broken.pods
            victims.append(Victim(key, group, int(self.priority[slot]), must_go))
        return tuple(sorted(victims, key=lambda victim: victim.pod))


class _Groups:
    """The groups of `group_ids` as preemption weighs their pods: a gang's members at
    the gang's priority (`ClusterState.gang_priority`), and whether they fall whole;
    a pod of no group, or of a basic one, at its own."""

    def __init__(self, state: ClusterState, group_ids: Iterable[int]) -> None:
        self.state = state
        size = len(state.group_keys)
        self.in_gang = np.zeros(size + 1, dtype=np.bool_)
        self.whole = np.zeros(size + 1, dtype=np.bool_)
        self.gang_priority = np.zeros(size + 1, dtype=np.int64)
        floors = state.member_priority_floors()
        for group_id in group_ids:
            if group_id == NO_GROUP:
                continue
            record = state.groups.get(state.group_keys[group_id])
            if record is not None and record.gang:
                self.in_gang[group_id] = True
                self.whole[group_id] = record.falls_whole
                self.gang_priority[group_id] = state.gang_priority(record, floors)

    def of(self, slots: IntArray) -> IntArray:
        """The group id of each pod slot (one past the last group for none)."""
        group_of = self.state.pod_group[slots]
        return np.where(group_of == NO_GROUP, self.whole.shape[0] - 1, group_of)

    def priority(self, slots: IntArray) -> IntArray:
        """The priority each pod of `slots` is weighed at."""
        safe = self.of(slots)
        weighed: IntArray = np.where(
            self.in_gang[safe], self.gang_priority[safe], self.state.pod_priority[slots]
        )
        return weighed


def _evictable_placed(state: ClusterState) -> IntArray:
    """The slots of the pods taking capacity on a node, but those of the namespace
    whose pods are never evicted."""
    keys = state.pod_keys
    placed = np.flatnonzero(state.pod_node[: len(keys)] >= 0)
    evictable = [
        slot
        for slot in placed.tolist()
        if (key := keys[slot]) is None or key.namespace != UNEVICTABLE_NAMESPACE
    ]
    return np.array(evictable, dtype=np.int64)
