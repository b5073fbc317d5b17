"""What a cycle does with a gang's refusal memory: nodes to leave out, or no plan at all.

Two rules, both tied to the node set the memory was learnt on (`NodeTable.digest`):

- the nodes kube-scheduler refused the gang's pods on are left out of its plans, as
  one more static filter with its own reason, so an `Unschedulable` message says so
  when they were the last nodes left;
- after `max_rollbacks` refusal rollbacks in a row the gang gets no plan at all:
  replanning on an unchanged cluster would only loop through the nodes (a refusal
  kube-scheduler makes everywhere, such as an unbound volume, is never fixed by
  another node). The verdict is `Unschedulable`, quoting the last refusal.

When a node is added, removed, relabelled, tainted or cordoned the digest changes,
and the memory no longer applies: the gang may try every node again, for up to
`max_rollbacks` more rollbacks. A pod deleted elsewhere does not count as a change:
capacity is what the engine models, and it is not what kube-scheduler refused.
"""

from __future__ import annotations

import numpy as np

from muster.scheduler.decisions.results import Reason, Verdict
from muster.scheduler.memory.refusals import RefusalMemory, describe, exhausted
from muster.scheduler.rules.filters import REFUSED
from muster.scheduler.state.intake import GroupRecord
from muster.scheduler.state.predicates import NodeTable, StaticFilter, with_refusals
from muster.scheduler.state.state import ClusterState


class Avoidance:
    """One cycle's view of the refusal memories."""

    def __init__(self, state: ClusterState, table: NodeTable, *, max_rollbacks: int) -> None:
        self.state = state
        self.table = table
        self.max_rollbacks = max_rollbacks

    def memory(self, group: GroupRecord | None) -> RefusalMemory | None:
        """The group's memory, if it was learnt on the current node set."""
        memory = None if group is None else group.refusals
        if memory is None or memory.node_set != self.table.digest():
            return None
        return memory

    def narrowed(self, rules_filter: StaticFilter, group: GroupRecord | None) -> StaticFilter:
        """The filter, also refusing the nodes kube-scheduler refused the group's pods on."""
        memory = self.memory(group)
        if memory is None:
            return rules_filter
        refused = np.zeros(self.table.size, dtype=np.bool_)
        for name in memory.node_names:
            slot = self.state.node_slot(name)
            if slot is not None and slot < self.table.size:
                refused[slot] = True
        return with_refusals(rules_filter, refused, REFUSED)

    def benched_by_refusals(self, group: GroupRecord) -> Verdict | None:
        """`Unschedulable` for a gang refused `max_rollbacks` times in a row, else None."""
        memory = group.refusals
        if memory is None or not exhausted(
            memory, self.max_rollbacks, node_set=self.table.digest()
        ):
            return None
        latest = memory.latest()
        last = f" (last: {describe(latest)})" if latest is not None else ""
        message = (
            f"kube-scheduler refused its released pods in {memory.rollbacks} rollbacks "
            f"in a row{last}; not planned again until a node is added, removed or changed"
        )
        return Verdict(Reason.UNSCHEDULABLE, message)
