"""A pure stand-in for the API server, the operator and kube-scheduler, for lifecycle tests.

The objects are plain mappings, as the API server holds them. The operator part keeps
a `ClusterState` fed by every change (its informers), runs `schedule` and carries out
the plan step by step, action by action, as `muster.operator.execution.loop` does: a status
write that meets a newer version fails and stops its step; a crash may stop it
anywhere between actions. A restart throws the state away and rebuilds it from the
objects alone. Evictions make pods terminating; they leave later (`finish_leaving`),
and their Job makes new gated members in their place. kube-scheduler (`bind`) binds a
released pod to the node it is pinned to when it fits beside the pods bound there,
and refuses it otherwise, as its PodScheduled condition says. The API server may be
told to refuse a release (`refuse_release`: an admission policy, or its own trouble),
whose answer the operator observes as `muster.operator.execution.loop` does.

Every action is checked against what the API already says before it happens (the
write-ahead rule): a pod is released only to the node its gang's recorded plan names,
and a pod is evicted only once no admitted gang's recorded plan still counts on it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from muster.api.constants import CONDITION_SCHEDULED, POD_GROUP_LABEL
from muster.api.gates import has_gang_gate, without_gang_gate
from muster.api.keys import GroupKey, PodKey
from muster.api.times import rfc3339
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.decisions.plan import Evict, Plan, Release, WriteStatus
from muster.scheduler.decisions.results import NOTHING_CARRIED, Carried, CycleResult
from muster.scheduler.lifecycle.status import needs_write
from muster.scheduler.memory.gang_memory import gang_memory_from
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.objects.conditions import condition
from tests.unit.scheduler.builders import Obj, node, pod, pod_group

HOSTNAME = "kubernetes.io/hostname"
NAMESPACE = "default"
UNSCHEDULABLE = "Unschedulable"


class WriteAheadError(AssertionError):
    """An action ran before the decision it carries out was written down."""


def admitted(status: dict[str, Any]) -> bool:
    scheduled = condition(status, CONDITION_SCHEDULED)
    return scheduled is not None and scheduled.get("status") == "True"


def cpu_of(obj: Obj) -> int:
    requests = obj["spec"]["containers"][0]["resources"]["requests"]
    return int(requests.get("cpu", "0"))


@dataclass
class FakeApi:
    """The objects, the operator's state over them, and a clock."""

    now: float
    config: EngineConfig
    nodes: dict[str, Obj] = field(default_factory=dict)
    pods: dict[PodKey, Obj] = field(default_factory=dict)
    groups: dict[GroupKey, Obj] = field(default_factory=dict)
    state: ClusterState = field(default_factory=ClusterState)
    carried: Carried = NOTHING_CARRIED  # what the last cycle handed on
    serial: int = 0
    # What the API said before each admission, for the properties to compare against.
    admissions: list[tuple[GroupKey, dict[str, Any]]] = field(default_factory=list)
    # The victims each preemptor's recorded decision awaits, and their gangs, once written.
    awaited: dict[GroupKey, tuple[tuple[PodKey, ...], frozenset[GroupKey]]] = field(
        default_factory=dict
    )
    released: list[GroupKey] = field(default_factory=list)
    # Pods whose release the API server refuses: (status, message).
    refuse_release: dict[PodKey, tuple[int, str]] = field(default_factory=dict)

    # ---- objects -------------------------------------------------------------------

    def _next(self) -> int:
        self.serial += 1
        return self.serial

    def put_node(self, obj: Obj) -> None:
        self.nodes[obj["metadata"]["name"]] = obj
        assert self.state.apply("Node", obj).rejected is None

    def remove_node(self, name: str) -> None:
        """The node and the pods bound to it go (pod garbage collection)."""
        del self.nodes[name]
        self.state.delete("Node", "", name)
        for key, obj in list(self.pods.items()):
            if obj["spec"].get("nodeName") == name:
                self.remove_pod(key)

    def put_pod(self, obj: Obj) -> None:
        key = PodKey(obj["metadata"]["namespace"], obj["metadata"]["name"])
        self.pods[key] = obj
        assert self.state.apply("Pod", obj).rejected is None

    def remove_pod(self, key: PodKey) -> None:
        """Gone from the API; its Job makes a new gated member in its place."""
        obj = self.pods.pop(key)
        self.state.delete("Pod", key.namespace, key.name)
        group = obj["metadata"]["labels"].get(POD_GROUP_LABEL)
        if group is not None and obj.get("status", {}).get("phase") not in ("Succeeded",):
            self.add_member(group, cpu_of(obj))

    def put_group(self, obj: Obj) -> None:
        obj["metadata"]["resourceVersion"] = str(self._next())
        key = GroupKey(obj["metadata"]["namespace"], obj["metadata"]["name"])
        self.groups[key] = obj
        assert self.state.apply("PodGroup", obj).rejected is None

    def add_node(self, cpu: int) -> str:
        name = f"n{self._next()}"
        self.put_node(node(name, cpu=str(cpu), labels={HOSTNAME: name}))
        return name

    def add_member(self, group: str, cpu: int) -> None:
        spec = self.groups.get(GroupKey(NAMESPACE, group), {}).get("spec", {})
        name = f"{group}-{self._next()}"
        self.put_pod(pod(name, group=group, cpu=str(cpu), priority=spec.get("priority")))

    def add_gang(
        self, name: str, *, size: int, min_count: int, cpu: int, priority: int = 0
    ) -> GroupKey:
        group = pod_group(name, min_count=min_count, priority=priority, created=rfc3339(self.now))
        self.put_group(group)
        for _ in range(size):
            self.add_member(name, cpu)
        return GroupKey(NAMESPACE, name)

    def set_min_count(self, key: GroupKey, min_count: int) -> None:
        obj = copy.deepcopy(self.groups[key])
        obj["spec"]["schedulingPolicy"] = {"gang": {"minCount": min_count}}
        obj["metadata"]["generation"] = obj["metadata"].get("generation", 1) + 1
        self.put_group(obj)

    def members(self, key: GroupKey) -> Iterator[Obj]:
        for obj in self.pods.values():
            if obj["metadata"]["labels"].get(POD_GROUP_LABEL) == key.name:
                yield obj

    def restart(self) -> None:
        """A new operator: nothing but the API objects."""
        self.state = ClusterState()
        self.carried = NOTHING_CARRIED
        for node_obj in self.nodes.values():
            assert self.state.apply("Node", node_obj).rejected is None
        for group in self.groups.values():
            assert self.state.apply("PodGroup", group).rejected is None
        for pod_obj in self.pods.values():
            assert self.state.apply("Pod", pod_obj).rejected is None

    # ---- the cluster's own behaviour ---------------------------------------------

    def bind(self, key: PodKey, *, refuse: bool = False) -> None:
        """kube-scheduler's turn for a released pod: bound where it is pinned, when it
        fits beside the pods bound there; refused otherwise (or when told to)."""
        obj = copy.deepcopy(self.pods[key])
        target = obj["spec"].get("nodeSelector", {}).get(HOSTNAME)
        node_obj = self.nodes.get(target or "")
        fits = node_obj is not None and not node_obj["spec"].get("unschedulable")
        if fits and node_obj is not None:
            used = sum(
                cpu_of(other)
                for other in self.pods.values()
                if other["spec"].get("nodeName") == target
                and other.get("status", {}).get("phase") != "Succeeded"
            )
            fits = used + cpu_of(obj) <= int(node_obj["status"]["allocatable"]["cpu"])
        if fits and not refuse:
            obj["spec"]["nodeName"] = target
            scheduled = {"type": "PodScheduled", "status": "True"}
            obj["status"] = {
                "phase": "Running",
                "conditions": [{**scheduled, "lastTransitionTime": rfc3339(self.now)}],
            }
        else:
            obj["status"] = {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": UNSCHEDULABLE,
                        "message": f"0/{len(self.nodes)} nodes are available: {target} refused",
                    }
                ],
            }
        self.put_pod(obj)

    def unbound_released(self) -> list[PodKey]:
        """Released pods kube-scheduler has not decided about yet."""
        return sorted(
            key
            for key, obj in self.pods.items()
            if not has_gang_gate(obj["spec"].get("schedulingGates") or [])
            and not obj["spec"].get("nodeName")
            and "deletionTimestamp" not in obj["metadata"]
            and not obj.get("status", {}).get("conditions")
        )

    def finish(self, key: PodKey) -> None:
        obj = copy.deepcopy(self.pods[key])
        obj["status"] = {"phase": "Succeeded"}
        self.put_pod(obj)

    def finish_leaving(self) -> None:
        for key, obj in list(self.pods.items()):
            if "deletionTimestamp" in obj["metadata"]:
                self.remove_pod(key)

    # ---- the operator --------------------------------------------------------------

    def cycle(self, *, crash_after: int | None = None) -> CycleResult:
        """One scheduling cycle, its plan carried out; `crash_after` actions, then the
        operator dies (and is restarted)."""
        quiet = self.carried.still_quiet(self.state.changed)
        everything = schedule(self.state, now=self.now, config=self.config)
        result = schedule(self.state, now=self.now, config=self.config, carried=self.carried)
        assert_same_but_quiet(result, everything, quiet)
        self.carried = result.carried
        done = self.execute(result.plan, limit=crash_after)
        if crash_after is not None and done >= crash_after:
            self.restart()
        return result

    def execute(self, plan: Plan, *, limit: int | None = None) -> int:
        """Exclusive steps first, then the rest, each stopping at a failed action; the
        number of actions carried out."""
        done = 0
        steps = [s for s in plan.steps if s.exclusive] + [s for s in plan.steps if not s.exclusive]
        written: set[GroupKey] = set()
        for step in steps:
            for action in step.actions:
                if limit is not None and done >= limit:
                    return done
                done += 1
                if isinstance(action, WriteStatus):
                    if action.group in written:
                        continue
                    if not self._write(action.group, plan):
                        break
                    written.add(action.group)
                elif isinstance(action, Evict):
                    self._evict(action)
                elif isinstance(action, Release):
                    self._release(action)
        return done

    def _write(self, key: GroupKey, plan: Plan) -> bool:
        obj = self.groups.get(key)
        if obj is None or obj["metadata"]["resourceVersion"] != plan.versions[key]:
            return False
        desired = copy.deepcopy(plan.statuses[key])
        before = obj.get("status") or {}
        if not needs_write(before, desired):
            return True  # as the operator's writer: an equal status is not written again
        if admitted(desired) and not admitted(before):
            self.admissions.append((key, before))
        victims = gang_memory_from(desired).victims
        if victims:
            groups = {self._group_of(victim) for victim in victims}
            self.awaited[key] = (victims, frozenset(g for g in groups if g is not None))
        self.put_group({**obj, "status": desired})
        return True

    def _group_of(self, pod_key: PodKey) -> GroupKey | None:
        obj = self.pods.get(pod_key)
        name = None if obj is None else obj["metadata"]["labels"].get(POD_GROUP_LABEL)
        return None if name is None else GroupKey(pod_key.namespace, name)

    def _counted_on(self, pod_key: PodKey) -> GroupKey | None:
        """The admitted gang whose recorded plan still counts on this pod, if any."""
        key = self._group_of(pod_key)
        group = None if key is None else self.groups.get(key)
        if group is None or not admitted(group["status"]):
            return None
        return key if pod_key.name in (group["status"].get("plan") or {}) else None

    def _evict(self, action: Evict) -> None:
        for pod_key in action.pods:
            if pod_key not in self.pods:
                continue
            counted = self._counted_on(pod_key)
            if counted is not None:
                raise WriteAheadError(f"{pod_key} evicted while {counted}'s plan counts on it")
            obj = copy.deepcopy(self.pods[pod_key])
            obj["metadata"]["deletionTimestamp"] = rfc3339(self.now)
            self.put_pod(obj)

    def _release(self, action: Release) -> None:
        group = self.groups[action.group]
        recorded = group["status"].get("plan") or {}
        if not admitted(group["status"]):
            raise WriteAheadError(f"{action.group} released before its admission was written")
        for pod_name, node_name in action.placements:
            if recorded.get(pod_name) != node_name:
                raise WriteAheadError(f"{pod_name} released to {node_name}, not in the plan")
            key = PodKey(action.group.namespace, pod_name)
            refused = self.refuse_release.get(key)
            if refused is not None:
                self.state.observe_release(key, ReleaseFailure(*refused, at=self.now))
                continue
            self.state.observe_release(key, None)
            obj = copy.deepcopy(self.pods[key])
            obj["spec"]["schedulingGates"] = without_gang_gate(
                obj["spec"].get("schedulingGates") or []
            )
            obj["spec"]["nodeSelector"] = {HOSTNAME: node_name}
            self.put_pod(obj)
        self.released.append(action.group)


def assert_same_but_quiet(
    result: CycleResult, everything: CycleResult, quiet: set[GroupKey]
) -> None:
    """A cycle that skipped the quiet groups decides what one that looked at all does,
    the quiet groups' statuses being the ones they have. A quiet waiting gang whose
    kept verdict no longer holds (the time, the cluster) is planned again, as it is
    in the cycle that looked at all."""
    assert (result.admissions, result.growths, result.verdicts) == (
        everything.admissions,
        everything.growths,
        everything.verdicts,
    )
    assert result.plan.wake_at == everything.plan.wake_at
    looked = result.plan.statuses.keys()
    kept = [step for step in everything.plan.steps if step.group not in quiet - looked]
    assert list(result.plan.steps) == kept
    for step in everything.plan.steps:
        if step.group in quiet - looked:
            assert step.actions == (WriteStatus(step.group),), step
    assert result.plan.statuses == {
        key: status for key, status in everything.plan.statuses.items() if key not in quiet - looked
    }
