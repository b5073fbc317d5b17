"""One cycle's working view of the cluster, and how a gang's pods are fitted onto it."""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from muster.api.keys import GroupKey, PodKey
from muster.api.preferences import declared_levels
from muster.scheduler.config import EngineConfig
from muster.scheduler.cycle.queue import Gang
from muster.scheduler.devices.gang import (
    GangDevices,
    cycle_ledger,
    empty_ledger,
    needs_of,
    shape_part,
)
from muster.scheduler.lifecycle.avoidance import Avoidance
from muster.scheduler.placement.fit import Matrix, NodeOrder, Shape, scarce_columns
from muster.scheduler.placement.interplay import HOSTNAME, GangInterplay
from muster.scheduler.placement.interpod_view import InterPodView, Member
from muster.scheduler.placement.levels import fit_preferring, ladder, level_domains
from muster.scheduler.placement.request import FitRequest
from muster.scheduler.placement.slicing import SliceMember, Slicing, slicing_of
from muster.scheduler.placement.topology import (
    Domains,
    GangPlacement,
    fit_anywhere,
    fit_in_one,
)
from muster.scheduler.rules.filters import (
    NODE_PORTS,
    REFUSED_BEFORE,
    UNKNOWN_CLAIMS,
    VOLUME_BINDING,
    Stage,
    of_stage,
)
from muster.scheduler.rules.pod_terms import NO_RULES, InterPodRules, Labels
from muster.scheduler.rules.volumes import VolumeRule
from muster.scheduler.state.intake import GroupRecord, PlacementRules
from muster.scheduler.state.placed import PlacedPods
from muster.scheduler.state.predicates import StaticFilter, with_port_conflicts, with_refusals
from muster.scheduler.state.state import ClusterState
from muster.scheduler.state.store import PodEntry

BoolArray = npt.NDArray[np.bool_]
ShapeKey = tuple[
    tuple[tuple[int, int], ...],
    PlacementRules,
    tuple[tuple[str, int], ...],
    InterPodRules,
    Labels,
    VolumeRule | None,
    Hashable,  # the pod's device claims, as far as they tell shapes apart (`devices.shape_part`)
]


