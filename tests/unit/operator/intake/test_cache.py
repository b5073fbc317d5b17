"""The live cache: member indexes follow labels, and only scheduling-relevant changes count."""

from __future__ import annotations

from typing import Any

from muster.api.constants import GATED_FOR_ANNOTATION, GATED_FOR_FIELD
from muster.api.keys import GroupKey, JobRef, PodKey
from muster.api.wire import JsonObject
from muster.operator.intake.cache import LiveCache
from muster.scheduler.decisions.plan import on_job, on_pod_group
from muster.scheduler.memory.release_failures import ReleaseFailure

GROUP_LABEL = "scheduling.muster.dev/pod-group"


def pod(name: str, group: str | None, *, node: str | None = None, version: str = "1") -> Any:
    labels = {GROUP_LABEL: group} if group else {}
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"namespace": "ns", "name": name, "labels": labels, "resourceVersion": version},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def node(name: str, *, unschedulable: bool = False, heartbeat: str = "t0") -> Any:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": "4", "pods": "10"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": heartbeat}],
        },
    }


def test_members_follow_the_group_label_in_the_engine_and_keep_their_uid() -> None:
    cache = LiveCache()
    assert cache.pods.upsert(pod("p", "a"))
    assert set(cache.state.members[GroupKey("ns", "a")]) == {"p"}
    cache.pods.upsert(pod("p", "b", version="2"))
    assert GroupKey("ns", "a") not in cache.state.members
    assert set(cache.state.members[GroupKey("ns", "b")]) == {"p"}
    assert cache.uids.get("ns", "p") == ""
    cache.pods.upsert(pod("p", None, version="3"))
    assert cache.uids.get("ns", "p") is None  # no longer a member: no events of its own
    cache.pods.remove(pod("p", None))
    assert not cache.state.members


def test_a_node_heartbeat_is_not_a_reason_to_schedule_but_a_cordon_is() -> None:
    cache = LiveCache()
    assert cache.nodes.upsert(node("n1"))
    assert not cache.nodes.upsert(node("n1", heartbeat="t1"))
    assert cache.nodes.upsert(node("n1", unschedulable=True))


