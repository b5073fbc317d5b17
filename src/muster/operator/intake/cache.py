"""The operator's live view of the cluster: the engine's state plus the indexes I/O needs.

Informers write here (and the status writer, with the API server's answers); the
scheduling loop reads here. The engine's `ClusterState` holds everything scheduling
needs; beside it the cache keeps what only the operator needs: the PodGroup objects
as last seen (to diff status), and a small record of each group's member pods (for
their events and the time to admission). Each sink reports whether a change matters
to scheduling, so heartbeats and status chatter do not start cycles.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import NamedTuple

from muster.api.constants import POD_GROUP_LABEL
from muster.client.kube import JsonObject
from muster.client.name_index import NameIndex
from muster.client.object_references import reference
from muster.operator.intake.pod_group_copies import PodGroupCopies
from muster.scheduler import ClusterState
from muster.scheduler.decisions.results import GroupKey, PodKey
from muster.scheduler.memory.dropped_field import gated_for_field
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.objects.fields import shared
from muster.scheduler.objects.keys import object_key, revision
from muster.scheduler.objects.times import parse_time
from muster.scheduler.state.intake import pod_scheduled
from muster.simulation.trace import (
    apply_line,
    apply_object,
    delete_line,
    delete_object,
    release_line,
)


def _metadata(obj: JsonObject) -> JsonObject:
    metadata: JsonObject = obj.get("metadata") or {}
    return metadata


def group_key(obj: JsonObject) -> GroupKey:
    metadata = _metadata(obj)
    return GroupKey(str(metadata.get("namespace", "")), str(metadata.get("name", "")))


def pod_group_of(pod: JsonObject) -> GroupKey | None:
    """The PodGroup a pod belongs to, by its membership label."""
    metadata = _metadata(pod)
    name = (metadata.get("labels") or {}).get(POD_GROUP_LABEL)
    return GroupKey(str(metadata.get("namespace", "")), str(name)) if name else None


class Member(NamedTuple):
    """What the operator reads of a member pod beside the engine's record of it: the
    uid its events name, when it was created (time to admission), and whether the
    cluster's own gang scheduling has it (`spec.schedulingGroup`: no warning when its
    PodGroup is missing).

    Kept for every member pod for as long as it exists, so it is small: the pod's
    JSON, even cut down to the fields read, took about 1 KiB a pod more.
    """

    uid: str
    created: float | None
    native: bool

    def reference(self, pod: PodKey) -> JsonObject:
        """An ObjectReference to the pod, for its events."""
        metadata = {"namespace": pod.namespace, "name": pod.name, "uid": self.uid}
        return reference({"apiVersion": "v1", "kind": "Pod", "metadata": metadata})


def member_of(pod: JsonObject) -> Member:
    metadata = _metadata(pod)
    return Member(
        uid=str(metadata.get("uid", "")),
        created=parse_time(metadata.get("creationTimestamp")),
        native=bool((pod.get("spec") or {}).get("schedulingGroup")),
    )


def _freeze(value: object) -> Hashable:
    if isinstance(value, dict):
        return tuple(sorted((key, _freeze(item)) for key, item in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    return value if isinstance(value, Hashable) else repr(value)


def _node_fingerprint(node: JsonObject) -> Hashable:
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    ready = [c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    return _freeze(
        [
            _metadata(node).get("labels"),
            spec.get("taints"),
            spec.get("unschedulable"),
            status.get("allocatable"),
            ready,
        ]
    )


def _pod_fingerprint(pod: JsonObject) -> Hashable:
    """What makes a pod event start a cycle; kube-scheduler refusing a released pod
    does (its PodScheduled reason turns Unschedulable), the refusal's wording does not."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    metadata = _metadata(pod)
    scheduled = pod_scheduled(status) or {}
    return _freeze(
        [
            spec.get("nodeName"),
            spec.get("schedulingGates"),
            spec.get("nodeSelector"),
            status.get("phase"),
            metadata.get("deletionTimestamp") is not None,
            metadata.get("labels"),  # membership, and what inter-pod rules match
            (scheduled.get("status"), scheduled.get("reason")),
            status.get("nominatedNodeName"),
        ]
    )


def _pod_group_fingerprint(pod_group: JsonObject) -> Hashable:
    status = pod_group.get("status") or {}
    return _freeze([_metadata(pod_group).get("generation"), status.get("plan")])


@dataclass(frozen=True, slots=True)
class Rejection:
    """An object the engine skips, with why, for the loop to tell its owner."""

    involved: JsonObject  # ObjectReference
    version: str  # resourceVersion: one warning per version
    reason: str


ObjectKey = tuple[str, str, str]  # kind, namespace ("" when cluster-scoped), name


def _object_key(kind: str, obj: JsonObject) -> ObjectKey:
    metadata = _metadata(obj)
    return (kind, str(metadata.get("namespace") or ""), str(metadata.get("name", "")))


