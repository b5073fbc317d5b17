"""When, counted in events, each kind of input a refusal reads last changed.

A gang refused in one cycle is refused the same way in the next while nothing its
refusal read has changed (`cycle.memo`). The state marks, with one running count, the
last change of each kind of input: the *world* (nodes, their labels, taints and
allocatable, priority classes, namespaces, volumes, budgets, devices, topologies:
anything that may change every gang's rules), *capacity* (a pod starting or ceasing to
take capacity on a node, overall and per node, so a gang kept to a few nodes by its
rules wakes only for those), and *holders* (a change to a group that holds capacity:
its priority and policy are what preemption weighs). Changes to a waiting gang's own
PodGroup and pods are the state's per-group counts (`ClusterState.changed`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

BoolArray = npt.NDArray[np.bool_]


class Marks:
    """The latest change of each kind of input, as a count of the changes seen."""

    def __init__(self) -> None:
        self.count = 0
        self.world = 0
        self.capacity = 0
        self.holders = 0
        self.nodes: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)  # by node slot

    def copy(self) -> Marks:
        twin = Marks()
        twin.count, twin.world = self.count, self.world
        twin.capacity, twin.holders = self.capacity, self.holders
        twin.nodes = self.nodes.copy()
        return twin

    def world_changed(self) -> None:
        self.count += 1
        self.world = self.count

    def holder_changed(self) -> None:
        self.count += 1
        self.holders = self.count

    def capacity_moved(self, slot: int | None) -> None:
        """Capacity was taken or freed on a node (`slot`: None for a node not known yet,
        which changes the world when it comes)."""
        self.count += 1
        self.capacity = self.count
        if slot is None:
            return
        if slot >= self.nodes.shape[0]:
            self.nodes = np.pad(self.nodes, (0, slot + 1 - self.nodes.shape[0]))
        self.nodes[slot] = self.count

    def last_moved_on(self, nodes: BoolArray) -> int:
        """The latest capacity change on any of `nodes` (0: none since the start)."""
        known = self.nodes[: nodes.shape[0]]
        return int(known[nodes[: known.shape[0]]].max(initial=0))