def test_a_stale_pod_group_never_replaces_a_newer_one() -> None:
    cache = LiveCache()
    metadata: dict[str, Any] = {"namespace": "ns", "name": "g", "generation": 1}
    newer = {
        "metadata": {**metadata, "resourceVersion": "9"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
        "status": {"plan": {"p": "n1"}},
    }
    older = {**newer, "metadata": {**metadata, "resourceVersion": "5"}, "status": {}}
    assert cache.apply_pod_group(newer)
    assert not cache.apply_pod_group(older)
    kept = cache.pod_groups.get(GroupKey("ns", "g"))
    assert kept is not None and kept["status"] == {"plan": {"p": "n1"}}


def test_the_same_pod_group_version_again_is_not_taken_in_twice() -> None:
    """The watch delivers the operator's own status write after its answer was taken in."""
    lines: list[JsonObject] = []
    cache = LiveCache(record=lines.append)
    written = {
        "metadata": {"namespace": "ns", "name": "g", "generation": 1, "resourceVersion": "9"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
        "status": {"plan": {"p": "n1"}},
    }
    assert cache.apply_pod_group(written)
    assert not cache.apply_pod_group(dict(written))
    assert len(lines) == 1  # the engine was given it once


def test_objects_the_engine_rejects_are_kept_until_fixed_or_gone() -> None:
    cache = LiveCache()
    broken = pod("p", None, node="n1")
    broken["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    cache.pods.upsert(broken)
    (rejection,) = cache.rejections.values()
    assert rejection["name"] == "p"
    assert cache.reference_of("Pod", "ns", "p") == rejection
    cache.pods.remove(broken)
    assert not cache.rejections
    cache.pods.upsert(broken)
    cache.pods.upsert(pod("p", None, node="n1", version="2"))
    assert not cache.rejections


def scheduled(pod_obj: Any, reason: str, message: str, *, nominated: str | None = None) -> Any:
    pod_obj["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    if nominated:
        pod_obj["status"]["nominatedNodeName"] = nominated
    return pod_obj


def test_kube_scheduler_refusing_a_member_is_kept_and_starts_a_cycle() -> None:
    cache = LiveCache()
    key = PodKey("ns", "a")
    assert cache.pods.upsert(scheduled(pod("a", "g"), "SchedulingGated", "gated"))
    assert cache.state.pods[key].record.refusal is None
    assert cache.pods.upsert(scheduled(pod("a", "g"), "Unschedulable", "0/3 nodes"))
    assert cache.state.pods[key].record.refusal == "0/3 nodes"
    assert not cache.pods.upsert(scheduled(pod("a", "g"), "Unschedulable", "0/4 nodes"))
    assert cache.pods.upsert(scheduled(pod("a", "g"), "Unschedulable", "x", nominated="n1"))


def test_a_member_is_kept_as_what_its_events_read() -> None:
    cache = LiveCache()
    obj = pod("a", "g")
    obj["metadata"] |= {"uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z"}
    cache.pods.upsert(obj)
    reference = {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "a", "uid": "u-1"}
    assert cache.reference(PodKey("ns", "a")) == reference
    assert cache.reference_of("Pod", "ns", "a") == reference
    record = cache.state.pods[PodKey("ns", "a")].record
    assert record.created == 1767225600.0 and not record.native
    cache.pods.remove(obj)
    assert cache.reference_of("Pod", "ns", "a") is None


def test_an_annotation_the_engine_does_not_read_starts_no_cycle() -> None:
    cache = LiveCache()
    assert cache.pods.upsert(pod("a", "g"))
    annotated = pod("a", "g", version="2")
    annotated["metadata"]["annotations"] = {"team": "vision"}
    assert not cache.pods.upsert(annotated)


def test_an_object_the_engine_skips_is_remembered_once_per_version() -> None:
    cache = LiveCache()
    bad = pod("a", "g")
    bad["spec"]["priority"] = "high"
    assert cache.pods.upsert(bad)  # a new rejection is news
    assert cache.reference_of("Pod", "ns", "a") == cache.rejections["Pod", "ns", "a"]
    (rejected,) = cache.state.rejected.values()
    assert rejected.version == "1" and "spec.priority" in rejected.reason
    assert not cache.pods.upsert(bad)
    assert cache.pods.upsert(pod("a", "g", version="2"))
    assert not cache.rejections


def gated(obj: Any) -> Any:
    obj["spec"]["schedulingGates"] = [{"name": "scheduling.muster.dev/gang"}]
    return obj


def test_a_gated_pod_s_version_is_kept_for_its_release_even_when_nothing_else_changed() -> None:
    cache = LiveCache()
    key = PodKey("ns", "p")
    cache.pods.upsert(gated(pod("p", "a", version="5")))
    assert cache.version(key) == "5"
    assert not cache.pods.upsert(gated(pod("p", "a", version="6")))  # no cycle for it...
    assert cache.version(key) == "6"  # ...but a release must be conditional on it
    cache.pods.upsert(pod("p", "a", node="n1", version="7"))  # released and bound
    assert cache.version(key) == ""
    cache.pods.upsert(gated(pod("p", "a", version="8")))
    cache.pods.remove(pod("p", "a", version="8"))
    assert cache.version(key) == ""


def test_a_release_refused_as_stale_is_due_again_once_a_newer_version_is_seen() -> None:
    cache = LiveCache()
    stale, lost = PodKey("ns", "p"), PodKey("ns", "q")
    cache.pods.upsert(gated(pod("p", "a", version="5")))
    cache.pods.upsert(gated(pod("q", "a", version="5")))
    cache.observe_release(stale, ReleaseFailure(409, "the object has been modified", 0.0))
    cache.observe_release(lost, ReleaseFailure(0, "not answered within 2.5s", 0.0))
    # Versions that change nothing the engine reads (kube-scheduler's SchedulingGated).
    assert cache.pods.upsert(gated(pod("p", "a", version="6")))  # a cycle, to release it
    assert stale not in cache.state.release_failures
    assert not cache.pods.upsert(gated(pod("q", "a", version="6")))
    assert lost in cache.state.release_failures  # retried after its delay, as before


def test_an_event_s_target_is_referred_to_as_the_engine_named_it() -> None:
    """The engine names each event's object; the cache only supplies what it keeps of
    it (a PodGroup's uid), and nothing for one that is gone."""
    cache = LiveCache()
    metadata = {"namespace": "ns", "name": "g", "uid": "g-uid", "resourceVersion": "1"}
    cache.apply_pod_group(
        {
            "apiVersion": "scheduling.muster.dev/v1beta1",
            "kind": "PodGroup",
            "metadata": metadata,
            "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
        }
    )
    assert cache.reference_to(on_pod_group(GroupKey("ns", "g"))) == {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "namespace": "ns",
        "name": "g",
        "uid": "g-uid",
    }
    assert cache.reference_to(on_pod_group(GroupKey("ns", "gone"))) is None
    assert cache.reference_to(on_job(JobRef("ns", "train", "j-uid"))) == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "namespace": "ns",
        "name": "train",
        "uid": "j-uid",
    }


def test_the_sinks_carry_out_what_the_engine_says_of_each_event() -> None:
    """A budget's new count starts no cycle; a Job the engine keeps nothing of starts
    none and leaves no trace line; one gated for a field it lost does both."""
    lines: list[JsonObject] = []
    cache = LiveCache(record=lines.append)
    budget = {
        "metadata": {"namespace": "ns", "name": "b"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}},
        "status": {"disruptionsAllowed": 1},
    }
    assert not cache.budgets.upsert(budget)
    assert [line["kind"] for line in lines] == ["PodDisruptionBudget"]
    template = {"metadata": {"labels": {GROUP_LABEL: "train"}}, "spec": {}}
    metadata = {"namespace": "ns", "name": "train", "uid": "u"}
    plain = {"metadata": metadata, "spec": {"template": template}}
    assert not cache.jobs.upsert(plain)
    assert not cache.jobs.remove(plain)
    assert len(lines) == 1
    marked = {**template["metadata"], "annotations": {GATED_FOR_ANNOTATION: GATED_FOR_FIELD}}
    gated = {"metadata": metadata, "spec": {"template": {**template, "metadata": marked}}}
    assert cache.jobs.upsert(gated)
    assert cache.jobs.remove(gated)
    assert [line["line"] for line in lines[1:]] == ["apply", "delete"]
