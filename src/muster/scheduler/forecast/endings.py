"""When each pod taking capacity is expected to end, for a forecast run forward in time.

A pod ends at its start plus its expected runtime (see `runtimes` for the order in
which runtimes are looked for; what was observed is the median of what the group's
finished pods took, else of what those of its CronJob's earlier Jobs took). A pod
whose start is not known (a planned pod not bound yet) counts from its gang's
admission, else from now; a pod past its expected end is taken to end now, not in
the past. A pod of unknown runtime never ends here:
it is listed, so that a gang waiting on it is told so instead of given a time.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from muster.api.keys import GroupKey, PodKey
from muster.scheduler.memory.runtimes import Basis, Runtime, observed
from muster.scheduler.state.intake import GroupRecord, PodRecord
from muster.scheduler.state.state import ClusterState


@dataclass(frozen=True, slots=True)
class Ending:
    """A pod that ended in the forecast: where, when, and on what runtime."""

    pod: PodKey
    owner: str  # its PodGroup (namespace/name), or the pod itself
    node: str
    end: float
    runtime: Runtime


class Endings:
    """The pods of a state still to end, soonest first."""

    def __init__(self, state: ClusterState, now: float) -> None:
        self.now = now
        self._observed = _Observed(state)
        self._heap: list[tuple[float, PodKey]] = []
        self._pending: dict[PodKey, Ending] = {}
        self._expected: dict[PodKey, Ending] = {}  # every end, passed ones included
        self.unknown: dict[PodKey, str] = {}  # pod -> owner, pods of unknown runtime
        for entry in state.pods.values():
            if entry.taken_on is None:
                continue
            group = _group_of(state, entry.record)
            start = entry.record.started
            if start is None and group is not None:
                start = group.admitted_at
            self.add(entry.record, group, entry.taken_on, start if start is not None else now)

    def runtime_of(self, pod: PodRecord, group: GroupRecord | None) -> Runtime | None:
        """Declared (on the pod, then its group), else a deadline, else observed."""
        group_runtime = group.runtime if group is not None else None
        declared = [rt for rt in (pod.runtime, group_runtime) if rt is not None]
        for basis in (Basis.DECLARED, Basis.DEADLINE):
            for runtime in declared:
                if runtime.basis is basis:
                    return runtime
        return None if group is None else self._observed.of(group)

    def add(self, pod: PodRecord, group: GroupRecord | None, node: str, start: float) -> None:
        owner = str(group.key) if group is not None else str(pod.key)
        runtime = self.runtime_of(pod, group)
        if runtime is None:
            self.unknown[pod.key] = owner
            return
        end = max(start + runtime.seconds, self.now)
        ending = Ending(pod.key, owner, node, end, runtime)
        self._pending[pod.key] = ending
        self._expected[pod.key] = ending
        heapq.heappush(self._heap, (end, pod.key))

    def forget(self, pod: PodKey) -> None:
        """The pod is gone before its end (preempted)."""
        self._pending.pop(pod, None)
        self._expected.pop(pod, None)
        self.unknown.pop(pod, None)

    def next_end(self) -> float | None:
        while self._heap and self._heap[0][1] not in self._pending:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def until(self, moment: float) -> list[Ending]:
        """Every pod ending by `moment`, taken off the list."""
        ended = []
        while self._heap and self._heap[0][0] <= moment:
            _, key = heapq.heappop(self._heap)
            ending = self._pending.pop(key, None)
            if ending is not None:
                ended.append(ending)
        return ended

    def last_of(self, pods: Iterable[PodKey]) -> Ending | None:
        """When the last of these pods ends (in the run, or already passed), on its
        runtime; None when any of them has no end (of unknown runtime, or gone)."""
        endings = [self._expected.get(pod) for pod in pods]
        known = [ending for ending in endings if ending is not None]
        if not known or len(known) < len(endings):
            return None
        return max(known, key=lambda ending: (ending.end, ending.pod))


def _group_of(state: ClusterState, pod: PodRecord) -> GroupRecord | None:
    if pod.group_name is None:
        return None
    return state.groups.get(GroupKey(pod.key.namespace, pod.group_name))


class _Observed:
    """What finished pods took: per group (a Job's earlier pods), and per CronJob over
    the groups of its Jobs (its earlier Jobs), the group's own first."""

    def __init__(self, state: ClusterState) -> None:
        by_group: defaultdict[GroupKey, list[float]] = defaultdict(list)
        by_cron_job: defaultdict[tuple[str, str], list[float]] = defaultdict(list)
        for entry in state.pods.values():
            record = entry.record
            if record.group_name is None or record.started is None or record.finished is None:
                continue
            key = GroupKey(record.key.namespace, record.group_name)
            by_group[key].append(record.finished - record.started)
            group = state.groups.get(key)
            if group is not None and group.cron_job is not None:
                by_cron_job[key.namespace, group.cron_job].append(record.finished - record.started)
        self.groups = {key: observed(values) for key, values in by_group.items()}
        self.cron_jobs = {key: observed(values) for key, values in by_cron_job.items()}

    def of(self, group: GroupRecord) -> Runtime | None:
        own = self.groups.get(group.key)
        if own is not None or group.cron_job is None:
            return own
        return self.cron_jobs.get((group.key.namespace, group.cron_job))
