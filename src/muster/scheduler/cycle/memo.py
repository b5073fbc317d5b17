"""A waiting gang's verdict, kept until something that could change it has changed.

Deciding why a gang does not fit is most of a cycle's cost when many gangs wait, and
a backlog that cannot move gives the same answer cycle after cycle. So each refusal
is kept (`KeptVerdict`, handed on in `Carried.kept`) with what it read, and a later
cycle gives the kept verdict again instead of deciding, while all of this holds:

- the gang's own inputs are the same: its PodGroup's record, its member pods'
  records, its priority (`own_inputs`);
- nothing changed the world: nodes (labels, taints, allocatable), priority classes,
  namespaces, volumes, budgets, devices, topologies (`state.marks`);
- the capacity it read did not move: none, for a gang that fits nowhere even on the
  empty cluster (nothing that ends can help it); else the capacity of the nodes its
  pods' rules allow; else, where inter-pod rules, devices or preemption are in play,
  any capacity anywhere (and, for preemption, any change to a group holding some);
- the cycle's view is still as the cycle started where it reads (nothing admitted on
  or closed of those nodes ahead of it this cycle, `Board.touched`), and the gang has
  not waited past `starvation_seconds`, whose refusal closes nodes and names the time
  waited;
- it was decided less than `verdict_flush_seconds` ago.

The queue position alone may differ: it is given as it is now. The memo answers for
one gang visited; which gangs a cycle visits at all, and which it skips because their
kept verdict holds unasked, is `backlog`'s, which asks each of these questions once
per kind of verdict. When in doubt, the gang is decided: a change that might matter
wakes it.

This follows kube-scheduler's QueueingHints (pkg/scheduler/backend/queue,
`isPodWorthRequeuing`): an unschedulable pod is moved back to be tried only by a
cluster event one of the plugins that rejected it says may help, and
`flushUnschedulableEntitiesLeftover` moves back, as a safety net, whatever stayed
unschedulable longer than `podMaxInUnschedulablePodsDuration` (5 minutes). Kueue
does the same per ClusterQueue: `QueueInadmissibleWorkloads` (pkg/queue/manager.go)
requeues inadmissible workloads only when their ClusterQueue or cohort changes. Here
the events are the state's marks, and the hint is what kind of capacity the refusal
read.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from muster.api.keys import GroupKey, PodKey
from muster.scheduler.config import EngineConfig
from muster.scheduler.cycle.board import Board, BoolArray
from muster.scheduler.cycle.queue import Gang
from muster.scheduler.decisions.results import KeptVerdict, Reads, Verdict
from muster.scheduler.placement.preemption import PreemptionSearch
from muster.scheduler.state.intake import PlacementRules
from muster.scheduler.state.state import ClusterState


class Memo:
    """The verdicts one cycle was handed (`before`), and those it hands on (`kept`)."""

    def __init__(
        self,
        board: Board,
        config: EngineConfig,
        now: float,
        before: Mapping[GroupKey, KeptVerdict],
        preemption: PreemptionSearch,
    ) -> None:
        self.board = board
        self.config = config
        self.now = now
        self.keeps = config.keep_verdicts
        self.before = before if config.keep_verdicts else {}
        self.preemption = preemption
        self.kept: dict[GroupKey, KeptVerdict] = {}
        self.hints: dict[GroupKey, Hint] = {}  # of the verdicts in `kept` (`backlog`)
        self.recalled: set[GroupKey] = set()  # the gangs given a kept verdict this cycle
        self._nodes: dict[frozenset[PlacementRules], BoolArray] = {}
        self._moved: dict[int, int] = {}  # id of a node mask: its latest capacity change
        self._touches: dict[int, tuple[int, bool]] = {}  # id of a node mask: touched?
        self._candidates: dict[int, bool] = {}  # by priority: whether any pod is below it

    def recall(self, gang: Gang, position: int) -> Verdict | None:
        """The gang's kept verdict, if nothing it read has changed since (see above)."""
        kept = self.before.get(gang.key)
        if kept is None or not self._holds(kept, gang):
            return None
        self.kept[gang.key] = kept
        self.hints[gang.key] = _hint(gang, kept.reads)
        self.recalled.add(gang.key)
        return kept.verdict.at_position(position)

    def keep(self, gang: Gang, verdict: Verdict, *, preemption_tried: bool, ruled: bool) -> None:
        """Keep a refusal just decided on the view as the cycle started; `ruled`: inter-pod
        rules or devices were weighed."""
        explanation = verdict.explanation
        if not self.config.keep_verdicts or explanation is None:
            return
        never = explanation.never
        if not never and self.now - gang.waiting_since > self.config.starvation_seconds:
            return  # its refusal names the time waited
        nodes = None
        if never:
            own_rules = any(entry.record.inter_pod for entry in gang.pending)
            reads = Reads.EVERYTHING if own_rules else Reads.NOTHING
        elif preemption_tried:
            reads = Reads.VICTIMS
        elif ruled:
            reads = Reads.EVERYTHING
        else:
            reads, nodes = Reads.NODES, self.allowed(_rules(gang))
        if reads is not Reads.NOTHING and self.touched(nodes):
            return  # decided on a view this cycle changed where it reads
        state = self.board.state
        self.kept[gang.key] = KeptVerdict(
            verdict=verdict,
            decided_at=self.now,
            as_of=state.marks.count,
            own=own_inputs(state, gang),
            priority=gang.priority,
            devices=state.devices.version,
            reads=reads,
            nodes=nodes,
        )
        self.hints[gang.key] = _hint(gang, reads)

    def _holds(self, kept: KeptVerdict, gang: Gang) -> bool:
        board, state = self.board, self.board.state
        marks = state.marks
        if (
            self.now - kept.decided_at >= self.config.verdict_flush_seconds
            or marks.world > kept.as_of
            or kept.devices != state.devices.version
            or kept.priority != gang.priority
            or kept.own != own_inputs(state, gang)
        ):
            return False
        if kept.reads is Reads.NOTHING:
            return True  # the empty cluster's answer: no view this cycle changes it
        if self.touched(kept.nodes):
            return False
        if self.now - gang.waiting_since > self.config.starvation_seconds:
            return False
        if kept.reads is Reads.VICTIMS:
            return marks.capacity <= kept.as_of and marks.holders <= kept.as_of
        if gang.record.preempt and self.has_candidates(gang.priority):
            return False  # preemption now tried, where it was not
        if kept.reads is Reads.EVERYTHING:
            return marks.capacity <= kept.as_of
        if board.view.anyone_repels or board.devices is not None:
            return False  # now weighed, where they were not
        assert kept.nodes is not None, "a verdict reading some nodes names them"
        return self._last_moved(kept.nodes) <= kept.as_of

    def allowed(self, rules: frozenset[PlacementRules]) -> BoolArray:
        """The nodes any of `rules` allow, one array per set of rules, shared by the
        gangs that have it."""
        allowed = self._nodes.get(rules)
        if allowed is None:
            table = self.board.table
            allowed = np.zeros(table.size, dtype=np.bool_)
            for each in rules:
                allowed |= table.static_filter(each).allowed
            self._nodes[rules] = allowed
        return allowed

    def has_candidates(self, priority: int) -> bool:
        """`PreemptionSearch.has_candidates`, asked once a cycle per priority."""
        found = self._candidates.get(priority)
        if found is None:
            found = self._candidates[priority] = self.preemption.has_candidates(priority)
        return found

    def touched(self, nodes: BoolArray | None) -> bool:
        """Whether this cycle's view changed on `nodes` (None: on any node)."""
        board = self.board
        if not board.touches:
            return False
        if nodes is None:
            return True
        seen = self._touches.get(id(nodes))
        if seen is None or seen[0] != board.touches:
            seen = (board.touches, bool((board.touched[: nodes.shape[0]] & nodes).any()))
            self._touches[id(nodes)] = seen
        return seen[1]

    def _last_moved(self, nodes: BoolArray) -> int:
        moved = self._moved.get(id(nodes))
        if moved is None:
            moved = self.board.state.marks.last_moved_on(nodes)
            self._moved[id(nodes)] = moved
        return moved


Hint = tuple[Reads, frozenset[PlacementRules] | None, int | None]


def _hint(gang: Gang, reads: Reads) -> Hint:
    """What a kept verdict of the gang reads, as far as gangs share it (`backlog`): the
    kind of capacity, the rules that pick its nodes, the priority it could preempt at."""
    rules = _rules(gang) if reads is Reads.NODES else None
    return (reads, rules, gang.priority if gang.record.preempt else None)


def _rules(gang: Gang) -> frozenset[PlacementRules]:
    """The placement rules of the gang's pending pods."""
    return frozenset(entry.record.rules for entry in gang.pending if entry.record.rules)


def own_inputs(state: ClusterState, gang: Gang) -> tuple[object, ...]:
    """What of the gang itself its verdict read: its PodGroup's record, and the records
    of its member pods (pending, placed, or neither), in the order they joined."""
    namespace = gang.key.namespace
    members = state.members.get(gang.key, ())
    return (gang.record, tuple(state.pods[PodKey(namespace, name)].record for name in members))
