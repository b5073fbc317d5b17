"""The gangs of one cycle, classified and in queue order.

A member pod is *placed* when it takes capacity (bound, or reserved by its admitted
gang's plan), *pending* when it still carries the gang gate and takes nothing. Pods of
neither kind (ungated and not bound, or finished) do not count towards `minCount`: the
engine cannot place them and they take no place.
"""

from __future__ import annotations

from dataclasses import dataclass

from muster.api.keys import GroupKey, PodKey
from muster.scheduler.state.intake import GroupRecord
from muster.scheduler.state.state import ClusterState
from muster.scheduler.state.store import PodEntry


@dataclass(frozen=True, slots=True)
class Gang:
    record: GroupRecord
    priority: int
    queued_since: float  # creation time; `now` for a PodGroup without one
    waiting_since: float  # when it last started waiting (see `GroupRecord.waiting_since`)
    placed: int  # members taking capacity (bound or reserved)
    pending: tuple[PodEntry, ...]  # sorted by pod name

    @property
    def key(self) -> GroupKey:
        return self.record.key

    @property
    def existing(self) -> int:
        return self.placed + len(self.pending)

    @property
    def missing(self) -> int:
        """Members still needed, beyond those already taking capacity."""
        return max(self.record.min_count - self.placed, 0)

    def queue_key(self) -> tuple[int, float, str, str]:
        return (-self.priority, self.queued_since, self.key.namespace, self.key.name)


def gangs_of(state: ClusterState, now: float) -> list[Gang]:
    """Gangs with something to decide, in queue order: every gang not admitted yet, and
    admitted gangs with pending members (the others need nothing this cycle)."""
    gangs = []
    floors = state.member_priority_floors()
    for key in state.unadmitted_gangs | state.pending_members.keys():
        record = state.groups.get(key)
        if record is None or not record.gang:
            continue
        pending = sorted(state.pending_members.get(key, ()))
        gangs.append(
            Gang(
                record=record,
                priority=state.gang_priority(record, floors),
                queued_since=record.created if record.created is not None else now,
                waiting_since=record.waiting_since if record.waiting_since is not None else now,
                placed=state.placed_members.get(key, 0),
                pending=tuple(state.pods[PodKey(key.namespace, name)] for name in pending),
            )
        )
    gangs.sort(key=Gang.queue_key)
    return gangs
