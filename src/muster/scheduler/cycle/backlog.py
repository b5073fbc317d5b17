"""Which waiting gangs a cycle need not visit at all: their kept verdict holds, and
nothing since the cycle before, nor anything this cycle did ahead of them, could
change that.

`memo.Memo.recall` asks, for one gang, whether its kept verdict still holds. Asked of
each gang of a backlog of thousands, every cycle, the asking is what the cycle costs.
So each question is asked once per cycle, or once per kind of verdict: kept verdicts
are grouped by what they read (a `Hint`: the kind of capacity, the rules that pick
its nodes, the priority it could preempt at), and

- a change to the world or the device book (`state.marks`) visits every gang;
- a change to the gang itself (its PodGroup, its pods, so its priority) visits it:
  the queue's changed gangs (`queue.Queue.changed`);
- the safety flush and starvation come at a time known in advance: each kept verdict's
  is in a heap (`Backlog.due`), and a gang whose time has come is visited;
- capacity that moved (on the hint's nodes, anywhere, or among the groups holding
  it), pods now below the hint's priority (preemption to try), other pods' inter-pod
  rules or devices now weighed: asked once per hint, it wakes every gang of the hint;
- the cycle's own placements and closed nodes ahead of a gang (`Board.touched`):
  asked once per hint each time the view changes, it wakes the gangs behind.

A gang not visited is given its kept verdict, exactly as `recall` would give it; one
visited is asked `recall` and decided as before, so the cycle decides what the walk of
every gang decides. When in doubt, a gang is visited.

This follows kube-scheduler's queue (pkg/scheduler/backend/queue/scheduling_queue.go,
`moveAllToActiveOrBackoffQueue`): an event no plugin is interested in returns before
the unschedulable pods are iterated (`isEventOfInterest`), and PreQueueingHintFns
narrow the pods an event is evaluated for (`collectEntitiesToEvaluate`) before each
one's QueueingHint is asked (`isEntityWorthRequeuing`). Here a hint is asked once for
all the gangs that share it, and only the gangs it wakes are asked the memo's question.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass, field

from muster.api.keys import GroupKey
from muster.scheduler.config import EngineConfig
from muster.scheduler.cycle.board import Board
from muster.scheduler.cycle.memo import Hint, Memo
from muster.scheduler.cycle.queue import Queue
from muster.scheduler.decisions.results import KeptVerdict, Reads
from muster.scheduler.state.state import ClusterState

EARLY = 1.0  # seconds: a verdict due this soon is visited (visiting early changes nothing)


@dataclass(frozen=True, slots=True)
class Seen:
    """The state's marks and device book as a cycle found them."""

    count: int
    world: int
    capacity: int
    holders: int
    devices: int

    @staticmethod
    def of(state: ClusterState) -> Seen:
        marks = state.marks
        return Seen(marks.count, marks.world, marks.capacity, marks.holders, state.devices.version)


@dataclass(frozen=True, slots=True)
class Backlog:
    """What a cycle hands on of its queue and its kept verdicts, for the next to skip
    the gangs whose verdict holds (see the module). Never changed once made."""

    queue: Queue
    seen: Seen
    hint_of: Mapping[GroupKey, int] = field(default_factory=dict)  # kept gang: its hint's id
    hints: tuple[Hint, ...] = ()  # by id
    due: tuple[tuple[float, GroupKey], ...] = ()  # a heap: when a kept verdict falls due
    unkept: frozenset[GroupKey] = frozenset()  # visited, and no verdict kept: visit again
    # kept, and their status may not say so yet: given again, they are planned
    telling: frozenset[GroupKey] = frozenset()


