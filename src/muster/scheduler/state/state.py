"""The engine's live picture of the cluster, kept up to date one event at a time.

`ClusterState` is the one door into it, for the operator, `simulate` and `replay`
alike: `apply` takes an object in as the API server gives it and `delete` lets one go.
Each kind (`kinds`) turns its object into the engine's record and hands it to the
store's mutators (`store`); the record before an event and the record after it say
whether the event changed anything the engine reads, so that a node's heartbeat or a
pod's unrelated annotation starts no cycle. Beside the door: what the operator
observed of its own writes, and the queries a cycle asks of the whole state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from muster.api.keys import GroupKey, PodKey, resource_version
from muster.api.wire import SUCCEEDED
from muster.scheduler.devices.selectors import Case, Judgement
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.objects.fields import IntakeError
from muster.scheduler.state.intake import GroupRecord
from muster.scheduler.state.kinds import (
    KINDS,
    MARKING_THEMSELVES,
    Applied,
    ObjectKey,
    Rejected,
    applied,
    key_of,
    scoped,
)
from muster.scheduler.state.min_resources import schedulable_allocatable
from muster.scheduler.state.slots import copied
from muster.scheduler.state.store import NO_GROUP, ClusterStore, Matrix, PodEntry


class ClusterState(ClusterStore):
    """Nodes, pods, PodGroups, PriorityClasses and more, as given by the API (plain mappings).

    `apply` adds or replaces an object, `delete` removes it. An object the engine
    cannot use is skipped: `apply` says why, and `rejected` keeps the reasons of
    objects currently skipped, for logs and `simulate`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.rejected: dict[ObjectKey, Rejected] = {}
        # Whose counts these are: what a cycle hands on (`Carried`) is kept as of this
        # state's counts, and a copy counts on its own from there.
        self.lineage = object()

    def copy(self) -> ClusterState:
        """An independent copy for a what-if run (a forecast) that changes it.

        Far cheaper than a deep copy: records are frozen and shared, the arrays are
        copied whole, and only the mutable entries and indexes are rebuilt (each
        attribute by its type, see `copied`, so one added later is copied too). Shared
        are the node table and the demand rows, which are never changed once built.
        """
        twin = ClusterState.__new__(ClusterState)
        twin.__dict__.update({name: copied(value) for name, value in vars(self).items()})
        twin._table = self._table
        twin.lineage = object()
        twin.pods = {
            key: PodEntry(entry.record, entry.slot, entry.demand, entry.priority, entry.taken_on)
            for key, entry in self.pods.items()
        }
        return twin

    # ---- the door --------------------------------------------------------------

    def apply(self, kind: str, obj: Mapping[str, Any]) -> Applied:
        """Take in an object as the API server gives it, new or changed: an object the
        engine cannot use replaces its previous version by nothing (that version no
        longer describes the cluster), and is kept in `rejected` with why."""
        key = key_of(kind, obj)
        door = KINDS[kind]
        before = door.record(self, key[1], key[2]), self.rejected.get(key)
        try:
            door.put(self, obj)
        except IntakeError as error:
            if key[2]:
                door.remove(self, key[1], key[2])
            self.rejected[key] = Rejected(str(error), resource_version(obj))
        else:
            self.rejected.pop(key, None)
        after = door.record(self, key[1], key[2]), self.rejected.get(key)
        if before != after and kind not in MARKING_THEMSELVES:
            self.marks.world_changed()
        return applied(kind, after[1].reason if after[1] else None, before, after)

    def delete(self, kind: str, namespace: str, name: str) -> Applied:
        """Let go of an object the API server deleted (or that a what-if takes away)."""
        key = (kind, scoped(kind, namespace), name)
        door = KINDS[kind]
        before = door.record(self, key[1], name), self.rejected.pop(key, None)
        door.remove(self, key[1], name)
        if before != (None, None) and kind not in MARKING_THEMSELVES:
            self.marks.world_changed()
        return applied(kind, None, before, (None, None))

    # ---- what the operator observed --------------------------------------------

    def observe_release(self, pod: PodKey, failure: ReleaseFailure | None) -> None:
        """The outcome of releasing a pod, as the operator saw it: the API server's
        answer when it did not release it, None when it did."""
        entry = self.pods.get(pod)
        if entry is not None and entry.record.group_name is not None:
            self._touch(GroupKey(pod.namespace, entry.record.group_name))
        if failure is None or entry is None:
            self.release_failures.pop(pod, None)
        else:
            self.release_failures[pod] = failure

    def judge_selectors(self, found: Mapping[Case, Judgement]) -> bool:
        """Judgements of DRA selector cases, made outside the engine (which never
        evaluates one itself): whether any was new."""
        new = self.devices.judge(found)
        if new:
            self.marks.world_changed()
        return new

    # ---- queries used by a cycle -----------------------------------------------

    def member_priority_floors(self) -> npt.NDArray[np.int64]:
        """The lowest priority among each group's member pods, by group id (the
        largest int64 for a group with none yet): see :meth:`gang_priority`."""
        size = len(self.pod_keys)
        floors = np.full(len(self.group_keys), np.iinfo(np.int64).max, dtype=np.int64)
        groups = self.pod_group[:size]
        members = groups != NO_GROUP
        np.minimum.at(floors, groups[members], self.pod_priority[:size][members])
        return floors

    def gang_priority(self, record: GroupRecord, floors: npt.NDArray[np.int64]) -> int:
        """The priority a gang is queued and preempts with, and is preempted at: its
        own, but never above the lowest its member pods were admitted with.

        A pod's priority is what the API server's Priority admission gave it (its
        class, checked against the namespace's quotas); a PodGroup's is what its
        creator named. Capping one by the other keeps a gang from outranking what its
        namespace may run, whatever class its PodGroup names.
        """
        own = self.resolve_priority(record.priority, record.priority_class)
        group_id = self.group_ids.get(record.key)
        if group_id is None or group_id >= floors.shape[0]:
            return own
        return min(own, int(floors[group_id]))

    def quorum(self, record: GroupRecord) -> int:
        """How many members the gang needs together: its minCount, or fewer when its
        Job has fewer pods left to run (its completions, less those that succeeded).

        A Job whose members partly succeeded before the others were lost (their node
        deleted, a member evicted, the gang preempted) makes only the pods still to
        run; waiting for minCount of them would wait forever. The rest are still one
        gang: all of them or none. As Volcano counts a job's succeeded tasks as ready.
        """
        if record.completions is None:
            return record.min_count
        names = self.members.get(record.key, ())
        pods = (self.pods[PodKey(record.key.namespace, name)] for name in names)
        succeeded = sum(entry.record.phase == SUCCEEDED for entry in pods)
        return max(min(record.min_count, record.completions - succeeded), 1)

    def reserved(self) -> Matrix:
        """Per node slot and resource: the part of `taken` that is reserved, by pods of
        admitted plans that are not bound yet (the rest is what bound pods take)."""
        reserved = np.zeros_like(self.taken)
        for entry in self.pods.values():
            slot = None if entry.reserved_on is None else self._node_slot.get(entry.reserved_on)
            if slot is not None:
                reserved[slot] += self.demand_vector(entry.demand)
        return reserved

    def node_slot(self, name: str) -> int | None:
        return self._node_slot.get(name)

    def node_names(self) -> list[str]:
        return sorted(self._node_slot)

    def schedulable_allocatable(self) -> dict[str, int]:
        """The summed allocatable of the nodes that take new pods (an adopted
        PodGroup's `minResources` is checked against it)."""
        return schedulable_allocatable(r for r in self._node_columns.records if r is not None)
