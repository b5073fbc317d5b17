"""The node table's columns, kept up to date as nodes come, change and go.

A cycle after the node set changed needs a new `NodeTable`. Built from the records,
that is a pass over every node in Python (flags, taint sets, the order of names):
about 3 ms at 5,000 nodes, in the first cycle after each added or relabelled node.
Kept here node by node instead, a new table is a copy of a few arrays; the order of
names is kept by inserting a name where it sorts (a shift of the ranks after it).
"""

from __future__ import annotations

import bisect

import numpy as np

from muster.scheduler.objects.growable import grown
from muster.scheduler.rules.taints import Taint
from muster.scheduler.state.intake import NodeRecord
from muster.scheduler.state.predicates import NodeTable

NO_TAINT_SET = -1  # a free slot's taint set: equal to no set's id


class NodeColumns:
    """Per node slot: the record, whether a node holds it, whether it is cordoned, its
    taint set and its rank in name order. Taint sets are interned with a count of the
    nodes that carry them, and a set no node carries any longer is dropped, so nothing
    grows with history."""

    def __init__(self) -> None:
        self.records: list[NodeRecord | None] = []
        self._alive = np.zeros(0, dtype=np.bool_)
        self._unschedulable = np.zeros(0, dtype=np.bool_)
        self._taint_set_of = np.zeros(0, dtype=np.int32)
        self._name_rank = np.zeros(0, dtype=np.int32)
        self._names: list[str] = []  # of the live slots, sorted
        self._taint_ids: dict[tuple[Taint, ...], int] = {}
        self._taint_uses: dict[int, int] = {}
        self._next_taint_id = 0

    def put(self, slot: int, record: NodeRecord) -> None:
        """Slot `slot` now holds `record` (a new node, or a new version of its node)."""
        previous = self.records[slot] if slot < len(self.records) else None
        if slot >= len(self.records):
            self.records.extend([None] * (slot + 1 - len(self.records)))
            size = len(self.records)
            self._alive = grown(self._alive, size, False)
            self._unschedulable = grown(self._unschedulable, size, False)
            self._taint_set_of = grown(self._taint_set_of, size, NO_TAINT_SET)
            self._name_rank = grown(self._name_rank, size, 0)
        if previous is None:
            rank = bisect.bisect_left(self._names, record.name)
            self._names.insert(rank, record.name)
            self._name_rank[self._name_rank >= rank] += 1
            self._name_rank[slot] = rank
        else:
            self._forget_taints(slot)
        self.records[slot] = record
        self._alive[slot] = True
        self._unschedulable[slot] = record.unschedulable
        self._taint_set_of[slot] = self._intern(record.taints)

    def clear(self, slot: int) -> None:
        """Slot `slot`'s node is gone."""
        record = self.records[slot]
        if record is None:
            return
        rank = bisect.bisect_left(self._names, record.name)
        del self._names[rank]
        self._name_rank[self._name_rank > rank] -= 1
        self._forget_taints(slot)
        self.records[slot] = None
        self._alive[slot] = False
        self._unschedulable[slot] = False

    def table(self) -> NodeTable:
        """The node set as it is now, as a table no later change touches."""
        size = len(self.records)
        return NodeTable(
            records=list(self.records),
            alive=self._alive[:size].copy(),
            unschedulable=self._unschedulable[:size].copy(),
            taint_set_of=self._taint_set_of[:size].copy(),
            taint_sets={set_id: taints for taints, set_id in self._taint_ids.items()},
            name_rank=self._name_rank[:size].copy(),
        )

    def copy(self) -> NodeColumns:
        twin = NodeColumns()
        twin.records = list(self.records)
        twin._alive = self._alive.copy()
        twin._unschedulable = self._unschedulable.copy()
        twin._taint_set_of = self._taint_set_of.copy()
        twin._name_rank = self._name_rank.copy()
        twin._names = list(self._names)
        twin._taint_ids = dict(self._taint_ids)
        twin._taint_uses = dict(self._taint_uses)
        twin._next_taint_id = self._next_taint_id
        return twin

    def _intern(self, taints: tuple[Taint, ...]) -> int:
        set_id = self._taint_ids.get(taints)
        if set_id is None:
            set_id = self._next_taint_id
            self._next_taint_id += 1
            self._taint_ids[taints] = set_id
        self._taint_uses[set_id] = self._taint_uses.get(set_id, 0) + 1
        return set_id

    def _forget_taints(self, slot: int) -> None:
        set_id = int(self._taint_set_of[slot])
        self._taint_set_of[slot] = NO_TAINT_SET
        uses = self._taint_uses.pop(set_id) - 1
        if uses:
            self._taint_uses[set_id] = uses
        else:
            record = self.records[slot]
            assert record is not None, "a live slot's taint set is counted"
            del self._taint_ids[record.taints]
