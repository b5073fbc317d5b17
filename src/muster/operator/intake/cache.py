"""The operator's live view of the cluster: the engine's state, and what I/O needs.

Informers write here (and the status writer, with the API server's answers); the
scheduling loop reads here. Every object goes into the engine's `ClusterState`
through its one door (`ClusterState.apply` and `delete`), which says whether the
engine skips it, whether the change calls for a cycle (heartbeats, status chatter and
a budget's new count do not) and whether the trace needs it (a Job the engine keeps
nothing of does not): the cache carries that out, deciding none of it. Beside the state the cache
keeps only what writing needs: the PodGroups as last seen (the base of a status
write, and the target of their events), the uid of each member pod (its events), the
resourceVersion of each pod that carries the gang gate (the precondition of its
release, `execution.pods`), and a reference to each object the engine skips (its
warning names it; the reason and the version are the engine's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from muster.api.constants import POD_GROUP_KIND
from muster.api.keys import GroupKey, PodKey, object_key, resource_version, revision
from muster.api.wire import JsonObject
from muster.client.name_index import NameIndex
from muster.client.object_references import reference
from muster.operator.intake.pod_group_copies import PodGroupCopies
from muster.scheduler import (
    Applied,
    Case,
    ClusterState,
    Judgement,
    ObjectKey,
    ReleaseFailure,
    apply_line,
    delete_line,
    judged_line,
    key_of,
    pod_record,
    release_failure,
    release_line,
)
from muster.scheduler.decisions import EventTarget


class LiveCache:
    """Engine state and operator indexes, kept in step by the informers' sinks.

    `record`, when given, is told of every change that reaches the engine's state, in
    order, as a trace line (`muster.scheduler.state.trace`): what a replay needs to
    rebuild the very states the operator's cycles decided on.
    """

    def __init__(self, *, record: Callable[[JsonObject], None] | None = None) -> None:
        self.state = ClusterState()
        self.record = record
        self.pod_groups = PodGroupCopies()
        self.uids: NameIndex[str] = NameIndex()  # of member pods, for their events
        self.versions: NameIndex[str] = NameIndex()  # of gated pods, for their releases
        self.rejections: dict[ObjectKey, JsonObject] = {}  # references, for warnings
        self.nodes = _Sink(self, "Node")
        self.pods = _Sink(self, "Pod")
        self.pod_group_sink = _Sink(self, "PodGroup")
        self.priority_classes = _Sink(self, "PriorityClass")
        self.namespaces = _Sink(self, "Namespace")
        self.claims = _Sink(self, "PersistentVolumeClaim")
        self.volumes = _Sink(self, "PersistentVolume")
        self.budgets = _Sink(self, "PodDisruptionBudget")
        self.resource_slices = _Sink(self, "ResourceSlice")
        self.device_classes = _Sink(self, "DeviceClass")
        self.resource_claims = _Sink(self, "ResourceClaim")
        self.resource_claim_templates = _Sink(self, "ResourceClaimTemplate")
        self.jobs = _Sink(self, "Job")
        self.topologies = _Sink(self, "Topology")

    def apply_pod_group(self, pod_group: JsonObject) -> bool:
        """Record a PodGroup as seen by a watch or as returned by our own write."""
        key = GroupKey(*object_key(pod_group))
        kept, version = self.pod_groups.version(key), revision(pod_group)
        if kept is not None and version is not None and kept >= version:
            # A stale watch event after our own write's answer, or the same version
            # again (the watch's copy of that answer, a relist): nothing to take in.
            return False
        self.pod_groups.put(key, pod_group)
        return self.take_in("PodGroup", pod_group).wakes

    def take_in(self, kind: str, obj: JsonObject) -> Applied:
        """Give the object to the engine, and remember it while the engine skips it."""
        applied = self.state.apply(kind, obj)
        if self.record is not None and applied.traced:
            self.record(apply_line(kind, obj))
        key = key_of(kind, obj)
        if applied.rejected is None:
            self.rejections.pop(key, None)
        else:
            self.rejections[key] = reference(obj)
        if kind == "Pod":
            self._note_uid(obj)
            self._note_version(obj)
            if self._forget_stale_release(PodKey(*object_key(obj))):
                return applied._replace(changed=True, wakes=True)
        return applied

    def let_go(self, kind: str, obj: JsonObject) -> Applied:
        """Take a deleted object out of the engine and of every index."""
        _, namespace, name = key = key_of(kind, obj)
        self.rejections.pop(key, None)
        if kind == "Pod":
            self.uids.pop(namespace, name)
            self.versions.pop(namespace, name)
        elif kind == "PodGroup":
            self.pod_groups.pop(GroupKey(namespace, name))
        applied = self.state.delete(kind, namespace, name)
        if self.record is not None and applied.traced:
            self.record(delete_line(kind, namespace, name))
        return applied

    def _note_uid(self, pod: JsonObject) -> None:
        """Keep the uid of a pod the engine counts as a gang member."""
        namespace, name = object_key(pod)
        record = pod_record(self.state, PodKey(namespace, name))
        if record is not None and record.group_name is not None:
            self.uids.put(namespace, name, str((pod.get("metadata") or {}).get("uid", "")))
        else:
            self.uids.pop(namespace, name)

    def _note_version(self, pod: JsonObject) -> None:
        """Keep the resourceVersion of a pod the engine sees carrying the gang gate
        (each version, even one that changes nothing the engine reads)."""
        namespace, name = object_key(pod)
        record = pod_record(self.state, PodKey(namespace, name))
        if record is not None and record.gated:
            self.versions.put(namespace, name, resource_version(pod))
        else:
            self.versions.pop(namespace, name)

    def _forget_stale_release(self, pod: PodKey) -> bool:
        """Whether a newer version of the pod (this one) answers a release refused as
        stale (409): that failure was said of the pod as it was, so it is forgotten,
        as the engine forgets any failure once the pod changes, and a cycle starts to
        release the pod from this version, not a retry delay later."""
        failure = release_failure(self.state, pod)
        if failure is None or not failure.stale:
            return False
        self.observe_release(pod, None)
        return True

    def version(self, pod: PodKey) -> str:
        """The resourceVersion of a gated pod as last seen ("" for none)."""
        return self.versions.get(pod.namespace, pod.name) or ""

    def reference(self, pod: PodKey) -> JsonObject:
        """An ObjectReference to a member pod, for its events."""
        uid = self.uids.get(pod.namespace, pod.name) or ""
        metadata = {"namespace": pod.namespace, "name": pod.name, "uid": uid}
        return reference({"apiVersion": "v1", "kind": "Pod", "metadata": metadata})

    def reference_to(self, target: EventTarget) -> JsonObject | None:
        """An ObjectReference to the target of an event the engine planned: whole when
        the engine gave its uid, else from the copy kept of it; None once it is gone."""
        if target.uid:
            return {
                "apiVersion": target.api_version,
                "kind": target.kind,
                "namespace": target.namespace,
                "name": target.name,
                "uid": target.uid,
            }
        if target.kind == POD_GROUP_KIND:
            pod_group = self.pod_groups.get(GroupKey(target.namespace, target.name))
            return None if pod_group is None else reference(pod_group)
        return self.reference_of(target.kind, target.namespace, target.name)

    def reference_of(self, kind: str, namespace: str, name: str) -> JsonObject | None:
        """An ObjectReference to an object the engine gives a notice about (a member pod
        or an object it cannot use), for the event; None once it is gone."""
        rejection = self.rejections.get((kind, namespace, name))
        if rejection is not None or kind != "Pod" or self.uids.get(namespace, name) is None:
            return rejection
        return self.reference(PodKey(namespace, name))

    def observe_release(self, pod: PodKey, failure: ReleaseFailure | None) -> None:
        """What the API server answered to a pod's release, for the engine's next cycle."""
        if self.record is not None:
            self.record(release_line(pod, failure))
        self.state.observe_release(pod, failure)

    def judge_selectors(self, found: Mapping[Case, Judgement]) -> bool:
        """Selector judgements made beside the engine (`SelectorJudge`): whether any
        was new, which a cycle must then see."""
        if self.record is not None:
            self.record(judged_line(found))
        return self.state.judge_selectors(found)


class _Sink:
    """One kind's informer sink: each change goes through the engine's door, and it
    starts a cycle when the engine says it calls for one (`Applied.wakes`)."""

    def __init__(self, cache: LiveCache, kind: str) -> None:
        self.cache = cache
        self.kind = kind

    def upsert(self, obj: JsonObject) -> bool:
        if self.kind == "PodGroup":
            return self.cache.apply_pod_group(obj)
        return self.cache.take_in(self.kind, obj).wakes

    def remove(self, obj: JsonObject) -> bool:
        return self.cache.let_go(self.kind, obj).wakes
