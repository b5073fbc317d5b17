"""What the engine keeps of the cluster, and the indexes it derives, changed one record at a time.

Capacity lives in numpy arrays (node slots x resources): what each node offers and
what is taken on it, by bound pods and by reservations (pods of an admitted gang's plan
that are not bound yet). Every event adjusts one row, so the operator never rebuilds
the state in steady operation, and a cycle starts from `allocatable - taken` without
walking the pods.

Pods also get a slot in per-pod arrays (request, node, priority, group) so preemption
can select victims with array operations.

The store is changed only through its mutators (`put_node`, `put_pod`,
`put_pod_group`, ...), which take the engine's frozen records and keep every index
consistent with them; the kinds (`kinds`, `devices.kinds`) build the records from the
API's objects, and `ClusterState` is the door that calls them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from muster.api.keys import GroupKey, PodKey
from muster.api.priority import resolved_priority
from muster.scheduler.devices.book import DeviceBook
from muster.scheduler.memory.dropped_field import DroppedField
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.objects.growable import grown
from muster.scheduler.rules.budgets import Budget
from muster.scheduler.rules.volumes import Volumes
from muster.scheduler.state.columns import Demand, ResourceColumns
from muster.scheduler.state.intake import (
    GroupRecord,
    NodeRecord,
    PodRecord,
    PriorityClassRecord,
)
from muster.scheduler.state.marks import Marks
from muster.scheduler.state.node_columns import NodeColumns
from muster.scheduler.state.placed import PlacedPods
from muster.scheduler.state.predicates import NodeTable
from muster.scheduler.state.slots import Few, Slots

Matrix = npt.NDArray[np.int64]
NO_NODE = -1
NO_GROUP = -1


@dataclass(slots=True)
class PodEntry:
    """A pod as the state tracks it: its record, where it takes capacity, its slot."""

    record: PodRecord
    slot: int
    demand: Demand  # (resource column, amount), pod count included
    priority: int
    taken_on: str | None = None

    @property
    def reserved_on(self) -> str | None:
        """The node it holds capacity on without being bound there: its admitted
        gang's plan reserves that capacity for it."""
        return None if self.record.node_name is not None else self.taken_on


