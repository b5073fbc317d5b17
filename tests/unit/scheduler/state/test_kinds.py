"""The door into the state: what `apply` and `delete` say an event did."""

from __future__ import annotations

import copy

from muster.scheduler.state.kinds import Applied, key_of
from muster.scheduler.state.state import ClusterState
from tests.unit.scheduler.builders import Obj, budget, job, node, pod, pod_group


def test_a_new_object_is_a_change_and_the_same_object_again_is_not() -> None:
    state = ClusterState()
    assert state.apply("Node", node("n1")) == Applied(None, changed=True, wakes=True, traced=True)
    assert state.apply("Node", node("n1")) == Applied(None, changed=False, wakes=False, traced=True)


def test_a_node_heartbeat_changes_nothing_the_engine_reads_but_a_cordon_does() -> None:
    state = ClusterState()
    ready = node("n1")
    ready["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t0"}]
    state.apply("Node", ready)
    beat = copy.deepcopy(ready)
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = "t1"
    beat["metadata"]["resourceVersion"] = "2"
    assert not state.apply("Node", beat).changed
    assert state.apply("Node", node("n1", unschedulable=True)).changed


def test_a_pod_annotation_the_engine_does_not_read_is_no_change_its_labels_are() -> None:
    state = ClusterState()
    state.apply("Pod", pod("a", group="g"))
    annotated: Obj = pod("a", group="g")
    annotated["metadata"]["annotations"] = {"team": "vision"}
    assert not state.apply("Pod", annotated).changed
    assert state.apply("Pod", pod("a", group="h")).changed


def test_kube_scheduler_rewording_a_refusal_is_no_change_but_the_new_words_are_kept() -> None:
    state = ClusterState()

    def refused(message: str) -> Obj:
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        return {
            **pod("a", group="g"),
            "status": {"conditions": [{**condition, "message": message}]},
        }

    state.apply("Pod", pod("a", group="g"))
    assert state.apply("Pod", refused("0/3 nodes")).changed
    assert not state.apply("Pod", refused("0/4 nodes")).changed
    assert next(iter(state.pods.values())).record.refusal == "0/4 nodes"


def test_a_pod_group_whose_only_news_is_its_version_is_no_change() -> None:
    state = ClusterState()
    first = pod_group("g", min_count=2)
    first["metadata"]["resourceVersion"] = "1"
    state.apply("PodGroup", first)
    again = copy.deepcopy(first)
    again["metadata"]["resourceVersion"] = "2"
    assert not state.apply("PodGroup", again).changed
    assert state.groups[next(iter(state.groups))].resource_version == "2"
    assert state.apply("PodGroup", pod_group("g", min_count=3)).changed


def test_a_rejected_object_says_why_and_replaces_its_previous_version() -> None:
    state = ClusterState()
    state.apply("Pod", pod("a"))
    applied = state.apply("Pod", pod("a", cpu="lots"))
    assert applied.changed and applied.rejected is not None and "lots" in applied.rejected
    assert not state.pods
    assert state.apply("Pod", pod("a", cpu="lots")) == Applied(
        applied.rejected, changed=False, wakes=False, traced=True
    )
    assert state.apply("Pod", pod("a")) == Applied(None, changed=True, wakes=True, traced=True)


def test_delete_is_a_change_only_when_something_was_kept() -> None:
    state = ClusterState()
    state.apply("Node", node("n1"))
    state.apply("Pod", pod("bad", cpu="lots"))
    assert state.delete("Node", "", "n1") == Applied(None, changed=True, wakes=True, traced=True)
    assert state.delete("Node", "", "n1") == Applied(None, changed=False, wakes=False, traced=True)
    assert state.delete("Pod", "default", "bad").changed  # its rejection is gone
    assert not state.rejected


def test_a_budget_s_new_count_is_a_change_that_calls_for_no_cycle_of_its_own() -> None:
    """It only weighs in a preemption that something else asks for."""
    state = ClusterState()
    applied = state.apply("PodDisruptionBudget", budget("b", {"app": "a"}, allowed=1))
    assert (applied.changed, applied.wakes, applied.traced) == (True, False, True)
    recounted = state.apply("PodDisruptionBudget", budget("b", {"app": "a"}, allowed=0))
    assert (recounted.changed, recounted.wakes) == (True, False)
    assert state.delete("PodDisruptionBudget", "default", "b").wakes is False


def test_a_job_the_engine_keeps_nothing_of_is_left_out_of_the_trace() -> None:
    state = ClusterState()
    plain = state.apply("Job", job("plain", gated_for_field=False))
    assert plain == Applied(None, changed=False, wakes=False, traced=False)
    assert state.delete("Job", "default", "plain").traced is False
    dropped = state.apply("Job", job("dropped"))  # gated for the field it lost
    assert dropped == Applied(None, changed=True, wakes=True, traced=True)
    again = state.apply("Job", job("dropped"))
    assert again == Applied(None, changed=False, wakes=False, traced=True)
    assert state.delete("Job", "default", "dropped") == Applied(
        None, changed=True, wakes=True, traced=True
    )


def test_objects_are_filed_by_kind_namespace_and_name() -> None:
    assert key_of("Pod", {"metadata": {"name": "a"}}) == ("Pod", "default", "a")
    assert key_of("Node", {"metadata": {"name": "n", "namespace": "x"}}) == ("Node", "", "n")
    assert key_of("Pod", None) == ("Pod", "default", "")  # type: ignore[arg-type]


def kueue_topology(name: str, *keys: str, group: str = "kueue.x-k8s.io") -> Obj:
    levels = [{"nodeLabel": key} for key in keys]
    return {
        "apiVersion": f"{group}/v1beta2",
        "kind": "Topology",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {"levels": levels},
    }


def test_a_kueue_topology_gives_its_levels_and_one_of_another_group_is_skipped() -> None:
    state = ClusterState()
    assert state.apply("Topology", kueue_topology("gpus", "zone", "rack")).changed
    assert state.topologies == {"gpus": ("zone", "rack")}
    assert not state.apply("Topology", kueue_topology("gpus", "zone", "rack")).changed
    stray = state.apply("Topology", kueue_topology("other", "zone", group="example.com"))
    assert stray.rejected == "not a Kueue Topology with a node label key at each level"
    assert state.delete("Topology", "", "gpus").changed
    assert state.topologies == {}
