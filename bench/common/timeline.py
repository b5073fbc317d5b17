"""What the benchmark saw happen to each Job's pods, and when.

Fed with pod objects (and, for Muster, gang admissions) in the order watch events
deliver them, each with the moment it was observed. It keeps, per Job, when each pod
was first seen bound and first seen Running, and counts partially-started Jobs as
they come and go.

A Job is *partially started* while at least one of its pods is bound to a node and at
least one sibling is refused: reported Unschedulable by kube-scheduler
(``PodScheduled=False``, reason ``Unschedulable``), or held by a scheduling gate
while its gang is not admitted. Siblings merely not scheduled yet do not count: every
pod spends a moment in kube-scheduler's queue, and that is not a half-started gang.
A gang whose admission is recorded and whose release is in flight does not count
either: its capacity is already set aside for all of its pods. (Pods held by Kueue's
topology gate count as in flight: Kueue gates them only once it has admitted the
Job and assigned every pod a node.)

With Kueue, a Job is *admitted but unschedulable* while Kueue's Workload for it is
Admitted and the Job's pods are refused a place: one of them is reported
Unschedulable by kube-scheduler, or Muster's PodGroup for it says
``PodGroupScheduled=False`` with reason ``Unschedulable`` (the gang does not fit the
nodes as they are). Pods not created yet, or waiting their turn in a scheduler's
queue, do not make a Job admitted but unschedulable: only a refusal does. A Job
*counts* when it stayed so for ``STUCK_GRACE_S`` in one stretch, or still was at the
end of the run; a shorter stretch is the ordinary churn of a burst (a pod tried once
before its sibling released capacity) rather than quota granted for room that is
not there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.e2e.workload import JOB_NAME_LABEL
from muster.api.constants import GANG_GATE

# How long a Job must stay admitted but unschedulable, in one stretch, to count.
STUCK_GRACE_S = 5.0


@dataclass(frozen=True, slots=True)
class PodView:
    """The few facts about a pod the benchmark measures."""

    job: str
    bound: bool
    running: bool
    unschedulable: bool
    gated: bool  # by Muster's gate; other gates release pods already placed

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodView | None:
        """The view of a Job's pod, or None for a pod that belongs to no Job."""
        job = pod.get("metadata", {}).get("labels", {}).get(JOB_NAME_LABEL)
        if not job:
            return None
        spec = pod.get("spec", {})
        status = pod.get("status", {})
        unschedulable = any(
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
            for condition in status.get("conditions", [])
        )
        return cls(
            job=job,
            bound=bool(spec.get("nodeName")),
            running=status.get("phase") == "Running",
            unschedulable=unschedulable,
            gated=any(gate.get("name") == GANG_GATE for gate in spec.get("schedulingGates", [])),
        )


@dataclass(slots=True)
class JobRecord:
    """One Job's history: creation, each pod's first bind and first Running, and since
    when the Job's pods have all existed, all been bound and all been Running."""

    size: int
    created_at: float | None = None
    group_seen_at: float | None = None
    admitted_at: float | None = None
    bound_at: dict[str, float] = field(default_factory=dict)
    running_at: dict[str, float] = field(default_factory=dict)
    all_seen_at: float | None = None
    all_bound_at: float | None = None
    all_running_at: float | None = None
    pods: dict[str, PodView] = field(default_factory=dict)
    admitted: bool = False
    gang_refused: bool = False
    queued_at: float | None = None
    queue_admitted: bool = False
    queue_admitted_at: float | None = None
    evicted: bool = False
    evictions: dict[str, int] = field(default_factory=dict)  # by the Evicted reason
    topology_assigned: bool = False

    @property
    def pods_bound_now(self) -> int:
        return sum(pod.bound for pod in self.pods.values())

    def note_progress(self, at: float) -> None:
        """Since when ``size`` of the Job's pods have existed, been bound, been Running,
        all at once. A Job whose pods are deleted (Kueue evicted it) starts again: its
        times are those of the pods that replace them, the run that lasted."""
        running = sum(pod.running for pod in self.pods.values())
        self.all_seen_at = _since(self.all_seen_at, len(self.pods) >= self.size, at)
        self.all_bound_at = _since(self.all_bound_at, self.pods_bound_now >= self.size, at)
        self.all_running_at = _since(self.all_running_at, running >= self.size, at)

    def is_partial(self) -> bool:
        if not any(pod.bound for pod in self.pods.values()):
            return False
        return any(
            not pod.bound and (pod.unschedulable or (pod.gated and not self.admitted))
            for pod in self.pods.values()
        )

    def is_admitted_unschedulable(self) -> bool:
        if not self.queue_admitted:
            return False
        return self.gang_refused or any(
            pod.unschedulable and not pod.bound for pod in self.pods.values()
        )


def _since(since: float | None, holds: bool, at: float) -> float | None:
    """When a state that holds began: kept while it holds, ``at`` when it begins."""
    if not holds:
        return None
    return at if since is None else since


