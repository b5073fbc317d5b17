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
either: its capacity is already set aside for all of its pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.workload import JOB_NAME_LABEL


@dataclass(frozen=True, slots=True)
class PodView:
    """The few facts about a pod the benchmark measures."""

    job: str
    bound: bool
    running: bool
    unschedulable: bool
    gated: bool

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
            gated=bool(spec.get("schedulingGates")),
        )


@dataclass(slots=True)
class JobRecord:
    """One Job's history: creation, each pod's first bind and first Running."""

    size: int
    created_at: float | None = None
    group_seen_at: float | None = None
    admitted_at: float | None = None
    seen_at: dict[str, float] = field(default_factory=dict)
    bound_at: dict[str, float] = field(default_factory=dict)
    running_at: dict[str, float] = field(default_factory=dict)
    pods: dict[str, PodView] = field(default_factory=dict)
    admitted: bool = False
    partial_since: float | None = None
    partial_seconds: float = 0.0
    was_partial: bool = False

    @property
    def all_seen_at(self) -> float | None:
        """When the last of the Job's pods was first seen: all of them exist."""
        return max(self.seen_at.values()) if len(self.seen_at) >= self.size else None

    @property
    def all_bound_at(self) -> float | None:
        return max(self.bound_at.values()) if len(self.bound_at) >= self.size else None

    @property
    def all_running_at(self) -> float | None:
        return max(self.running_at.values()) if len(self.running_at) >= self.size else None

    def is_partial(self) -> bool:
        if not any(pod.bound for pod in self.pods.values()):
            return False
        return any(
            not pod.bound and (pod.unschedulable or (pod.gated and not self.admitted))
            for pod in self.pods.values()
        )


class Timeline:
    """Per-Job records for one run, plus the partially-started Jobs over time."""

    def __init__(self, sizes: Mapping[str, int]) -> None:
        self.jobs = {name: JobRecord(size) for name, size in sizes.items()}
        self.partial: set[str] = set()
        self.max_partial = 0
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
        record.seen_at.setdefault(name, at)
        if view.bound and name not in record.bound_at:
            record.bound_at[name] = at
            self.last_progress_at = at
        if view.running and name not in record.running_at:
            record.running_at[name] = at
            self.last_progress_at = at
        self._update_partial(view.job, at)

    def forget_pod(self, pod: Mapping[str, Any], at: float) -> None:
        """A deleted pod no longer refuses anything (its first bind stays recorded)."""
        view = PodView.of(pod)
        if view is None or view.job not in self.jobs:
            return
        self.jobs[view.job].pods.pop(pod["metadata"]["name"], None)
        self._update_partial(view.job, at)

    def observe_gang(self, job: str, admitted: bool, at: float) -> None:
        """The Job's gang (as its gang scheduler records it) seen at ``at``: admitted or not."""
        if job not in self.jobs:
            return
        record = self.jobs[job]
        record.admitted = admitted
        if record.group_seen_at is None:
            record.group_seen_at = at
        if admitted and record.admitted_at is None:
            record.admitted_at = at
        self._update_partial(job, at)

    def close(self, at: float) -> None:
        """End of the measurement: account for Jobs still partial."""
        for job in self.partial:
            record = self.jobs[job]
            if record.partial_since is not None:
                record.partial_seconds += at - record.partial_since
                record.partial_since = None

    @property
    def bound_pods(self) -> int:
        return sum(len(record.bound_at) for record in self.jobs.values())

    def _update_partial(self, job: str, at: float) -> None:
        record = self.jobs[job]
        if record.is_partial():
            if job not in self.partial:
                self.partial.add(job)
                record.partial_since = at
                record.was_partial = True
                self.max_partial = max(self.max_partial, len(self.partial))
        elif job in self.partial:
            self.partial.discard(job)
            if record.partial_since is not None:
                record.partial_seconds += at - record.partial_since
            record.partial_since = None