class Board:
    """The one view a cycle decides gang after gang on, taken at its start: free
    capacity per node (allocatable less what bound pods and reservations hold), from
    which each placement is taken at once, so the gangs decided after it never
    double-book; the nodes closed to later gangs (`refusal.close_nodes`); the host
    ports and pods placed this cycle, for the port and inter-pod rules of the gangs
    after. It only ever shrinks during a cycle."""

    def __init__(self, state: ClusterState, config: EngineConfig) -> None:
        self.state = state
        self.table = state.node_table()
        nodes = self.table.size
        self.capacity: Matrix = state.allocatable[:nodes]  # every node's allocatable
        self.free: Matrix = self.capacity - state.taken[:nodes]
        self.largest = self.capacity.max(axis=0, initial=0)
        self.order = NodeOrder(self.table.name_rank, scarce_columns(state.resource_names))
        self.closed_for_older = np.zeros(nodes, dtype=np.bool_)
        self.ports_placed: dict[tuple[str, int], set[int]] = {}
        self.view = InterPodView(
            state.placed,
            size=nodes,
            node_slot=state.node_slot,
            namespace_labels=state.namespace_labels,
        )
        self.avoidance = Avoidance(state, self.table, max_rollbacks=config.max_rollbacks)
        self.levels = declared_levels(state.topologies, config.topology_levels)
        self._slicings: dict[GroupKey, Slicing | None] = {}
        self.devices = cycle_ledger(state, nodes)  # None: no device is claimed or published
        self._capacity_digest: str | None = None
        # The nodes taken from or closed so far this cycle, and how many times: a kept
        # verdict was decided on the view as a cycle starts, and holds only where the
        # view is still so (`memo`).
        self.touched = np.zeros(nodes, dtype=np.bool_)
        self.touches = 0

    def capacity_digest(self) -> str:
        """Every node's allocatable, hashed once per cycle (a cache key)."""
        if self._capacity_digest is None:
            devices = str(self.state.devices.version).encode()
            self._capacity_digest = hashlib.sha256(self.capacity.tobytes() + devices).hexdigest()
        return self._capacity_digest

    # ---- shapes --------------------------------------------------------------------

    def shapes(
        self, pods: Sequence[PodEntry], group: GroupRecord, *, alone: bool = False
    ) -> tuple[list[Shape], GangInterplay | None]:
        """The pods grouped by shape, largest first, and the inter-pod rules between them
        (None when no rule ties the placement of one pod to another's). `alone`: as if
        no other pod were placed (their host ports and inter-pod rules left out)."""
        view = self._empty_view() if alone else self.view
        ruled = view.anyone_repels or any(entry.record.inter_pod for entry in pods)
        devices = self._gang_devices(pods, alone=alone)
        by_shape: dict[ShapeKey, list[str]] = {}
        members: dict[ShapeKey, Member] = {}
        for entry in pods:
            record = entry.record
            key = self._shape_key(entry, ruled=ruled)
            by_shape.setdefault(key, []).append(record.key.name)
            members.setdefault(key, Member(record.key.namespace, record.labels, key[3], key[1]))
        shaped = [
            (self._shape(key, names, members[key], group, view, alone=alone), members[key])
            for key, names in by_shape.items()
        ]
        shaped.sort(key=lambda pair: (-pair[0].size_key(self.largest), pair[0].pods))
        shapes = [shape for shape, _ in shaped]
        if not ruled and devices is None:
            return shapes, None
        interplay = GangInterplay(
            [member for _, member in shaped], view=view, table=self.table, devices=devices
        )
        shapes = [
            replace(shape, inter_pod_filter=interplay.start_filter(index))
            for index, shape in enumerate(shapes)
        ]
        return shapes, interplay if interplay.dynamic else None

    def _shape(
        self,
        key: ShapeKey,
        names: list[str],
        member: Member,
        group: GroupRecord,
        view: InterPodView,
        *,
        alone: bool,
    ) -> Shape:
        """The pods of one shape, with the nodes their rules leave them."""
        demand, rules, ports = key[0], key[1], key[2]
        rules_filter = self.table.static_filter(rules)
        narrowed_by = {
            UNKNOWN_CLAIMS: self._unknown_claims,
            NODE_PORTS: self._port_conflicts,
            VOLUME_BINDING: self._volume_conflicts,
            REFUSED_BEFORE: self._refused_before,
        }
        for cycle_filter in of_stage(Stage.CYCLE):
            rules_filter = narrowed_by[cycle_filter.name](rules_filter, key, group, alone)
        return Shape(
            self.state.demand_vector(demand),
            rules_filter,
            tuple(sorted(names)),
            one_per_node=bool(ports) or _one_per_node(member, view),
        )

    # ---- the cycle's filters (`rules.filters`, stage CYCLE), in their order --------

    def _unknown_claims(
        self, rules_filter: StaticFilter, key: ShapeKey, group: GroupRecord, alone: bool
    ) -> StaticFilter:
        """A pod whose claims cannot be known yet fits nowhere (`key[6]` says why)."""
        if not isinstance(key[6], str):
            return rules_filter
        return with_refusals(rules_filter, self.table.alive, key[6])

    def _port_conflicts(
        self, rules_filter: StaticFilter, key: ShapeKey, group: GroupRecord, alone: bool
    ) -> StaticFilter:
        ports = key[2]
        if not ports or alone:
            return rules_filter
        return with_port_conflicts(rules_filter, self._ports_taken(ports))

    def _volume_conflicts(
        self, rules_filter: StaticFilter, key: ShapeKey, group: GroupRecord, alone: bool
    ) -> StaticFilter:
        volumes = key[5]
        if volumes is None:
            return rules_filter
        return with_refusals(rules_filter, *volumes.refused(self.table.labels))

    def _refused_before(
        self, rules_filter: StaticFilter, key: ShapeKey, group: GroupRecord, alone: bool
    ) -> StaticFilter:
        return self.avoidance.narrowed(rules_filter, group)

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
        devices = None
        if record.device_claims:
            devices = shape_part(needs_of(self.state, record))
        return (entry.demand, record.rules, record.host_ports, inter_pod, labels, volumes, devices)

    def _gang_devices(self, pods: Sequence[PodEntry], *, alone: bool) -> GangDevices | None:
        """The pods' claims, on the cycle's devices (on free devices alone: `alone`)."""
        if self.devices is None:
            return None
        needs = {}
        for entry in pods:
            found = needs_of(self.state, entry.record) if entry.record.device_claims else ()
            if found and not isinstance(found, str):
                needs[entry.record.key.name] = found
        if not needs:
            return None
        ledger = self.devices
        if alone:
            ledger = empty_ledger(self.state, self.table.size)
        return GangDevices(ledger, needs)

    def _empty_view(self) -> InterPodView:
        """The inter-pod view of a cluster where no pod is placed."""
        return InterPodView(
            PlacedPods(),
            size=self.table.size,
            node_slot=self.state.node_slot,
            namespace_labels=self.state.namespace_labels,
        )

    def _ports_taken(self, ports: tuple[tuple[str, int], ...]) -> BoolArray:
        """Nodes where a pod (placed before the cycle, or earlier in it) has one of these ports."""
        taken = np.zeros(self.table.size, dtype=np.bool_)
        for port in ports:
            for node in self.state.host_ports.get(port, {}):
                slot = self.state.node_slot(node)
                if slot is not None:
                    taken[slot] = True
            taken[sorted(self.ports_placed.get(port, ()))] = True
        return taken

    # ---- fits and placements -------------------------------------------------------

    def request(
        self,
        gang: Gang,
        shapes: Sequence[Shape],
        interplay: GangInterplay | None,
        *,
        needed: int,
        limit: int | None = None,
        within: BoolArray | None = None,
    ) -> FitRequest:
        """A fit of the gang's `shapes` on the cycle's free capacity, in its best-fit
        order, on the nodes of `within` (default: those not closed to it), with its
        slices."""
        return FitRequest(
            self.free,
            shapes,
            ~self.closed_for_older if within is None else within,
            self.order,
            self.largest,
            needed=needed,
            limit=limit,
            interplay=interplay,
            slicing=self.slicing(gang),
        )

    def fit(self, gang: Gang, request: FitRequest) -> GangPlacement:
        """The gang's best placement for `request`: in one domain of its preferred level
        or the next wider ones where one takes it, else anywhere or in one domain of its
        key."""
        key = gang.record.topology_key
        labels = self.table.labels
        required = None if key is None else Domains.of(labels, key)

        def fit_required(inner: Domains | None = None) -> GangPlacement:
            if required is None:
                return fit_anywhere(request, inner=inner)
            return fit_in_one(request, required, inner=inner)

        preferred = gang.record.preferred_key
        steps = () if preferred is None else ladder(preferred, key, self.levels)
        if not steps:
            return fit_required()
        return fit_preferring(
            steps,
            required=key,
            labels=labels,
            needed=request.needed,
            fit_in=lambda domains, inner: fit_in_one(request, domains, inner=inner),
            fallback=fit_required,
            sliced=gang.record.slicing,
        )

    def slicing(self, gang: Gang) -> Slicing | None:
        """The gang's slices, if it has them: its live members cut into slices over the
        domains of its slice level (cut by its required key's); once per cycle, as the
        members a cycle sees do not change during it."""
        if gang.record.slicing is None:
            return None
        if gang.key not in self._slicings:
            key, size = gang.record.slicing
            domains = level_domains(self.table.labels, key, gang.record.topology_key)
            pending = {entry.record.key.name for entry in gang.pending}
            members = []
            for name in sorted(self.state.members.get(gang.key, ())):
                entry = self.state.pods[PodKey(gang.key.namespace, name)]
                slot = None if name in pending else self.state.node_slot(entry.taken_on or "")
                if name in pending or slot is not None:
                    members.append(SliceMember(name, entry.record.index, slot))
            self._slicings[gang.key] = slicing_of(key, size, domains.values, domains.names, members)
        return self._slicings[gang.key]

    def take(self, gang: Gang, placements: dict[str, int]) -> None:
        """Take the placements out of the free capacity, for the gangs decided after."""
        pending = {entry.record.key.name: entry for entry in gang.pending}
        for pod, slot in placements.items():
            row = self.free[slot]
            for column, amount in pending[pod].demand:
                row[column] -= amount
        self.note_placed(gang, placements)

    def note_placed(self, gang: Gang, placements: dict[str, int]) -> None:
        """Host ports and pods of this cycle's placements, for the gangs decided after."""
        pending = {entry.record.key.name: entry for entry in gang.pending}
        if placements:
            self.touch(sorted(set(placements.values())))
        for pod, slot in placements.items():
            record = pending[pod].record
            for port in record.host_ports:
                self.ports_placed.setdefault(port, set()).add(slot)
            self.view.add(record, slot)
            if self.devices is not None and record.device_claims:
                needs = needs_of(self.state, record)
                if not isinstance(needs, str):
                    self.devices.take(needs, slot)

    def touch(self, nodes: BoolArray | list[int]) -> None:
        """Note nodes whose free capacity, ports, pods or closure changed this cycle."""
        self.touched[nodes] = True
        self.touches += 1

    def node_names(self, placements: dict[str, int]) -> dict[str, str]:
        return {pod: self.table.name(slot) for pod, slot in sorted(placements.items())}

    def domain_of(self, gang: Gang) -> BoolArray:
        """The nodes an admitted gang may grow onto: its domain, or every node.

        Its domain is where its members hold nodes; where none does any more (those
        left finished, their replacements not placed yet), where they ran, as its plan
        has it: a Job's last pods go where the gang was admitted."""
        key = gang.record.topology_key
        everywhere = np.ones(self.table.size, dtype=np.bool_)
        if key is None:
            return everywhere
        values = self.table.labels.values_of(key)
        members = sorted(self.state.members.get(gang.key, ()))
        entries = [self.state.pods[PodKey(gang.key.namespace, name)] for name in members]
        holding = [entry.taken_on for entry in entries if entry.taken_on is not None]
        for node in (*holding, *sorted(gang.record.plan.values())):
            slot = self.state.node_slot(node)
            if slot is not None and values[slot] >= 0:
                same_domain: BoolArray = values == values[slot]
                return same_domain
        return np.zeros(self.table.size, dtype=np.bool_)


def _one_per_node(member: Member, view: InterPodView) -> bool:
    """Whether the pods repel each other per node (hostname anti-affinity on themselves)."""
    labels = view.namespace_labels(member.namespace)
    return any(
        term.topology_key == HOSTNAME and term.matches(member.namespace, member.labels, labels)
        for term in member.rules.anti_affinity
    )
