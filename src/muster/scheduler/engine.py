"""One scheduling cycle: the queue walked in order over one consistent view.

1. Take the view: free capacity = allocatable - held (bound pods and reservations).
2. Repair admitted gangs that dropped below `minCount` (their replacement pods first).
3. Walk pending gangs by priority, then age: admit each gang that fits (its placements
   are taken out of the view at once), else try preemption, else explain why not. A
   gang that does not fit never blocks the ones behind it, unless it has waited past
   `starvation_seconds`: then it holds capacity (see `_hold`), and later gangs cannot
   take it.
4. Grow admitted gangs with members beyond `minCount`, as they fit.

The state is only read: every decision lives in the returned `CycleResult`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from muster.scheduler.config import EngineConfig
from muster.scheduler.explain import shortages, unschedulable_message, waiting_message
from muster.scheduler.fit import (
    Counts,
    Matrix,
    NodeOrder,
    Shape,
    place_gang,
    place_greedily,
    scarce_columns,
)
from muster.scheduler.intake import PlacementRules
from muster.scheduler.preemption import PreemptionSearch
from muster.scheduler.queue import Gang, gangs_of
from muster.scheduler.results import (
    Admission,
    CycleResult,
    Explanation,
    GroupKey,
    Growth,
    PodKey,
    Reason,
    Verdict,
)
from muster.scheduler.state import ClusterState, PodEntry
from muster.scheduler.topology import GangPlacement, fit_anywhere, fit_in_domain

BoolArray = npt.NDArray[np.bool_]


def schedule(state: ClusterState, *, now: float, config: EngineConfig) -> CycleResult:
    """Decide one cycle: admissions, growths of admitted gangs, verdicts for the rest."""
    return _Cycle(state, now, config).run()


class _Cycle:
    def __init__(self, state: ClusterState, now: float, config: EngineConfig) -> None:
        self.state = state
        self.now = now
        self.config = config
        self.table = state.node_table()
        nodes = self.table.size
        self.free: Matrix = state.allocatable[:nodes] - state.held[:nodes]
        self.largest = state.allocatable[:nodes].max(axis=0, initial=0)
        self.order = NodeOrder(self.table.name_rank, scarce_columns(state.resource_names))
        self.held_for_older = np.zeros(self.table.size, dtype=np.bool_)
        self.reserved_for_older: Matrix = np.zeros_like(self.free)
        self.preemption = PreemptionSearch(state, self.table)
        self.admissions: list[Admission] = []
        self.growths: dict[GroupKey, dict[str, str]] = {}
        self.verdicts: dict[GroupKey, Verdict] = {}

    def run(self) -> CycleResult:
        gangs = gangs_of(self.state, self.now)
        admitted = [gang for gang in gangs if gang.record.admitted and gang.pending]
        for gang in admitted:
            if gang.missing:
                self._grow(gang, limit=gang.missing)
        pending = [gang for gang in gangs if not gang.record.admitted]
        for position, gang in enumerate(pending, start=1):
            self._decide_safely(gang, position)
        for gang in admitted:
            self._grow(gang, limit=len(gang.pending))
        return CycleResult(
            admissions=tuple(self.admissions),
            growths=tuple(
                Growth(key, placements) for key, placements in sorted(self.growths.items())
            ),
            verdicts=self.verdicts,
        )

    # ---- shapes and placements ---------------------------------------------------

    def _shapes(self, pods: Sequence[PodEntry]) -> list[Shape]:
        by_shape: dict[tuple[tuple[tuple[int, int], ...], PlacementRules], list[str]] = {}
        for entry in pods:
            assert entry.record.rules is not None, "pending pods carry placement rules"
            by_shape.setdefault((entry.demand, entry.record.rules), []).append(
                entry.record.key.name
            )
        shapes = []
        for (demand, rules), names in by_shape.items():
            shapes.append(
                Shape(
                    self.state.demand_vector(demand),
                    self.table.static_filter(rules),
                    tuple(sorted(names)),
                )
            )
        return sorted(shapes, key=lambda shape: (-shape.size_key(self.largest), shape.pods))

    def _demands(self, gang: Gang) -> dict[str, tuple[tuple[int, int], ...]]:
        return {entry.record.key.name: entry.demand for entry in gang.pending}

    def _take(self, free: Matrix, gang: Gang, placements: dict[str, int], sign: int = 1) -> None:
        demands = self._demands(gang)
        for pod, slot in placements.items():
            row = free[slot]
            for column, amount in demands[pod]:
                row[column] -= sign * amount

    def _node_names(self, placements: dict[str, int]) -> dict[str, str]:
        return {pod: self.table.name(slot) for pod, slot in sorted(placements.items())}

    def _fit(
        self,
        free: Matrix,
        gang: Gang,
        shapes: Sequence[Shape],
        needed: int,
        order: NodeOrder | None = None,
    ) -> GangPlacement:
        within = ~self.held_for_older
        order = order or self.order
        key = gang.record.topology_key
        if key is None:
            return fit_anywhere(
                free, shapes, within=within, order=order, largest=self.largest, needed=needed
            )
        return fit_in_domain(
            free,
            shapes,
            within=within,
            order=order,
            largest=self.largest,
            needed=needed,
            key=key,
            labels=self.table.labels,
        )

    # ---- pending gangs -------------------------------------------------------------

    def _decide_safely(self, gang: Gang, position: int) -> None:
        """A failure while deciding one gang is that gang's `SchedulerError`, not the cycle's.

        Whatever the failed decision had already taken from the view stays taken (the
        view only ever shrinks during a decision), so the gangs behind it are decided
        conservatively rather than on a view that double-books.
        """
        try:
            self._decide(gang, position)
        except Exception as error:
            message = f"internal error while deciding: {type(error).__name__}: {error}"
            self.verdicts[gang.key] = Verdict(Reason.SCHEDULER_ERROR, message)

    def _decide(self, gang: Gang, position: int) -> None:
        record = gang.record
        if gang.existing < record.min_count:
            self.verdicts[gang.key] = Verdict(
                Reason.WAITING_FOR_PODS, waiting_message(gang.existing, record.min_count)
            )
            return
        shapes = self._shapes(gang.pending)
        if not shapes:
            self.admissions.append(Admission(gang.key, {}))
            return
        placement = self._fit(self.free, gang, shapes, gang.missing)
        if placement.placements or gang.missing == 0:
            self._admit(gang, placement)
            return
        if record.preempt and self._preempt(gang, shapes):
            return
        self._refuse(gang, shapes, placement, position)

    def _admit(self, gang: Gang, placement: GangPlacement) -> None:
        self._take(self.free, gang, placement.placements)
        domain = None
        if placement.domain is not None and gang.record.topology_key is not None:
            domain = (gang.record.topology_key, placement.domain)
        self.admissions.append(Admission(gang.key, self._node_names(placement.placements), domain))

    def _preempt(self, gang: Gang, shapes: Sequence[Shape]) -> bool:
        def fits(free: Matrix, cost: Counts) -> GangPlacement:
            return self._fit(free, gang, shapes, gang.missing, self.order.with_cost(cost))

        plan = self.preemption.search(self.free, gang.priority, fits, self._demands(gang))
        if plan is None:
            return False
        self.free = plan.remaining_free
        placement = plan.placement
        domain = None
        if placement.domain is not None and gang.record.topology_key is not None:
            domain = (gang.record.topology_key, placement.domain)
        self.admissions.append(
            Admission(gang.key, self._node_names(placement.placements), domain, plan.victims)
        )
        return True

    def _refuse(
        self, gang: Gang, shapes: Sequence[Shape], placement: GangPlacement, position: int
    ) -> None:
        key = gang.record.topology_key
        unlabelled = np.zeros(self.table.size, dtype=np.bool_)
        if key is not None:
            unlabelled = self.table.labels.values_of(key) < 0
        feasible, reasons = shortages(
            self.free,
            shapes=shapes,
            table=self.table,
            held_elsewhere=self.held_for_older,
            reserved=self.reserved_for_older,
            unlabelled=unlabelled,
            topology_key=key,
            resource_names=self.state.resource_names,
        )
        explanation = Explanation(
            nodes_total=int(self.table.alive.sum()),
            nodes_feasible=feasible,
            shortages=reasons,
            needed=gang.record.min_count,
            existing=gang.existing,
            best_fit=placement.best_fit + gang.held,
            domains=placement.fits,
            queue_position=position,
        )
        message = unschedulable_message(explanation, key)
        waited = self.now - gang.queued_since
        if waited > self.config.starvation_seconds:
            self._hold(gang, shapes, placement)
            message = f"{message}; holding capacity for it after {waited:.0f}s in the queue"
        self.verdicts[gang.key] = Verdict(Reason.UNSCHEDULABLE, message, explanation)

    def _hold(self, gang: Gang, shapes: Sequence[Shape], placement: GangPlacement) -> None:
        """Keep later gangs off what a starving gang needs.

        With a topology key, the whole domain where most of its pods fit is closed to
        the gangs behind it, so the domain fills up for it as pods there finish.
        Without one, the pods that fit now are placed on paper and that capacity is
        taken out of the view; every cycle the held part grows as capacity frees, until
        the whole gang fits.
        """
        key = gang.record.topology_key
        if key is not None:
            best = min(placement.fits, key=lambda fit: (-fit.fits, fit.domain))
            value = best.domain.split("=", 1)[1]
            values = self.table.labels.values_of(key)
            self.held_for_older |= values == self.table.labels.id_of(key, value)
            return
        partial = place_gang(
            self.free,
            shapes,
            within=~self.held_for_older,
            order=self.order,
            largest=self.largest,
            needed=gang.missing,
        )
        self._take(self.free, gang, partial)
        self._take(self.reserved_for_older, gang, partial, sign=-1)

    # ---- admitted gangs ------------------------------------------------------------

    def _grow(self, gang: Gang, limit: int) -> None:
        placed = self.growths.setdefault(gang.key, {})
        pending = [entry for entry in gang.pending if entry.record.key.name not in placed]
        if not pending or limit <= 0:
            if not placed:
                del self.growths[gang.key]
            return
        shapes = self._shapes(pending)
        within = ~self.held_for_older & self._domain_of(gang)
        chosen = place_greedily(self.free, shapes, within, self.order, limit)
        self._take(self.free, gang, chosen)
        placed.update(self._node_names(chosen))
        if not placed:
            del self.growths[gang.key]

    def _domain_of(self, gang: Gang) -> BoolArray:
        """The nodes an admitted gang may grow onto: its domain, or every node."""
        key = gang.record.topology_key
        everywhere = np.ones(self.table.size, dtype=np.bool_)
        if key is None:
            return everywhere
        values = self.table.labels.values_of(key)
        for name in sorted(self.state.members.get(gang.key, ())):
            entry = self.state.pods[PodKey(gang.key.namespace, name)]
            slot = self.state.node_slot(entry.held_on or "")
            if slot is not None and values[slot] >= 0:
                same_domain: BoolArray = values == values[slot]
                return same_domain
        return np.zeros(self.table.size, dtype=np.bool_)