@dataclass(slots=True)
class Episodes:
    """The Jobs in one state: which are in it now, since when, and for how long in all.

    A Job counts as ever in the state once one stretch lasted ``grace`` seconds, or
    when it is still in it at the end (``close``).
    """

    grace: float = 0.0
    since: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    ever: set[str] = field(default_factory=set)
    max_at_once: int = 0

    @property
    def now(self) -> set[str]:
        return set(self.since)

    def update(self, job: str, inside: bool, at: float) -> None:
        if inside and job not in self.since:
            self.since[job] = at
            self.max_at_once = max(self.max_at_once, len(self.since))
            if self.grace <= 0:
                self.ever.add(job)
        elif not inside and job in self.since:
            self._end_stretch(job, at)

    def close(self, at: float) -> None:
        """End of the measurement: the stretches still open end here, and count."""
        for job in list(self.since):
            self.ever.add(job)
            self._end_stretch(job, at)
            self.since[job] = at  # still in the state: `now` keeps it, nothing is added twice

    def total_seconds(self) -> float:
        return sum(self.seconds.values())

    def _end_stretch(self, job: str, at: float) -> None:
        stretch = at - self.since.pop(job)
        self.seconds[job] = self.seconds.get(job, 0.0) + stretch
        if stretch >= self.grace:
            self.ever.add(job)


class Timeline:
    """Per-Job records for one run, plus the partially-started (and, with Kueue, the
    admitted but unschedulable) Jobs over time."""

    def __init__(self, sizes: Mapping[str, int]) -> None:
        self.jobs = {name: JobRecord(size) for name, size in sizes.items()}
        self.partial = Episodes()
        self.admitted_unschedulable = Episodes(grace=STUCK_GRACE_S)
        self.last_progress_at: float | None = None

    def job_created(self, job: str, at: float) -> None:
        self.jobs[job].created_at = at

    def observe_pod(self, pod: Mapping[str, Any], at: float) -> None:
        """Record a pod as a watch event showed it at ``at``."""
        view = PodView.of(pod)
        if view is None or view.job not in self.jobs:
            return
        record = self.jobs[view.job]
        name = pod["metadata"]["name"]
        record.pods[name] = view
        if view.bound and name not in record.bound_at:
            record.bound_at[name] = at
            self.last_progress_at = at
        if view.running and name not in record.running_at:
            record.running_at[name] = at
            self.last_progress_at = at
        record.note_progress(at)
        self._update(view.job, at)

    def forget_pod(self, pod: Mapping[str, Any], at: float) -> None:
        """A deleted pod no longer refuses anything (its first bind stays recorded)."""
        view = PodView.of(pod)
        if view is None or view.job not in self.jobs:
            return
        record = self.jobs[view.job]
        record.pods.pop(pod["metadata"]["name"], None)
        record.note_progress(at)
        self._update(view.job, at)

    def observe_gang(self, job: str, admitted: bool, at: float, *, refused: bool = False) -> None:
        """The Job's gang (as its gang scheduler records it) seen at ``at``: admitted or
        not, and whether the scheduler refused it for now (it does not fit)."""
        if job not in self.jobs:
            return
        record = self.jobs[job]
        record.admitted = admitted
        record.gang_refused = refused and not admitted
        if record.group_seen_at is None:
            record.group_seen_at = at
        if admitted and record.admitted_at is None:
            record.admitted_at = at
        self._update(job, at)

    def observe_queue(
        self,
        job: str,
        *,
        admitted: bool,
        evicted: bool,
        topology_assigned: bool,
        at: float,
        evicted_reason: str | None = None,
    ) -> None:
        """Kueue's Workload for the Job seen at ``at``: admitted or not, evicted (and
        why) or not, with nodes chosen by Kueue's topology-aware scheduling or not."""
        if job not in self.jobs:
            return
        record = self.jobs[job]
        record.topology_assigned = record.topology_assigned or topology_assigned
        if record.queued_at is None:
            record.queued_at = at
        if admitted and record.queue_admitted_at is None:
            record.queue_admitted_at = at
        if evicted and not record.evicted:
            reason = evicted_reason or "unknown"
            record.evictions[reason] = record.evictions.get(reason, 0) + 1
        record.queue_admitted, record.evicted = admitted, evicted
        self._update(job, at)

    def close(self, at: float) -> None:
        """End of the measurement: account for Jobs still partial (or stuck)."""
        self.partial.close(at)
        self.admitted_unschedulable.close(at)

    @property
    def bound_pods(self) -> int:
        return sum(len(record.bound_at) for record in self.jobs.values())

    def _update(self, job: str, at: float) -> None:
        record = self.jobs[job]
        self.partial.update(job, record.is_partial(), at)
        self.admitted_unschedulable.update(job, record.is_admitted_unschedulable(), at)