class LiveCache:
    """Engine state and operator indexes, kept in step by the informers' sinks.

    `record`, when given, is told of every change that reaches the engine's state, in
    order, as a trace line (`muster.simulation.trace`): what a replay needs to rebuild
    the very states the operator's cycles decided on.
    """

    def __init__(self, *, record: Callable[[JsonObject], None] | None = None) -> None:
        self.state = ClusterState()
        self.record = record
        self.pod_groups = PodGroupCopies()
        self.members: defaultdict[GroupKey, dict[str, Member]] = defaultdict(dict)
        self._pod_groups_by_pod: NameIndex[str] = NameIndex()  # its PodGroup's name
        self._fingerprints: defaultdict[str, NameIndex[int]] = defaultdict(NameIndex)
        self.rejections: dict[ObjectKey, Rejection] = {}
        self.nodes = _Sink(self._upsert_node, self._remove_node)
        self.pods = _Sink(self._upsert_pod, self._remove_pod)
        self.pod_group_sink = _Sink(self.apply_pod_group, self._remove_pod_group)
        self.priority_classes = _Sink(self._upsert_priority_class, self._remove_priority_class)
        self.namespaces = _Sink(self._upsert_namespace, self._remove_namespace)
        self.claims = _Sink(self._upsert_claim, self._remove_claim)
        self.volumes = _Sink(self._upsert_volume, self._remove_volume)
        self.budgets = _Sink(self._upsert_budget, self._remove_budget)
        self.jobs = _Sink(self._upsert_job, self._remove_job)

    def apply_pod_group(self, pod_group: JsonObject) -> bool:
        """Record a PodGroup as seen by a watch or as returned by our own write."""
        key = group_key(pod_group)
        kept, version = self.pod_groups.version(key), revision(pod_group)
        if kept is not None and version is not None and kept > version:
            return False  # a stale watch event after our own write's answer
        self.pod_groups.put(key, pod_group)
        self._take_in("PodGroup", pod_group)
        return self._changed("podgroup", key.namespace, key.name, _pod_group_fingerprint(pod_group))

    def _remove_pod_group(self, pod_group: JsonObject) -> bool:
        key = group_key(pod_group)
        self.pod_groups.pop(key)
        self._delete("PodGroup", key.namespace, key.name)
        self.rejections.pop(_object_key("PodGroup", pod_group), None)
        self._fingerprints["podgroup"].pop(key.namespace, key.name)
        return True

    def _apply(self, kind: str, obj: JsonObject) -> str | None:
        if self.record is not None:
            self.record(apply_line(kind, obj))
        return apply_object(self.state, kind, obj)

    def _delete(self, kind: str, namespace: str, name: str) -> None:
        if self.record is not None:
            self.record(delete_line(kind, namespace, name))
        delete_object(self.state, kind, namespace, name)

    def observe_release(self, pod: PodKey, failure: ReleaseFailure | None) -> None:
        """What the API server answered to a pod's release, for the engine's next cycle."""
        if self.record is not None:
            self.record(release_line(pod, failure))
        self.state.observe_release(pod, failure)

    def _take_in(self, kind: str, obj: JsonObject) -> None:
        """Give the object to the engine, and remember it while the engine skips it
        (its intake gave a reason)."""
        rejected = self._apply(kind, obj)
        key = _object_key(kind, obj)
        if rejected is None:
            self.rejections.pop(key, None)
        else:
            version = str(_metadata(obj).get("resourceVersion", ""))
            self.rejections[key] = Rejection(reference(obj), version, rejected)

    def _upsert_node(self, node: JsonObject) -> bool:
        self._take_in("Node", node)
        name = str(_metadata(node).get("name", ""))
        return self._changed("node", "", name, _node_fingerprint(node))

    def _remove_node(self, node: JsonObject) -> bool:
        name = str(_metadata(node).get("name", ""))
        self._delete("Node", "", name)
        self.rejections.pop(_object_key("Node", node), None)
        self._fingerprints["node"].pop("", name)
        return True

    def _upsert_pod(self, pod: JsonObject) -> bool:
        namespace, name = object_key(pod)
        self._take_in("Pod", pod)
        group = pod_group_of(pod)
        previous = self._pod_groups_by_pod.get(namespace, name)
        if previous is not None and (group is None or previous != group.name):
            self._forget_member(GroupKey(namespace, previous), name)
        if group is not None:
            self.members[group][name] = member_of(pod)
            self._pod_groups_by_pod.put(namespace, name, shared(group.name))
        return self._changed("pod", namespace, name, _pod_fingerprint(pod))

    def _remove_pod(self, pod: JsonObject) -> bool:
        namespace, name = object_key(pod)
        self._delete("Pod", namespace, name)
        self.rejections.pop(_object_key("Pod", pod), None)
        group = self._pod_groups_by_pod.pop(namespace, name)
        if group is not None:
            self._forget_member(GroupKey(namespace, group), name)
        self._fingerprints["pod"].pop(namespace, name)
        return True

    def _forget_member(self, group: GroupKey, name: str) -> None:
        members = self.members.get(group)
        if members is not None:
            members.pop(name, None)
            if not members:
                del self.members[group]

    def _upsert_priority_class(self, priority_class: JsonObject) -> bool:
        self._take_in("PriorityClass", priority_class)
        return True

    def _remove_priority_class(self, priority_class: JsonObject) -> bool:
        self._delete("PriorityClass", "", str(_metadata(priority_class).get("name", "")))
        self.rejections.pop(_object_key("PriorityClass", priority_class), None)
        return True

    def _upsert_namespace(self, namespace: JsonObject) -> bool:
        """Namespace labels: what the namespaceSelector of pod (anti-)affinity reads."""
        self._take_in("Namespace", namespace)
        name = str(_metadata(namespace).get("name", ""))
        return self._changed("namespace", "", name, _freeze(_metadata(namespace).get("labels")))

    def _remove_namespace(self, namespace: JsonObject) -> bool:
        self._delete("Namespace", "", str(_metadata(namespace).get("name", "")))
        self.rejections.pop(_object_key("Namespace", namespace), None)
        return True

    def _upsert_claim(self, claim: JsonObject) -> bool:
        """PersistentVolumeClaims: the volume each is bound to (zonal disks pin pods)."""
        self._take_in("PersistentVolumeClaim", claim)
        namespace, name = object_key(claim)
        volume = (claim.get("spec") or {}).get("volumeName")
        return self._changed("claim", namespace, name, _freeze(volume))

    def _remove_claim(self, claim: JsonObject) -> bool:
        namespace, name = object_key(claim)
        self._delete("PersistentVolumeClaim", namespace, name)
        self.rejections.pop(_object_key("PersistentVolumeClaim", claim), None)
        self._fingerprints["claim"].pop(namespace, name)
        return True

    def _upsert_volume(self, volume: JsonObject) -> bool:
        """PersistentVolumes: the nodes each can be used from."""
        self._take_in("PersistentVolume", volume)
        name = str(_metadata(volume).get("name", ""))
        affinity = (volume.get("spec") or {}).get("nodeAffinity")
        return self._changed("volume", "", name, _freeze(affinity))

    def _remove_volume(self, volume: JsonObject) -> bool:
        name = str(_metadata(volume).get("name", ""))
        self._delete("PersistentVolume", "", name)
        self.rejections.pop(_object_key("PersistentVolume", volume), None)
        self._fingerprints["volume"].pop("", name)
        return True

    def _upsert_budget(self, budget: JsonObject) -> bool:
        """PodDisruptionBudgets: which victims preemption should spare (`budgets`).

        A change in what a budget allows triggers no cycle of its own: it only weighs
        in a preemption that something else asks for.
        """
        self._take_in("PodDisruptionBudget", budget)
        return False

    def _remove_budget(self, budget: JsonObject) -> bool:
        metadata = _metadata(budget)
        namespace, name = str(metadata.get("namespace", "")), str(metadata.get("name", ""))
        self._delete("PodDisruptionBudget", namespace, name)
        self.rejections.pop(_object_key("PodDisruptionBudget", budget), None)
        return False

    def _upsert_job(self, job: JsonObject) -> bool:
        """Jobs whose pods were gated for the native field (`dropped_field`); the
        rest, nearly every Job, never reach the engine or its trace."""
        if not gated_for_field(job):
            return False
        key = object_key(job)
        before = self.state.dropped_fields.get(key)
        self._take_in("Job", job)
        return self.state.dropped_fields.get(key) != before

    def _remove_job(self, job: JsonObject) -> bool:
        namespace, name = object_key(job)
        if (namespace, name) not in self.state.dropped_fields:
            return False
        self._delete("Job", namespace, name)
        return True

    def _changed(self, kind: str, namespace: str, name: str, fingerprint: Hashable) -> bool:
        """Whether the object's fingerprint moved. Only the fingerprint's hash is kept:
        the frozen fingerprint of each of 50,000 pods (labels and all) was tens of MiB,
        and two versions of one object whose hashes collide are not to be expected."""
        digest = hash(fingerprint)
        kept = self._fingerprints[kind]
        if kept.get(namespace, name) == digest:
            return False
        kept.put(namespace, name, digest)
        return True


class _Sink:
    """Binds a pair of cache methods to the informer's sink protocol."""

    def __init__(
        self, upsert: Callable[[JsonObject], bool], remove: Callable[[JsonObject], bool]
    ) -> None:
        self.upsert = upsert
        self.remove = remove
