"""One scheduling cycle: the queue walked in order over one consistent view.

1. Take the view: free capacity = allocatable - held (bound pods and reservations).
2. Follow admitted gangs (`follow`): those waiting for their victims, or to be rolled
   back, neither grow nor release this cycle.
3. Repair admitted gangs that dropped below `minCount` (their replacement pods first),
   all of the missing pods at once or none: a gang whose minCount was raised keeps
   its pods not yet released waiting until bound and placeable members reach it.
4. Walk pending gangs by priority, then age: a gang in backoff, or taken down and not
   yet gone, is held back (it takes no capacity); admit each gang that fits (its
   placements are taken out of the view at once), else try preemption, else explain
   why not (for a gang that would not fit even on the empty cluster, on that cluster:
   nothing that ends can help it, and it holds nothing). A gang that does not fit
   never blocks the ones behind it, unless it has waited past `starvation_seconds`
   (since it last started waiting): then it holds nodes (see `_hold`), and later
   gangs cannot use them.
5. Grow admitted gangs with members beyond `minCount`, as they fit.
6. Turn it all into the plan (`transitions`): ordered steps, each group's status;
   and let go the pods of Jobs whose opt-in the API server dropped (`let_go`).

The state is only read: every decision lives in the returned `CycleResult`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from muster.scheduler.config import EngineConfig
from muster.scheduler.cycle.notices import notices
from muster.scheduler.cycle.queue import Gang, gangs_of
from muster.scheduler.decisions.plan import Plan
from muster.scheduler.decisions.results import (
    NOTHING_CARRIED,
    Admission,
    Carried,
    CycleResult,
    Explanation,
    GroupKey,
    Growth,
    PodKey,
    Reason,
    Verdict,
)
from muster.scheduler.lifecycle import transitions
from muster.scheduler.lifecycle.avoidance import Avoidance
from muster.scheduler.lifecycle.follow import Following, follow
from muster.scheduler.lifecycle.let_go import let_go
from muster.scheduler.lifecycle.transitions import TAKEN_DOWN, Planner, released_members
from muster.scheduler.placement.explain import (
    PREEMPTION_WOULD_NOT_HELP,
    shortages,
    shortfalls,
    too_large,
    unschedulable_message,
    waiting_message,
)
from muster.scheduler.placement.fit import (
    Counts,
    Matrix,
    NodeOrder,
    Shape,
    place_greedily,
    scarce_columns,
)
from muster.scheduler.placement.interplay import HOSTNAME, GangInterplay, Member
from muster.scheduler.placement.interpod_view import InterPodView
from muster.scheduler.placement.preemption import PreemptionSearch
from muster.scheduler.placement.topology import GangPlacement, fit_anywhere, fit_in_domain
from muster.scheduler.rules.pod_terms import NO_RULES, InterPodRules, Labels
from muster.scheduler.rules.volumes import VolumeRule
from muster.scheduler.state.intake import GroupRecord, PlacementRules
from muster.scheduler.state.placed import PlacedPods
from muster.scheduler.state.predicates import with_port_conflicts, with_refusals
from muster.scheduler.state.state import ClusterState, PodEntry

BoolArray = npt.NDArray[np.bool_]
ShapeKey = tuple[
    tuple[tuple[int, int], ...],
    PlacementRules,
    tuple[tuple[str, int], ...],
    InterPodRules,
    Labels,
    VolumeRule | None,
]


def schedule(
    state: ClusterState, *, now: float, config: EngineConfig, carried: Carried = NOTHING_CARRIED
) -> CycleResult:
    """Decide one cycle: admissions, growths of admitted gangs, verdicts for the rest,
    and the plan that carries them out; `carried`: what the cycle before handed on
    (its `CycleResult.carried`)."""
    return _Cycle(state, now, config, carried).run()


class _Cycle:
    def __init__(
        self, state: ClusterState, now: float, config: EngineConfig, carried: Carried
    ) -> None:
        self.state = state
        self.now = now
        self.config = config
        self.carried = carried
        self.quiet = carried.still_quiet(state.changed)
        self.table = state.node_table()
        nodes = self.table.size
        self.free: Matrix = state.allocatable[:nodes] - state.held[:nodes]
        self.largest = state.allocatable[:nodes].max(axis=0, initial=0)
        self.order = NodeOrder(self.table.name_rank, scarce_columns(state.resource_names))
        self.held_for_older = np.zeros(self.table.size, dtype=np.bool_)
        self.ports_placed: dict[tuple[str, int], set[int]] = {}
        self.preemption = PreemptionSearch(state, self.table)
        self.view = InterPodView(
            state.placed,
            size=self.table.size,
            node_slot=state.node_slot,
            namespace_labels=state.namespace_labels,
        )
        self.avoidance = Avoidance(state, self.table, max_rollbacks=config.max_rollbacks)
        self.admissions: list[Admission] = []
        self.growths: dict[GroupKey, dict[str, str]] = {}
        self.verdicts: dict[GroupKey, Verdict] = {}
        self.held_back: set[GroupKey] = set()
        self.short: set[GroupKey] = set()  # admitted, minCount raised beyond what fits
        self._allocatable_digest: str | None = None

    def run(self) -> CycleResult:
        gangs = gangs_of(self.state, self.now)
        groups = self.state.groups
        followed = {
            key: follow(self.state, groups[key], now=self.now, config=self.config)
            for key in sorted(groups.keys() - self.quiet)
            if groups[key].gang and groups[key].admitted
        }
        busy = {key for key, got in followed.items() if got.rollback or got.awaiting}
        admitted = [
            gang for gang in gangs if gang.record.admitted and gang.pending and gang.key not in busy
        ]
        for gang in admitted:
            if gang.missing:
                self._grow(gang, limit=gang.missing)
        self.short |= {
            key for key in followed if key not in busy and self._short_with_nothing_to_place(key)
        }
        pending = [gang for gang in gangs if not gang.record.admitted]
        for position, gang in enumerate(pending, start=1):
            self._decide_safely(gang, position)
        for gang in admitted:
            if gang.key not in self.short:
                self._grow(gang, limit=len(gang.pending))
        for key in self.short:
            group = self.state.groups[key]
            followed[key] = follow(
                self.state, group, now=self.now, config=self.config, release_held=True
            )
        plan = self._plan(followed)
        told, standing, due = notices(
            self.state, now=self.now, config=self.config, told=self.carried.told
        )
        wake_at = min((m for m in (plan.wake_at, due) if m is not None), default=None)
        return CycleResult(
            admissions=tuple(self.admissions),
            growths=tuple(
                Growth(key, placements) for key, placements in sorted(self.growths.items())
            ),
            verdicts=self.verdicts,
            plan=replace(plan, wake_at=wake_at, notices=told),
            carried=Carried({key: self.state.changed[key] for key in sorted(self.quiet)}, standing),
        )

    def _plan(self, followed: dict[GroupKey, Following]) -> Plan:
        planner = Planner(self.state, now=self.now, config=self.config)
        for admission in self.admissions:
            planner.admit(admission)
        for key, following in followed.items():
            if key not in planner.statuses:
                planner.follow(self.state.groups[key], following, self.growths.get(key, {}))
        for key, verdict in sorted(self.verdicts.items()):
            if key in planner.statuses:
                continue
            group = self.state.groups[key]
            if key in self.held_back and released_members(self.state, key):
                planner.take_down(group)
                continue
            kept = key in self.held_back or (
                group.reason in TAKEN_DOWN and verdict.reason is Reason.WAITING_FOR_PODS
            )
            planner.verdict(group, verdict, kept=kept)
        for key in sorted(self.state.groups.keys() - self.quiet):
            planner.refresh(key)
        idle = planner.idle()
        self.quiet |= {key for key in idle if key in followed and followed[key].settled}
        self.quiet |= {key for key in idle if not self.state.groups[key].gang}
        plan = planner.plan()
        return replace(plan, steps=(*plan.steps, *let_go(self.state)))

    # ---- shapes and placements ---------------------------------------------------

    def _shapes(
        self, pods: Sequence[PodEntry], group: GroupRecord, *, alone: bool = False
    ) -> tuple[list[Shape], GangInterplay | None]:
        """The pods grouped by shape, largest first, and the inter-pod rules between them
        (None when no rule ties the placement of one pod to another's). `alone`: as if
        no other pod were placed (their host ports and inter-pod rules left out)."""
        view = self._empty_view() if alone else self.view
        ruled = view.anyone_repels or any(entry.record.inter_pod for entry in pods)
        by_shape: dict[ShapeKey, list[str]] = {}
        members: dict[ShapeKey, Member] = {}
        for entry in pods:
            record = entry.record
            key = self._shape_key(entry, ruled=ruled)
            by_shape.setdefault(key, []).append(record.key.name)
            members.setdefault(key, Member(record.key.namespace, record.labels, key[3], key[1]))
        shaped = []
        for key, names in by_shape.items():
            demand, rules, ports, volumes = key[0], key[1], key[2], key[5]
            rules_filter = self.table.static_filter(rules)
            if ports and not alone:
                rules_filter = with_port_conflicts(rules_filter, self._ports_taken(ports))
            if volumes is not None:
                rules_filter = with_refusals(rules_filter, *volumes.refused(self.table.labels))
            rules_filter = self.avoidance.narrowed(rules_filter, group)
            shape = Shape(
                self.state.demand_vector(demand),
                rules_filter,
                tuple(sorted(names)),
                one_per_node=bool(ports) or _one_per_node(members[key], view),
            )
            shaped.append((shape, members[key]))
        shaped.sort(key=lambda pair: (-pair[0].size_key(self.largest), pair[0].pods))
        shapes = [shape for shape, _ in shaped]
        if not ruled:
            return shapes, None
        interplay = GangInterplay([member for _, member in shaped], view=view, table=self.table)
        shapes = [
            replace(shape, inter_pod_filter=interplay.start_filter(index))
            for index, shape in enumerate(shapes)
        ]
        return shapes, interplay if interplay.dynamic else None

    def _shape_key(self, entry: PodEntry, *, ruled: bool) -> ShapeKey:
        """What makes two pods of a gang the same shape (labels only under inter-pod
        rules, where they matter)."""
        record = entry.record
        assert record.rules is not None, "pending pods carry placement rules"
        inter_pod = record.inter_pod if ruled else NO_RULES
        labels = tuple(sorted(record.labels.items())) if ruled else ()
        volumes = (
            self.state.volumes.rule_for(record.key.namespace, record.claims)
            if record.claims
            else None
        )
        return (entry.demand, record.rules, record.host_ports, inter_pod, labels, volumes)

    def _empty_view(self) -> InterPodView:
        """The inter-pod view of a cluster where no pod is placed."""
        return InterPodView(
            PlacedPods(),
            size=self.table.size,
            node_slot=self.state.node_slot,
            namespace_labels=self.state.namespace_labels,
        )

    def _ports_taken(self, ports: tuple[tuple[str, int], ...]) -> BoolArray:
        """Nodes where a pod (held, or placed earlier this cycle) has one of these ports."""
        taken = np.zeros(self.table.size, dtype=np.bool_)
        for port in ports:
            for node in self.state.host_ports.get(port, {}):
                slot = self.state.node_slot(node)
                if slot is not None:
                    taken[slot] = True
            taken[sorted(self.ports_placed.get(port, ()))] = True
        return taken

    def _demands(self, gang: Gang) -> dict[str, tuple[tuple[int, int], ...]]:
        return {entry.record.key.name: entry.demand for entry in gang.pending}

    def _take(self, free: Matrix, gang: Gang, placements: dict[str, int]) -> None:
        pending = {entry.record.key.name: entry for entry in gang.pending}
        for pod, slot in placements.items():
            row = free[slot]
            entry = pending[pod]
            for column, amount in entry.demand:
                row[column] -= amount
        self._note_placed(gang, placements)

    def _note_placed(self, gang: Gang, placements: dict[str, int]) -> None:
        """Host ports and pods of this cycle's placements, for the gangs decided after."""
        pending = {entry.record.key.name: entry for entry in gang.pending}
        for pod, slot in placements.items():
            record = pending[pod].record
            for port in record.host_ports:
                self.ports_placed.setdefault(port, set()).add(slot)
            self.view.add(record, slot)

    def _node_names(self, placements: dict[str, int]) -> dict[str, str]:
        return {pod: self.table.name(slot) for pod, slot in sorted(placements.items())}

    def _fit(
        self,
        free: Matrix,
        gang: Gang,
        shapes: Sequence[Shape],
        needed: int,
        *,
        order: NodeOrder | None = None,
        head_start: Matrix | None = None,
        within: BoolArray | None = None,
        interplay: GangInterplay | None = None,
    ) -> GangPlacement:
        within = ~self.held_for_older if within is None else within
        order = order or self.order
        key = gang.record.topology_key
        if key is None:
            return fit_anywhere(
                free,
                shapes,
                within=within,
                order=order,
                largest=self.largest,
                needed=needed,
                interplay=interplay,
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
            head_start=head_start,
            interplay=interplay,
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
        held = transitions.held_back(self.state, record, self.now)
        if held is not None:
            self.held_back.add(gang.key)
            self.verdicts[gang.key] = held
            return
        if gang.existing < record.min_count:
            self.verdicts[gang.key] = Verdict(
                Reason.WAITING_FOR_PODS, waiting_message(gang.existing, record.min_count)
            )
            return
        held_back = self.avoidance.held_back(record)
        if held_back is not None:
            self.verdicts[gang.key] = held_back
            return
        shapes, interplay = self._shapes(gang.pending, record)
        if not shapes:
            self.admissions.append(Admission(gang.key, {}))
            return
        placement = self._fit(self.free, gang, shapes, gang.missing, interplay=interplay)
        if placement.placements or gang.missing == 0:
            self._admit(gang, placement)
            return
        never = self._never(gang)  # then no victim would make room either
        if never is None and record.preempt and self._preempt(gang, shapes, interplay):
            return
        tried = never is None and record.preempt and self.preemption.has_candidates(gang.priority)
        self._refuse(
            gang, shapes, interplay, placement, position, never=never, preemption_tried=tried
        )

    def _admit(self, gang: Gang, placement: GangPlacement) -> None:
        self._take(self.free, gang, placement.placements)
        domain = None
        if placement.domain is not None and gang.record.topology_key is not None:
            domain = (gang.record.topology_key, placement.domain)
        self.admissions.append(Admission(gang.key, self._node_names(placement.placements), domain))

    def _preempt(
        self, gang: Gang, shapes: Sequence[Shape], interplay: GangInterplay | None
    ) -> bool:
        """Inter-pod rules are judged with the victims still in place: a victim that
        repels the gang keeps it out (safe), one it needs is counted as staying."""

        def fits(free: Matrix, cost: Counts) -> GangPlacement:
            order = self.order.with_cost(cost)
            return self._fit(
                free,
                gang,
                shapes,
                gang.missing,
                order=order,
                head_start=self.free,
                interplay=interplay,
            )

        plan = self.preemption.search(self.free, gang.priority, fits, self._demands(gang))
        if plan is None:
            return False
        self.free = plan.remaining_free
        placement = plan.placement
        self._note_placed(gang, placement.placements)
        domain = None
        if placement.domain is not None and gang.record.topology_key is not None:
            domain = (gang.record.topology_key, placement.domain)
        self.admissions.append(
            Admission(
                gang.key,
                self._node_names(placement.placements),
                domain,
                plan.victims,
                plan.violations,
            )
        )
        return True

    def _refuse(
        self,
        gang: Gang,
        shapes: Sequence[Shape],
        interplay: GangInterplay | None,
        placement: GangPlacement,
        position: int,
        *,
        never: _Attempt | None,
        preemption_tried: bool,
    ) -> None:
        """Why the gang waits, as of the cluster now; or, when it would not fit even on
        the empty cluster (`never`: how it fared there), as of that cluster, since
        nothing that ends can help it."""
        key = gang.record.topology_key
        if never is not None:
            capacity = self.state.allocatable[: self.table.size]
            none_held = np.zeros(self.table.size, dtype=np.bool_)
            explanation = self._explanation(gang, never, capacity, none_held, position, never=True)
            spread_limited = never.interplay is not None
        else:
            now = _Attempt(list(shapes), interplay, placement)
            explanation = self._explanation(gang, now, self.free, self.held_for_older, position)
            spread_limited = interplay is not None
        spread_limited = spread_limited or any(shape.one_per_node for shape in shapes)
        message = unschedulable_message(explanation, key, spread_limited=spread_limited)
        if preemption_tried:
            message = f"{message}; {PREEMPTION_WOULD_NOT_HELP}"
        waited = self.now - gang.waiting_since
        if waited > self.config.starvation_seconds and never is None:  # never: it holds nothing
            held = self._hold(gang, shapes, interplay, placement)
            after = f"holding capacity for it after {waited:.0f}s in the queue"
            if held:
                message = f"{message}; {after} ({held} node(s) closed to the gangs behind it)"
            elif self.held_for_older.any():
                message = f"{message}; not {after}: the nodes it needs are held for gangs ahead"
            else:  # other pods' inter-pod rules keep it off what it would need
                message = f"{message}; not {after}"
        self.verdicts[gang.key] = Verdict(Reason.UNSCHEDULABLE, message, explanation)

    def _explanation(
        self,
        gang: Gang,
        attempt: _Attempt,
        free: Matrix,
        held: BoolArray,
        position: int,
        *,
        never: bool = False,
    ) -> Explanation:
        """The counts behind a refusal, on `free` with `held` nodes closed to the gang.

        When inter-pod rules leave pods out, the node counts are those kube-scheduler
        would give the first pod left out once the others are placed: in the domain
        where most of the gang fits, with a topology key, so that the rule that stops
        it inside a domain is named.
        """
        key = gang.record.topology_key
        unlabelled = np.zeros(self.table.size, dtype=np.bool_)
        if key is not None:
            unlabelled = self.table.labels.values_of(key) < 0
        usable = ~held & ~unlabelled
        seen_free, seen_shapes = free, attempt.shapes
        scope, counted_in, placed_first = None, None, 0
        if attempt.interplay is not None:
            domain = self._best_domain(key, attempt.placement)
            within = usable if domain is None else usable & domain[1]
            refusal = attempt.interplay.refusal_filter(
                free, attempt.shapes, within=within, order=self.order
            )
            if refusal is not None:  # as kube-scheduler sees the first pod left out
                rules_filter, shape, seen_free, placed_first = refusal
                seen_shapes = [replace(shape, inter_pod_filter=rules_filter)]
                if domain is not None:
                    counted_in, scope = domain
        feasible, reasons = shortages(
            seen_free,
            shapes=seen_shapes,
            table=self.table,
            held_elsewhere=held,
            unlabelled=unlabelled,
            topology_key=key,
            resource_names=self.state.resource_names,
            scope=scope,
        )
        return Explanation(
            nodes_total=int(
                (self.table.alive if scope is None else self.table.alive & scope).sum()
            ),
            nodes_feasible=feasible,
            shortages=reasons,
            needed=gang.record.min_count,
            existing=gang.existing,
            best_fit=attempt.placement.best_fit + gang.held,
            domains=attempt.placement.fits,
            queue_position=position,
            shortfalls=shortfalls(
                free,
                shapes=attempt.shapes,
                usable=usable,
                missing=gang.missing,
                domain_of=None if key is None else self.table.labels.values_of(key),
                resource_names=self.state.resource_names,
            ),
            never=never,
            placed_first=placed_first,
            counted_in=counted_in,
            too_large=too_large(
                self.state.allocatable[: self.table.size],
                shapes=attempt.shapes,
                alive=self.table.alive,
                resource_names=self.state.resource_names,
            )
            if never
            else (),
        )

    def _best_domain(
        self, key: str | None, placement: GangPlacement
    ) -> tuple[str, BoolArray] | None:
        """The domain where most of the gang fits (`zone=a`, its nodes), with a key."""
        if key is None or not placement.fits:
            return None
        best = min(placement.fits, key=lambda fit: (-fit.fits, fit.domain))
        value = best.domain.split("=", 1)[1]
        values = self.table.labels.values_of(key)
        nodes: BoolArray = values == self.table.labels.id_of(key, value)
        return best.domain, nodes

    def _never(self, gang: Gang) -> _Attempt | None:
        """How the gang fares on the empty cluster (every node's allocatable, no other
        pod placed, no node held for others), if it does not fit even there; None if
        it does. A fit is remembered: the question is asked of every waiting gang, every
        cycle, and the answer holds until the nodes or the gang change."""
        key = self._alone_key(gang)
        if self.table.fits_alone(key):
            return None
        shapes, interplay = self._shapes(gang.pending, gang.record, alone=True)
        capacity = self.state.allocatable[: self.table.size]
        everywhere = np.ones(self.table.size, dtype=np.bool_)
        placement = self._fit(
            capacity, gang, shapes, gang.missing, within=everywhere, interplay=interplay
        )
        if placement.placements:
            self.table.remember_fits_alone(key)
            return None
        return _Attempt(shapes, interplay, placement)

    def _alone_key(self, gang: Gang) -> Hashable:
        """All that decides whether a gang fits on the empty cluster, besides the node
        table: its pending pods (whose placement rules do not change while they wait),
        what it still misses, its domain key, the nodes it avoids, and every node's
        allocatable."""
        if self._allocatable_digest is None:
            capacity = self.state.allocatable[: self.table.size]
            self._allocatable_digest = hashlib.sha256(capacity.tobytes()).hexdigest()
        memory = self.avoidance.memory(gang.record)
        return (
            self._allocatable_digest,
            gang.key,
            frozenset(entry.record.key.name for entry in gang.pending),
            gang.missing,
            gang.record.topology_key,
            None if memory is None else memory.node_names,
            tuple(sorted(self.state.namespace_labels.get(gang.key.namespace, {}).items())),
        )

    def _hold(
        self,
        gang: Gang,
        shapes: Sequence[Shape],
        interplay: GangInterplay | None,
        placement: GangPlacement,
    ) -> int:
        """Close nodes to the gangs behind a starving gang, so they fill up for it.

        The nodes held are those the gang would use if they were empty, chosen among
        the nodes closest to hosting it now (most of its pods fit there already); with
        a topology key, the whole domain where most of its pods fit now (and where it
        would fit, empty). As pods on those nodes finish, nothing else takes their
        place. A gang that would not fit even on empty nodes holds nothing: it could
        never use them. Returns the number of nodes held.
        """
        capacity = self.state.allocatable[: self.table.size]
        within = ~self.held_for_older
        key = gang.record.topology_key
        if key is None:
            primary = shapes[0]
            room_now = primary.copies(self.free, within)
            target = fit_anywhere(
                capacity,
                shapes,
                within=within,
                order=self.order.with_cost(-room_now),
                largest=self.largest,
                needed=gang.missing,
                interplay=interplay,
            )
            nodes = sorted(set(target.placements.values()))
            self.held_for_older[nodes] = True
            return len(nodes)
        values = self.table.labels.values_of(key)
        for domain_fit in sorted(placement.fits, key=lambda fit: (-fit.fits, fit.domain)):
            value = domain_fit.domain.split("=", 1)[1]
            domain = within & (values == self.table.labels.id_of(key, value))
            empty = fit_anywhere(
                capacity,
                shapes,
                within=domain,
                order=self.order,
                largest=self.largest,
                needed=gang.missing,
                interplay=interplay,
            )
            if empty.placements:
                self.held_for_older |= domain
                return int(domain.sum())
        return 0

    # ---- admitted gangs ------------------------------------------------------------

    def _grow(self, gang: Gang, limit: int) -> None:
        """Place up to `limit` more members; below minCount (`limit` is what is
        missing) all of them or none, since a gang runs whole or not at all."""
        below_quorum = limit == gang.missing and limit > 0
        placed = self.growths.setdefault(gang.key, {})
        pending = [entry for entry in gang.pending if entry.record.key.name not in placed]
        if not pending or limit <= 0:
            if not placed:
                del self.growths[gang.key]
            return
        shapes, interplay = self._shapes(pending, gang.record)
        within = ~self.held_for_older & self._domain_of(gang)
        if interplay is None:
            chosen = place_greedily(self.free, shapes, within, self.order, limit)
        else:
            chosen = interplay.place(
                self.free, shapes, within=within, order=self.order, needed=0, limit=limit
            )
        if below_quorum and len(chosen) < limit:
            self.short.add(gang.key)
            chosen = {}
        self._take(self.free, gang, chosen)
        placed.update(self._node_names(chosen))
        if not placed:
            del self.growths[gang.key]

    def _short_with_nothing_to_place(self, key: GroupKey) -> bool:
        """An admitted gang whose minCount was raised beyond the members holding
        capacity (bound or reserved), with no other member to place: its reserved
        members not released yet wait, as `_grow` makes them wait when the members it
        could place fall short."""
        group = self.state.groups[key]
        return (
            key not in self.state.pending_members
            and self.state.held_members.get(key, 0) < group.min_count
        )

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


@dataclass(frozen=True, slots=True)
class _Attempt:
    """A gang's shapes and rules, and how close they came to a placement."""

    shapes: list[Shape]
    interplay: GangInterplay | None
    placement: GangPlacement


def _one_per_node(member: Member, view: InterPodView) -> bool:
    """Whether the pods repel each other per node (hostname anti-affinity on themselves)."""
    labels = view.namespace_labels(member.namespace)
    return any(
        term.topology_key == HOSTNAME and term.matches(member.namespace, member.labels, labels)
        for term in member.rules.anti_affinity
    )
