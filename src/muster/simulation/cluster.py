"""A cluster that exists only in memory: the engine's state and the objects behind it.

The engine's plan is carried out the way the operator and the cluster carry it out,
step by step and action by action, so the next cycle starts from what a real cluster
would show: a status write records the very status the operator would write, an
eviction removes the pod at once (a Job makes it again, gated), and a release binds
the pod to its planned node, as kube-scheduler would.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from muster.api.constants import CONDITION_SCHEDULED, REASON_PREEMPTED
from muster.api.gates import pod_group_name
from muster.api.keys import GroupKey, PodKey
from muster.api.wire import controller_name
from muster.scheduler import ClusterState, condition, group_records, member_records, needs_write
from muster.scheduler.decisions import Evict, Plan, Release, StepKind, WriteStatus
from muster.simulation.documents import InvalidInputError, Problem
from muster.simulation.inventory import Entry, Manifest
from muster.simulation.pods import bound, gated, is_pending, remade_by_job
from muster.simulation.report import PreemptedPod


class SimulatedCluster:
    """Nodes, pods, PodGroups and PriorityClasses, and what a run did to them."""

    def __init__(self) -> None:
        self.state = ClusterState()
        self.pods: dict[PodKey, Manifest] = {}
        self.pod_groups: dict[GroupKey, Manifest] = {}
        self.placements: dict[GroupKey, dict[str, str]] = {}
        self.preempted: dict[GroupKey, GroupKey] = {}  # gang taken down -> preemptor
        self.victims: list[PreemptedPod] = []

    def load(
        self,
        *,
        objects: Iterable[Entry],
        pod_groups: Iterable[Entry],
        pods: Iterable[Entry],
    ) -> None:
        """Hand every object to the engine; raise `InvalidInputError` for those it rejects.

        `objects` (all but PodGroups and pods: PriorityClasses, nodes, namespaces,
        volumes and claims, budgets, topologies, devices) go in in the order given,
        each as its kind. PodGroups go in after them and before pods, so that the pods
        of an admitted gang's plan hold their planned nodes from the start.
        """
        problems: list[Problem] = []
        for entry in objects:
            self._check(entry, self.state.apply(entry.body["kind"], entry.body).rejected, problems)
        for entry in pod_groups:
            self.pod_groups[GroupKey(entry.namespace, entry.name)] = entry.body
            self._check(entry, self.state.apply("PodGroup", entry.body).rejected, problems)
        for entry in pods:
            pod = self._as_created(entry.body)
            self.pods[PodKey(entry.namespace, entry.name)] = pod
            self._check(entry, self.state.apply("Pod", pod).rejected, problems)
        if problems:
            raise InvalidInputError(problems)
        self.state.devices.judge_in_place()  # the claims' selectors, as the operator would

    def execute(self, plan: Plan) -> bool:
        """Carry out a cycle's plan; whether it changed anything."""
        changed = False
        for step in plan.steps:
            for action in step.actions:
                if isinstance(action, WriteStatus):
                    changed |= self._write(action.group, plan.statuses[action.group], step.group)
                elif isinstance(action, Evict):
                    for pod in action.pods:
                        self._evict(pod, preempted=step.kind is StepKind.PREEMPT)
                    changed = changed or bool(action.pods)
                elif isinstance(action, Release):
                    self._bind(action.group, dict(action.placements))
                    changed = changed or bool(action.placements)
                # A RecordEvent changes nothing the engine reads: its words are the status's.
        return changed

    def _write(self, key: GroupKey, desired: Mapping[str, Any], acting: GroupKey) -> bool:
        pod_group = self.pod_groups.get(key)
        if pod_group is None or not needs_write(pod_group.get("status") or {}, desired):
            return False
        was_admitted = group_records(self.state)[key].admitted
        self._set_pod_group(key, {**pod_group, "status": copy.deepcopy(dict(desired))})
        scheduled = condition(desired, CONDITION_SCHEDULED) or {}
        if was_admitted and scheduled.get("reason") == REASON_PREEMPTED:
            self.preempted[key] = acting
        return True

    def _bind(self, group: GroupKey, placements: dict[str, str]) -> None:
        for pod_name, node_name in sorted(placements.items()):
            key = PodKey(group.namespace, pod_name)
            if key in self.pods:
                self._set_pod(key, bound(self.pods[key], node_name))
        self.placements.setdefault(group, {}).update(placements)

    def _evict(self, key: PodKey, *, preempted: bool) -> None:
        """Delete the pod; its Job makes it again (gated)."""
        pod = self.pods.pop(key, None)
        if pod is None:
            return
        self.state.delete("Pod", key.namespace, key.name)
        group = pod_group_name(pod)
        group_key = None if group is None else GroupKey(key.namespace, group)
        if group_key is not None:
            self._placements_lost(group_key, key.name)
        if preempted:
            known = group_key if group_key in self.pod_groups else None
            self.victims.append(PreemptedPod(key, known))
        if controller_name(pod, "Job") is not None:
            self._set_pod(key, self._as_created(remade_by_job(pod)))

    def _as_created(self, pod: Manifest) -> Manifest:
        """The pod as the admission webhook lets it in: a pending member of a gang is
        gated, unless its admitted gang's plan already released it."""
        group_name = pod_group_name(pod)
        if group_name is None or not is_pending(pod):
            return pod
        record = group_records(self.state).get(GroupKey(pod["metadata"]["namespace"], group_name))
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
        self._accepted(self.state.apply("Pod", pod).rejected, f"Pod {key}")

    def _set_pod_group(self, key: GroupKey, pod_group: Manifest) -> None:
        self.pod_groups[key] = pod_group
        self._accepted(self.state.apply("PodGroup", pod_group).rejected, f"PodGroup {key}")

    def members(self, group: GroupKey) -> list[Manifest]:
        return [self.pods[record.key] for record in member_records(self.state, group)]

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