class Skipping:
    """One cycle's walk of its waiting gangs: which it visits, in queue order, and
    which it skips, their kept verdict holding (see the module)."""

    def __init__(
        self,
        before: Backlog | None,
        queue: Queue,
        *,
        memo: Memo,
        board: Board,
        config: EngineConfig,
    ) -> None:
        self.board, self.memo, self.config, self.queue = board, memo, config, queue
        self.seen = Seen.of(board.state)
        self.usable = before is not None and _still_usable(before, queue, self.seen, memo)
        self.hints: list[Hint] = []
        self.hint_of: Mapping[GroupKey, int] = {}
        self.due: list[tuple[float, GroupKey]] = []
        self.telling: frozenset[GroupKey] = frozenset()
        self.visit: set[GroupKey] = set()  # to visit whatever their hint
        self.visited: set[GroupKey] = set()
        self.woken: set[int] = set()
        self.touches = 0
        self._ahead: list[tuple[int, GroupKey]] = []  # a heap of (position, gang) to visit
        self._members: dict[int, list[GroupKey]] | None = None  # by hint, once asked
        if before is None or not self.usable:
            return
        self.hints, self.hint_of = list(before.hints), before.hint_of
        self.due, self.telling = list(before.due), before.telling
        assert queue.changed is not None, "a queue brought up to date names its changes"
        self.visit = set(queue.changed) | before.unkept
        now = memo.now
        while self.due and self.due[0][0] <= now + EARLY:
            self.visit.add(heapq.heappop(self.due)[1])
        for key in self.visit:
            self._ahead_of(key, 0)
        for number, hint in enumerate(self.hints):
            if self._woken(hint, before.seen):
                self._wake(number, 0)

    def walk(self) -> Iterator[tuple[int, GroupKey]]:
        """The waiting gangs to visit, with their position, in queue order; a gang
        woken while the walk goes on (`woken_by_view`) is visited when its turn comes."""
        if not self.usable:
            for position, (_, key) in enumerate(self.queue.waiting, start=1):
                if key not in self.visited:
                    self.visited.add(key)
                    yield position, key
            return
        while self._ahead:
            position, key = heapq.heappop(self._ahead)
            if key not in self.visited:
                self.visited.add(key)
                yield position, key

    def visiting(self, key: GroupKey) -> None:
        """A gang visited out of its turn (`packing`'s first), not to be visited again."""
        self.visited.add(key)

    def woken_by_view(self, position: int) -> None:
        """Wake, behind `position`, the hints this cycle's view changed under since
        last asked."""
        board = self.board
        if not self.usable or board.touches == self.touches:
            return
        self.touches = board.touches
        for number, hint in enumerate(self.hints):
            if number not in self.woken and self._touched(hint):
                self._wake(number, position)

    def _wake(self, number: int, position: int) -> None:
        """Visit the gangs of a hint behind `position`."""
        self.woken.add(number)
        if self._members is None:
            self._members = {}
            for key, each in self.hint_of.items():
                self._members.setdefault(each, []).append(key)
        for key in self._members.get(number, ()):
            self._ahead_of(key, position)

    def _ahead_of(self, key: GroupKey, position: int) -> None:
        """Visit a gang still waiting, if its place is behind `position`."""
        gang = self.queue.gangs.get(key)
        if gang is None or gang.record.admitted:
            return
        place = self.queue.position(key)
        if place > position:
            heapq.heappush(self._ahead, (place, key))

    def _woken(self, hint: Hint, seen: Seen) -> bool:
        """Whether what the hint's verdicts read changed since `seen` (`Memo._holds`)."""
        reads, rules, preempts_at = hint
        marks = self.board.state.marks
        capacity_moved = marks.capacity != seen.capacity
        if reads is Reads.NOTHING:
            return False
        if reads is Reads.VICTIMS:
            return capacity_moved or marks.holders != seen.holders
        if preempts_at is not None and self.memo.has_candidates(preempts_at):
            return True
        if reads is Reads.EVERYTHING:
            return capacity_moved
        assert rules is not None, "a hint reading some nodes names their rules"
        board = self.board
        if board.view.anyone_repels or board.devices is not None:
            return True
        return marks.last_moved_on(self.memo.allowed(rules)) > seen.count

    def _touched(self, hint: Hint) -> bool:
        """Whether the cycle's view changed where the hint's verdicts read."""
        reads, rules, _ = hint
        if reads is Reads.NOTHING:
            return False
        if rules is None:
            return True
        return self.board.view.anyone_repels or self.memo.touched(self.memo.allowed(rules))

    def hand_on(self, before: Mapping[GroupKey, KeptVerdict]) -> dict[GroupKey, KeptVerdict]:
        """The verdicts kept: those of the gangs not visited, as they were, and those of
        the gangs visited and kept (recalled or decided again), from `memo`."""
        kept = dict(before) if self.usable else {}
        hint_of = dict(self.hint_of)
        for key in self.visited | self.visit:
            kept.pop(key, None)
            hint_of.pop(key, None)
        numbers = {hint: number for number, hint in enumerate(self.hints)}
        due, config, queue = self.due, self.config, self.queue
        for key, hint in self.memo.hints.items():
            number = numbers.get(hint)
            if number is None:
                number = numbers[hint] = len(self.hints)
                self.hints.append(hint)
            hint_of[key] = number
            verdict = kept[key] = self.memo.kept[key]
            if not self.usable or before.get(key) is not verdict or key in self.visit:
                heapq.heappush(due, (_due(verdict, queue, key, config), key))
        if len(due) > 2 * len(hint_of) + 64:  # mostly verdicts since decided again
            due = [(_due(kept[key], queue, key, config), key) for key in hint_of]
            heapq.heapify(due)
        self.hint_of, self.due = hint_of, due
        return kept

    def backlog(self, kept: Mapping[GroupKey, KeptVerdict], quiet: Set[GroupKey]) -> Backlog:
        """What to hand on, once the cycle knows its quiet groups."""
        telling = {
            key for key in self.telling | self.memo.kept.keys() if key in kept and key not in quiet
        }
        return Backlog(
            self.queue,
            self.seen,
            self.hint_of,
            tuple(self.hints),
            tuple(self.due),
            unkept=frozenset(self.visited - kept.keys()),
            telling=frozenset(telling),
        )


def _still_usable(before: Backlog, queue: Queue, seen: Seen, memo: Memo) -> bool:
    """Whether the backlog handed on may be read on this cycle's state: the same
    state's queue, brought up to date, and neither the world nor devices changed."""
    return (
        memo.keeps
        and queue.changed is not None
        and queue.lineage is before.queue.lineage
        and seen.world == before.seen.world
        and seen.devices == before.seen.devices
    )


def _due(kept: KeptVerdict, queue: Queue, key: GroupKey, config: EngineConfig) -> float:
    """When the verdict falls due: the safety flush, or the gang's starvation where
    its verdict reads capacity (`Memo._holds`)."""
    flush = kept.decided_at + config.verdict_flush_seconds
    if kept.reads is Reads.NOTHING:
        return flush
    return min(flush, queue.gangs[key].waiting_since + config.starvation_seconds)
