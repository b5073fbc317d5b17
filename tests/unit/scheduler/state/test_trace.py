"""The trace's lines: what the operator gives the state, read back into a fresh one."""

from __future__ import annotations

import json

from muster.api.keys import PodKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.state.state import ClusterState
from muster.scheduler.state.trace import (
    apply_line,
    cycle_line,
    delete_line,
    observe_release,
    release_line,
)
from tests.unit.scheduler.builders import node, pod, pod_group


def test_a_cluster_scoped_object_is_deleted_without_a_namespace() -> None:
    assert delete_line("Node", "ns", "n1")["namespace"] == ""
    assert delete_line("Pod", "ns", "a")["namespace"] == "ns"


def test_apply_and_delete_lines_rebuild_the_state_through_its_door() -> None:
    lines = [
        apply_line("Node", node("n1")),
        apply_line("Pod", pod("a", node_name="n1")),
        apply_line("Pod", pod("b", node_name="n1")),
        delete_line("Pod", "default", "a"),
    ]
    state = ClusterState()
    for line in json.loads(json.dumps(lines)):  # as read back from the file
        if line["line"] == "apply":
            state.apply(line["kind"], line["object"])
        else:
            state.delete(line["kind"], line["namespace"], line["name"])
    assert set(state.pods) == {PodKey("default", "b")}


def test_a_release_outcome_reads_back_as_it_was_observed() -> None:
    state = ClusterState()
    state.apply("Pod", pod("a", group="g"))
    failure = ReleaseFailure(422, "denied", 5.0)
    observe_release(state, json.loads(json.dumps(release_line(PodKey("default", "a"), failure))))
    assert state.release_failures == {PodKey("default", "a"): failure}
    observe_release(state, release_line(PodKey("default", "a"), None))
    assert not state.release_failures


def test_a_cycle_line_is_plain_json_of_what_the_cycle_decided() -> None:
    state = ClusterState()
    for kind, obj in (
        ("Node", node("n1")),
        ("PodGroup", pod_group("g", min_count=1)),
        ("Pod", pod("g-0", group="g")),
    ):
        state.apply(kind, obj)
    line = cycle_line(7.0, schedule(state, now=7.0, config=EngineConfig()))
    assert json.loads(json.dumps(line)) == line
    (admission,) = line["decisions"]["admissions"]
    assert admission["placements"] == {"g-0": "n1"}
