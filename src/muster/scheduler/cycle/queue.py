"""The gangs of one cycle, classified and in queue order.

A member pod is *placed* when it takes capacity (bound, or reserved by its admitted
gang's plan), *pending* when it still carries the gang gate and takes nothing. Pods of
neither kind (ungated and not bound, or finished) do not count towards `minCount`: the
engine cannot place them and they take no place.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from muster.api.keys import GroupKey, PodKey
from muster.scheduler.state.intake import GroupRecord
from muster.scheduler.state.state import ClusterState
from muster.scheduler.state.store import PodEntry

Floors = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Gang:
    record: GroupRecord
    priority: int
    queued_since: float  # creation time; `now` for a PodGroup without one
    waiting_since: float  # when it last started waiting (see `GroupRecord.waiting_since`)
    placed: int  # members taking capacity (bound or reserved)
    pending: tuple[PodEntry, ...]  # sorted by pod name
    quorum: int  # the members it needs together (`ClusterState.quorum`)

    @property
    def key(self) -> GroupKey:
        return self.record.key

    @property
    def existing(self) -> int:
        return self.placed + len(self.pending)

    @property
    def missing(self) -> int:
        """Members still needed, beyond those already taking capacity."""
        return max(self.quorum - self.placed, 0)

    def queue_key(self) -> tuple[int, float, str, str]:
        return (-self.priority, self.queued_since, self.key.namespace, self.key.name)


def gangs_of(state: ClusterState, now: float) -> list[Gang]:
    """Gangs with something to decide, in queue order: every gang not admitted yet, and
    admitted gangs with pending members (the others need nothing this cycle)."""
    gangs = _built(state, state.unadmitted_gangs | state.pending_members.keys(), now)
    gangs.sort(key=Gang.queue_key)
    return gangs


def _built(state: ClusterState, keys: Iterable[GroupKey], now: float) -> list[Gang]:
    """The gangs of `keys` that have something to decide, as the state has them now."""
    floors = state.member_priority_floors()
    return [gang for key in keys if (gang := _gang(state, key, floors, now)) is not None]


def _gang(state: ClusterState, key: GroupKey, floors: Floors, now: float) -> Gang | None:
    """The gang of `key` as the state has it now, None if it has no gang to decide."""
    record = state.groups.get(key)
    if record is None or not record.gang:
        return None
    if key not in state.unadmitted_gangs and key not in state.pending_members:
        return None
    pending = sorted(state.pending_members.get(key, ()))
    return Gang(
        record=record,
        priority=state.gang_priority(record, floors),
        queued_since=record.created if record.created is not None else now,
        waiting_since=record.waiting_since if record.waiting_since is not None else now,
        placed=state.placed_members.get(key, 0),
        pending=tuple(state.pods[PodKey(key.namespace, name)] for name in pending),
        quorum=state.quorum(record),
    )


QueueKey = tuple[int, float, str, str]


class Queue:
    """The gangs of `gangs_of` (`waiting`: those not admitted; `growing`: admitted
    gangs with members to place; each in queue order), kept from one cycle to the next
    instead of built and sorted again: only the gangs that changed since (their
    PodGroup, their pods, and so their priority: the state's per-group counts,
    `ClusterState.changed`, and the PodGroups deleted) are built again and put back in
    their place, so a waiting gang that did not change costs nothing here (a gang joins
    or leaves the queue only by such a change). Anything that may change every gang's
    priority (a PriorityClass: the state's world mark) builds it all again, as does a
    state it was not built on.

    It is never changed once built: `next` makes the next cycle's, so a cycle decided
    twice (`packing`) or a forecast on a copy of the state may start from the same one.
    """

    def __init__(self, state: ClusterState, now: float) -> None:
        self.lineage = state.lineage
        self.as_of = state.changes
        self.world = state.marks.world
        self.removed = state.groups_removed
        self.gangs = {gang.key: gang for gang in gangs_of(state, now)}
        self.waiting = [_entry(g) for g in self.gangs.values() if not g.record.admitted]
        self.waiting.sort()
        self.growing = sorted(
            (gang for gang in self.gangs.values() if gang.record.admitted), key=Gang.queue_key
        )
        self.undated = {key for key, gang in self.gangs.items() if _undated(gang)}
        self.changed: frozenset[GroupKey] | None = None  # None: everything, as first built

    def next(self, state: ClusterState, now: float) -> Queue:
        """This queue brought up to date with the state (see the class)."""
        if (
            self.lineage is not state.lineage
            or self.world != state.marks.world
            or state.changes < self.as_of
        ):
            return Queue(state, now)
        changed = set(self.undated)
        for key, count in reversed(state.changed.items()):
            if count <= self.as_of:
                break
            changed.add(key)
        if state.groups_removed != self.removed:  # a PodGroup deleted leaves no count
            changed |= self.gangs.keys() - state.groups.keys()
        queue = Queue.__new__(Queue)
        queue.lineage, queue.as_of, queue.world = self.lineage, state.changes, self.world
        queue.removed = state.groups_removed
        queue.gangs, queue.undated = dict(self.gangs), set(self.undated)
        queue.changed = frozenset(changed)
        before = [self.gangs[key] for key in changed if key in self.gangs]
        after = _built(state, changed, now) if changed else []
        queue.waiting = _replaced(self.waiting, before, after)
        for gang in before:
            del queue.gangs[gang.key]
            queue.undated.discard(gang.key)
        for gang in after:
            queue.gangs[gang.key] = gang
            if _undated(gang):
                queue.undated.add(gang.key)
        growing = [gang for gang in self.growing if gang.key not in changed]
        growing += [gang for gang in after if gang.record.admitted]
        queue.growing = sorted(growing, key=Gang.queue_key)
        return queue

    def order(self, first: tuple[GroupKey, ...]) -> Iterator[GroupKey]:
        """The waiting gangs in the order a cycle comes to them: `first`, then the rest."""
        yield from first
        chosen = set(first)
        yield from (key for _, key in self.waiting if key not in chosen)

    def position(self, key: GroupKey) -> int:
        """A waiting gang's place among the gangs not admitted yet (1: the first)."""
        return bisect.bisect_left(self.waiting, _entry(self.gangs[key])) + 1


def _entry(gang: Gang) -> tuple[QueueKey, GroupKey]:
    return (gang.queue_key(), gang.key)


def _undated(gang: Gang) -> bool:
    """Whether the gang queues or waits as of `now` (it is built again every cycle)."""
    return gang.record.created is None or gang.record.waiting_since is None


def _replaced(
    waiting: list[tuple[QueueKey, GroupKey]], before: list[Gang], after: list[Gang]
) -> list[tuple[QueueKey, GroupKey]]:
    """The waiting gangs in order, with `before` taken out and `after` put in: each
    moved in place while few move, sorted again when many do."""
    gone = [_entry(gang) for gang in before if not gang.record.admitted]
    come = [_entry(gang) for gang in after if not gang.record.admitted]
    if len(gone) + len(come) > _MOVED_IN_PLACE:
        leaving = {entry[1] for entry in gone}
        kept = [entry for entry in waiting if entry[1] not in leaving]
        return sorted([*kept, *come])
    moved = list(waiting)
    for entry in gone:
        del moved[bisect.bisect_left(moved, entry)]
    for entry in come:
        bisect.insort(moved, entry)
    return moved


_MOVED_IN_PLACE = 64  # beyond this many, one sort is cheaper than moving each