class ClusterStore:
    """Nodes, pods, PodGroups, PriorityClasses and more, as the engine's records, with
    the arrays and indexes a cycle reads (see the module's docstring)."""

    def __init__(self) -> None:
        self.columns = ResourceColumns()
        self._node_slots = Slots()
        self._node_slot: dict[str, int] = {}
        self._node_columns = NodeColumns()
        self.allocatable: Matrix = np.zeros((0, 1), dtype=np.int64)
        self.taken: Matrix = np.zeros((0, 1), dtype=np.int64)
        self._table: NodeTable | None = None
        self.pods: dict[PodKey, PodEntry] = {}
        self.release_failures: dict[PodKey, ReleaseFailure] = {}  # see `release_failures`
        # The latest bind seen (its PodScheduled time): kube-scheduler's last progress,
        # which tells a released pod waiting its turn from one it will not bind.
        self.last_bind: float | None = None
        self._pods_on: dict[str, Few[PodKey]] = {}
        self.members: dict[GroupKey, Few[str]] = {}
        self.pending_members: dict[GroupKey, Few[str]] = {}  # gated and holding nothing
        self.placed_members: dict[GroupKey, int] = {}  # bound or reserved
        self.groups: dict[GroupKey, GroupRecord] = {}
        self.unadmitted_gangs: set[GroupKey] = set()
        self.host_ports: dict[tuple[str, int], dict[str, int]] = {}  # port -> node -> pods
        self.placed = PlacedPods()  # pods holding a node, for inter-pod rules
        self.namespace_labels: dict[str, Mapping[str, str]] = {}
        self.volumes: Volumes = Volumes()
        self.devices: DeviceBook = DeviceBook()  # Dynamic Resource Allocation (`devices.kinds`)
        self.priority_classes: dict[str, PriorityClassRecord] = {}
        self.budgets: dict[tuple[str, str], Budget] = {}  # (namespace, name)
        self.dropped_fields: dict[tuple[str, str], DroppedField] = {}  # by Job (ns, name)
        self.topologies: dict[str, tuple[str, ...]] = {}  # Kueue's, by name: their levels
        self._pod_slots = Slots()
        self.pod_demand: Matrix = np.zeros((0, 1), dtype=np.int64)
        self.pod_node: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.pod_priority: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.pod_group: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.pod_keys: list[PodKey | None] = []
        self.group_ids: dict[GroupKey, int] = {}
        self.group_keys: list[GroupKey] = []
        # Each PodGroup's latest change (of it, its members, their releases), counted
        # over the whole state, the most recent last: a group a cycle found quiet stays
        # so while it does not change (`muster.scheduler.decisions.results.Carried`).
        self.changes = 0
        self.changed: dict[GroupKey, int] = {}
        self.groups_removed = 0  # PodGroups taken away: their counts in `changed` go too
        self.missing_groups: set[GroupKey] = set()  # named by member pods, not there
        self.bypassing: set[PodKey] = set()  # members created bound (`PodRecord.bypassed`)
        self.marks = Marks()  # what refusals read, when it last changed (`marks`)

    # ---- resources -------------------------------------------------------------

    @property
    def resource_names(self) -> list[str]:
        """The resources by column of the capacity arrays (`ResourceColumns`)."""
        return self.columns.names

    def demand_vector(self, demand: Demand) -> npt.NDArray[np.int64]:
        """The demand as a row vector, shared by every pod of its shape."""
        return self.columns.row(demand)

    def _widen(self) -> None:
        """Give the arrays a zero column for each resource named since they were built."""
        extra = self.columns.width - self.allocatable.shape[1]
        if extra:
            padding = ((0, 0), (0, extra))
            self.allocatable = np.pad(self.allocatable, padding)
            self.taken = np.pad(self.taken, padding)
            self.pod_demand = np.pad(self.pod_demand, padding)

    # ---- nodes -----------------------------------------------------------------

    def node_table(self) -> NodeTable:
        """The predicate view of the current node set (rebuilt only after it changed)."""
        if self._table is None:
            self._table = self._node_columns.table()
        return self._table

    def node_record(self, name: str) -> NodeRecord | None:
        """The node's record, None when the store has none."""
        slot = self._node_slot.get(name)
        return None if slot is None else self._node_columns.records[slot]

    def put_node(self, record: NodeRecord) -> None:
        """Add or replace a node, keeping the capacity its pods already take on it."""
        columns = [(self.columns.column_of(res), amount) for res, amount in record.allocatable]
        self._widen()
        slot = self._node_slot.get(record.name)
        if slot is None:
            slot = self._add_node_slot(record)
        else:
            previous = self._node_columns.records[slot]
            if previous is None or previous.placement_view() != record.placement_view():
                self._table = None
            self._node_columns.put(slot, record)
        self.allocatable[slot] = 0
        for column, amount in columns:
            self.allocatable[slot, column] = amount

    def _add_node_slot(self, record: NodeRecord) -> int:
        slot = self._node_slots.take()
        self._node_slot[record.name] = slot
        self.allocatable = grown(self.allocatable, self._node_slots.size)
        self.taken = grown(self.taken, self._node_slots.size)
        self._node_columns.put(slot, record)
        self.taken[slot] = 0
        for key in self._pods_on.get(record.name, ()):
            entry = self.pods[key]
            self._add_demand(slot, entry.demand)
            self.pod_node[entry.slot] = slot
        self._table = None
        return slot

    def remove_node(self, name: str) -> None:
        """Take a node away; its pods stay, on no node, until they go too."""
        slot = self._node_slot.pop(name, None)
        if slot is None:
            return
        self._node_columns.clear(slot)
        self.allocatable[slot] = 0
        self.taken[slot] = 0
        for key in self._pods_on.get(name, ()):
            self.pod_node[self.pods[key].slot] = NO_NODE
        self._node_slots.give_back(slot)
        self._table = None

    def _add_demand(self, slot: int, demand: Demand, sign: int = 1) -> None:
        if sign > 0:
            self.taken[slot] += self.demand_vector(demand)
        else:
            self.taken[slot] -= self.demand_vector(demand)

    # ---- pods ------------------------------------------------------------------

    def pod_record(self, key: PodKey) -> PodRecord | None:
        """The pod's record, None when the store has none."""
        entry = self.pods.get(key)
        return None if entry is None else entry.record

    def put_pod(self, record: PodRecord) -> None:
        """Add or replace a pod: its slot, its demand and priority, its group, and the
        capacity it takes (bound, or reserved by its admitted gang's plan)."""
        entry = self.pods.get(record.key)
        if entry is not None and entry.record == record and entry.record.refusal == record.refusal:
            return
        self.release_failures.pop(record.key, None)  # said of the pod as it was
        if record.node_name and (entry is None or not entry.record.node_name):
            self._note_bind(record.bound)
        previous_claims = () if entry is None else entry.record.device_claims
        if entry is None:
            slot = self._pod_slots.take()
            if slot >= self.pod_node.shape[0]:
                self._grow_pod_arrays()
            entry = PodEntry(record, slot, self._demand_of(record), self._priority_of(record))
            self.pods[record.key] = entry
            self.pod_keys[slot] = record.key
        else:
            self._free_capacity(entry)
            self._leave_group(entry)
            entry.record = record
            entry.demand = self._demand_of(record)
            entry.priority = self._priority_of(record)
        self.pod_demand[entry.slot] = self.demand_vector(entry.demand)
        self.pod_priority[entry.slot] = entry.priority
        if record.device_claims or previous_claims:
            self.marks.world_changed()
        self.devices.note_pod(record.key, record.device_claims)
        if record.bypassed:
            self.bypassing.add(record.key)
        else:
            self.bypassing.discard(record.key)
        self._join_group(entry)
        self._take_capacity(entry)

    def _note_bind(self, moment: float | None) -> None:
        if moment is not None and (self.last_bind is None or moment > self.last_bind):
            self.last_bind = moment

    def remove_pod(self, key: PodKey) -> None:
        """Take a pod away, freeing what it took and its slot."""
        self.release_failures.pop(key, None)
        self.bypassing.discard(key)
        entry = self.pods.pop(key, None)
        if entry is None:
            return
        self._free_capacity(entry)
        self._leave_group(entry)
        if entry.record.device_claims:
            self.marks.world_changed()
        self.devices.note_pod(key, ())
        self.pod_keys[entry.slot] = None
        self.pod_demand[entry.slot] = 0
        self.pod_group[entry.slot] = NO_GROUP
        self._pod_slots.give_back(entry.slot)

    def _grow_pod_arrays(self) -> None:
        size = self._pod_slots.size
        self.pod_demand = grown(self.pod_demand, size)
        self.pod_node = grown(self.pod_node, size, NO_NODE)
        self.pod_priority = grown(self.pod_priority, size)
        self.pod_group = grown(self.pod_group, size, NO_GROUP)
        if len(self.pod_keys) < self.pod_node.shape[0]:
            self.pod_keys.extend([None] * (self.pod_node.shape[0] - len(self.pod_keys)))

    def _demand_of(self, record: PodRecord) -> Demand:
        demand = self.columns.demand_of(record.requests)
        self._widen()
        return demand

    def _group_id(self, key: GroupKey) -> int:
        group_id = self.group_ids.get(key)
        if group_id is None:
            group_id = len(self.group_keys)
            self.group_ids[key] = group_id
            self.group_keys.append(key)
        return group_id

    def _join_group(self, entry: PodEntry) -> None:
        record = entry.record
        if record.group_name is None:
            self.pod_group[entry.slot] = NO_GROUP
            return
        key = GroupKey(record.key.namespace, record.group_name)
        self.members.setdefault(key, {})[record.key.name] = None
        if key not in self.groups:
            self.missing_groups.add(key)
        self.pod_group[entry.slot] = self._group_id(key)
        self._touch(key)

    def _leave_group(self, entry: PodEntry) -> None:
        record = entry.record
        if record.group_name is None:
            return
        key = GroupKey(record.key.namespace, record.group_name)
        self._touch(key)
        names = self.members.get(key)
        if names is not None:
            names.pop(record.key.name, None)
            if not names:
                del self.members[key]
                self.missing_groups.discard(key)

    def _node_taken(self, record: PodRecord) -> str | None:
        """Where the pod takes capacity: its node, its planned node, or nowhere."""
        if record.terminal:
            return None
        if record.node_name is not None:
            return record.node_name
        if record.group_name is None:
            return None
        group = self.groups.get(GroupKey(record.key.namespace, record.group_name))
        if group is None or not group.admitted:
            return None
        return group.plan.get(record.key.name)

    def _count_member(self, entry: PodEntry, sign: int) -> None:
        """Keep per-group tallies, so a cycle need not walk the members of every gang.

        A member being deleted still takes its node's capacity until it is gone, but
        counts towards no quorum: it is on its way out (a victim, a rollback), not part
        of a running gang."""
        record = entry.record
        if record.group_name is None:
            return
        key = GroupKey(record.key.namespace, record.group_name)
        if entry.taken_on is not None and not record.terminating:
            count = self.placed_members.get(key, 0) + sign
            if count:
                self.placed_members[key] = count
            else:
                del self.placed_members[key]
        elif record.placeable:
            names = self.pending_members.setdefault(key, {})
            if sign > 0:
                names[record.key.name] = None
            else:
                names.pop(record.key.name, None)
            if not names:
                del self.pending_members[key]

    def _take_capacity(self, entry: PodEntry) -> None:
        node = self._node_taken(entry.record)
        entry.taken_on = node
        self._count_member(entry, 1)
        if node is None:
            self.pod_node[entry.slot] = NO_NODE
            return
        self._pods_on.setdefault(node, {})[entry.record.key] = None
        self.placed.add(entry.record, node)
        for port in entry.record.host_ports:
            users = self.host_ports.setdefault(port, {})
            users[node] = users.get(node, 0) + 1
        slot = self._node_slot.get(node)
        self.marks.capacity_moved(slot)
        self.pod_node[entry.slot] = NO_NODE if slot is None else slot
        if slot is not None:
            self._add_demand(slot, entry.demand)

    def _free_capacity(self, entry: PodEntry) -> None:
        self._count_member(entry, -1)
        node = entry.taken_on
        if node is None:
            return
        on_node = self._pods_on[node]
        on_node.pop(entry.record.key, None)
        self.placed.remove(entry.record, node)
        if not on_node:
            del self._pods_on[node]
        for port in entry.record.host_ports:
            users = self.host_ports[port]
            users[node] -= 1
            if not users[node]:
                del users[node]
                if not users:
                    del self.host_ports[port]
        slot = self._node_slot.get(node)
        self.marks.capacity_moved(slot)
        if slot is not None:
            self._add_demand(slot, entry.demand, sign=-1)
        entry.taken_on = None
        self.pod_node[entry.slot] = NO_NODE

    # ---- pod groups ------------------------------------------------------------

    def put_pod_group(self, record: GroupRecord) -> None:
        """Set a PodGroup from its record (a forecast admits gangs without manifests)."""
        previous = self.groups.get(record.key)
        if previous is not None and _holds(previous, self.placed_members):
            self.marks.holder_changed()
        self.groups[record.key] = record
        self.missing_groups.discard(record.key)
        self._touch(record.key)
        self._group_id(record.key)
        if record.gang and not record.admitted:
            self.unadmitted_gangs.add(record.key)
        else:
            self.unadmitted_gangs.discard(record.key)
        if previous is None or (previous.admitted, previous.plan) != (record.admitted, record.plan):
            self._retake_members(record.key)

    def remove_pod_group(self, key: GroupKey) -> None:
        """Take a PodGroup away; its member pods stay, as members of a missing group."""
        self.marks.holder_changed()
        self.unadmitted_gangs.discard(key)
        self.changed.pop(key, None)
        self.groups_removed += 1
        if key in self.members:
            self.missing_groups.add(key)
        if self.groups.pop(key, None) is not None:
            self._retake_members(key)

    def _touch(self, key: GroupKey) -> None:
        """Count a change of an existing group (one that does not exist is never quiet)."""
        if key in self.groups:
            if _holds(self.groups[key], self.placed_members):
                self.marks.holder_changed()
            self.changes += 1
            self.changed.pop(key, None)  # to the end: the most recent last
            self.changed[key] = self.changes

    def _retake_members(self, key: GroupKey) -> None:
        for name in sorted(self.members.get(key, ())):
            entry = self.pods[PodKey(key.namespace, name)]
            self._free_capacity(entry)
            self._take_capacity(entry)

    # ---- priority classes ------------------------------------------------------

    def put_priority_class(self, record: PriorityClassRecord) -> None:
        """Add or replace a PriorityClass, and with it the priority of the pods that
        name it (or of all that name none, for the global default)."""
        if self.priority_classes.get(record.name) != record:
            self.priority_classes[record.name] = record
            self._refresh_priorities()

    def remove_priority_class(self, name: str) -> None:
        """Take a PriorityClass away; the pods that named it fall back to the default."""
        if self.priority_classes.pop(name, None) is not None:
            self._refresh_priorities()

    def resolve_priority(self, explicit: int | None, class_name: str | None) -> int:
        """spec.priority, else the named class (`muster.api.priority.resolved_priority`)."""
        return resolved_priority(self.priority_classes, explicit, class_name)

    def _priority_of(self, record: PodRecord) -> int:
        return self.resolve_priority(record.priority, record.priority_class)

    def _refresh_priorities(self) -> None:
        for entry in self.pods.values():
            if entry.record.priority is None:
                entry.priority = self._priority_of(entry.record)
                self.pod_priority[entry.slot] = entry.priority


def _holds(record: GroupRecord, placed_members: dict[GroupKey, int]) -> bool:
    """Whether a group holds capacity, or may: what preemption weighs (`marks`)."""
    return record.admitted or not record.gang or record.key in placed_members
