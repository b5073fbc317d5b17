"""A cluster that exists only in memory: the engine's state and the objects behind it.

Each decision of the engine is carried out the way the operator and the cluster carry
it out, so the next cycle starts from what a real cluster would show: victims go
first (a Job makes its preempted pods again, gated; a gang taken down whole goes back
to the queue as `Preempted`), then the admitted gang's PodGroup records its plan and
its pods are bound to their planned nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from muster.scheduler.results import Admission, GroupKey, Growth, PodKey, Victim
from muster.scheduler.state import ClusterState
from muster.simulation import status
from muster.simulation.documents import InvalidInputError, Problem
from muster.simulation.inventory import Entry, Manifest
from muster.simulation.pods import (
    bound,
    controlling_job,
    gated,
    group_of,
    is_pending,
    remade_by_job,
)
from muster.simulation.report import PreemptedPod


class SimulatedCluster:
    """Nodes, pods, PodGroups and PriorityClasses, and what a run did to them."""

    def __init__(self) -> None:
        self.state = ClusterState()
        self.pods: dict[PodKey, Manifest] = {}
        self.pod_groups: dict[GroupKey, Manifest] = {}
        self.placements: dict[GroupKey, dict[str, str]] = {}
        self.preempted: set[GroupKey] = set()
        self.victims: list[PreemptedPod] = []

    def load(
        self,
        *,
        priority_classes: Iterable[Entry],
        nodes: Iterable[Entry],
        namespaces: Iterable[Entry],
        volumes: Iterable[Entry],
        claims: Iterable[Entry],
        pod_groups: Iterable[Entry],
        pods: Iterable[Entry],
    ) -> None:
        """Hand every object to the engine; raise `InvalidInputError` for those it rejects.

        PodGroups go in before pods, so that the pods of an admitted gang's plan hold
        their planned nodes from the start.
        """
        problems: list[Problem] = []
        for entry in priority_classes:
            self._check(entry, self.state.apply_priority_class(entry.body), problems)
        for entry in nodes:
            self._check(entry, self.state.apply_node(entry.body), problems)
        for entry in namespaces:
            self._check(entry, self.state.apply_namespace(entry.body), problems)
        for entry in volumes:
            self._check(entry, self.state.apply_volume(entry.body), problems)
        for entry in claims:
            self._check(entry, self.state.apply_claim(entry.body), problems)
        for entry in pod_groups:
            self.pod_groups[GroupKey(entry.namespace, entry.name)] = entry.body
            self._check(entry, self.state.apply_pod_group(entry.body), problems)
        for entry in pods:
            pod = self._as_created(entry.body)
            self.pods[PodKey(entry.namespace, entry.name)] = pod
            self._check(entry, self.state.apply_pod(pod), problems)
        if problems:
            raise InvalidInputError(problems)

    def admit(self, admission: Admission, now: datetime) -> None:
        """Carry out an admission: preempt its victims, record its plan, bind its pods."""
        for victim in admission.victims:
            self._preempt(victim, admission.group, now)
        self._set_pod_group(
            admission.group,
            status.admitted(self.pod_groups[admission.group], admission.placements, now),
        )
        self._bind(admission.group, admission.placements)

    def grow(self, growth: Growth) -> None:
        """Place more pods of an admitted gang: add them to its plan and bind them."""
        self._set_pod_group(
            growth.group, status.planned(self.pod_groups[growth.group], growth.placements)
        )
        self._bind(growth.group, growth.placements)

    def _bind(self, group: GroupKey, placements: dict[str, str]) -> None:
        for pod_name, node_name in sorted(placements.items()):
            key = PodKey(group.namespace, pod_name)
            self._set_pod(key, bound(self.pods[key], node_name))
        self.placements.setdefault(group, {}).update(placements)

    def _preempt(self, victim: Victim, preemptor: GroupKey, now: datetime) -> None:
        """Delete the victim; its Job makes it again; its gang falls with it unless the
        gang allows its pods to be disrupted one at a time."""
        pod = self.pods.pop(victim.pod)
        self.state.delete_pod(victim.pod.namespace, victim.pod.name)
        self.victims.append(PreemptedPod(victim.pod, victim.group))
        if victim.group is not None:
            self._placements_lost(victim.group, victim.pod.name)
            self._requeue_or_unplan(victim.group, victim.pod.name, preemptor, now)
        if controlling_job(pod) is not None:
            self._set_pod(victim.pod, self._as_created(remade_by_job(pod)))

    def _requeue_or_unplan(
        self, group: GroupKey, pod_name: str, preemptor: GroupKey, now: datetime
    ) -> None:
        pod_group = self.pod_groups.get(group)
        record = self.state.groups.get(group)
        if pod_group is None or record is None:
            return
        if record.disrupt_single or not record.admitted:
            self._set_pod_group(group, status.unplanned(pod_group, pod_name))
            return
        self.preempted.add(group)
        message = f"preempted to make room for {preemptor}"
        self._set_pod_group(group, status.preempted(pod_group, message, now))

    def _as_created(self, pod: Manifest) -> Manifest:
        """The pod as the admission webhook lets it in: a pending member of a gang is
        gated, unless its admitted gang's plan already released it."""
        group_name = group_of(pod)
        if group_name is None or not is_pending(pod):
            return pod
        record = self.state.groups.get(GroupKey(pod["metadata"]["namespace"], group_name))
        if record is None or not record.gang:
            return pod
        if record.admitted and pod["metadata"]["name"] in record.plan:
            return pod
        return gated(pod)

    def _placements_lost(self, group: GroupKey, pod_name: str) -> None:
        """A pod this run placed and then preempted is no longer placed by the run."""
        placed = self.placements.get(group)
        if placed is not None:
            placed.pop(pod_name, None)

    def _set_pod(self, key: PodKey, pod: Manifest) -> None:
        self.pods[key] = pod
        self._accepted(self.state.apply_pod(pod), f"Pod {key}")

    def _set_pod_group(self, key: GroupKey, pod_group: Manifest) -> None:
        self.pod_groups[key] = pod_group
        self._accepted(self.state.apply_pod_group(pod_group), f"PodGroup {key}")

    def members(self, group: GroupKey) -> list[Manifest]:
        """The pods labelled as members of `group`."""
        names = sorted(self.state.members.get(group, ()))
        return [self.pods[PodKey(group.namespace, name)] for name in names]

    @staticmethod
    def _check(entry: Entry, rejection: str | None, problems: list[Problem]) -> None:
        if rejection is not None:
            kind = entry.body["kind"]
            problems.append(Problem(entry.origin, f"{kind} {entry.name}: {rejection}"))

    @staticmethod
    def _accepted(rejection: str | None, what: str) -> None:
        """Objects the simulation derives from accepted ones are accepted too; if the
        engine disagrees, that is a defect worth stopping for, not an input problem."""
        if rejection is not None:
            raise AssertionError(f"the engine rejected {what} made by the simulation: {rejection}")
