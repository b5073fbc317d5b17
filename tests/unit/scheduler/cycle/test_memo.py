"""A waiting gang's verdict is kept until something it read changes, or the flush."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.decisions.results import NOTHING_CARRIED, Carried, Reads
from tests.unit.scheduler.builders import node, pod, pod_group

NOW = 1_767_225_610.0  # ten seconds after the gangs were created
CONFIG = EngineConfig()
KEY = GroupKey("default", "pinned")


def backlog() -> ClusterState:
    """A gang pinned to a full pool of one node, beside a free node outside it."""
    state = ClusterState()
    state.apply("Node", node("pool-1", cpu="4", labels={"pool": "reserved"}))
    state.apply("Node", node("other", cpu="4"))
    state.apply("Pod", pod("holder", cpu="4", node_name="pool-1", phase="Running"))
    state.apply("PodGroup", pod_group("pinned", min_count=2))
    selector = {"nodeSelector": {"pool": "reserved"}}
    for index in range(2):
        state.apply("Pod", pod(f"pinned-{index}", group="pinned", cpu="2", spec=selector))
    return state


def decided_at(state: ClusterState, carried: Carried, now: float) -> tuple[float, Carried]:
    """When the gang's verdict handed on was decided, after a cycle at `now`."""
    result = schedule(state, now=now, config=CONFIG, carried=carried)
    return result.carried.kept[KEY].decided_at, result.carried


def test_a_refusal_is_kept_while_nothing_it_read_changes() -> None:
    state = backlog()
    first, carried = decided_at(state, NOTHING_CARRIED, NOW)
    assert carried.kept[KEY].reads is Reads.NODES
    state.apply("Pod", pod("elsewhere", cpu="1", node_name="other", phase="Running"))
    again, carried = decided_at(state, carried, NOW + 1)
    assert again == first  # capacity moved only on a node its rules keep it off


def test_capacity_moving_on_a_node_it_may_use_wakes_it() -> None:
    state = backlog()
    _, carried = decided_at(state, NOTHING_CARRIED, NOW)
    state.apply("Pod", pod("more", cpu="0", node_name="pool-1", phase="Running"))
    again, _ = decided_at(state, carried, NOW + 1)
    assert again == NOW + 1


def test_a_node_change_wakes_it() -> None:
    state = backlog()
    _, carried = decided_at(state, NOTHING_CARRIED, NOW)
    state.apply("Node", node("pool-2", cpu="1", labels={"pool": "reserved"}))
    again, _ = decided_at(state, carried, NOW + 1)
    assert again == NOW + 1


def test_the_safety_flush_decides_it_afresh() -> None:
    state = backlog()
    _, carried = decided_at(state, NOTHING_CARRIED, NOW)
    kept, carried = decided_at(state, carried, NOW + CONFIG.verdict_flush_seconds - 1)
    assert kept == NOW
    flushed, _ = decided_at(state, carried, NOW + CONFIG.verdict_flush_seconds)
    assert flushed == NOW + CONFIG.verdict_flush_seconds


def test_a_gang_too_large_for_the_empty_cluster_reads_no_capacity() -> None:
    state = backlog()
    state.apply("PodGroup", pod_group("huge", min_count=1))
    state.apply("Pod", pod("huge-0", group="huge", cpu="64"))
    result = schedule(state, now=NOW, config=CONFIG)
    assert result.carried.kept[GroupKey("default", "huge")].reads is Reads.NOTHING


def test_switched_off_nothing_is_kept() -> None:
    config = EngineConfig(keep_verdicts=False)
    result = schedule(backlog(), now=NOW, config=config)
    assert result.carried.kept == {}


def test_a_running_gang_falling_below_its_priority_wakes_it() -> None:
    """A member of lower priority joining a running gang lowers the gang's priority:
    its pods become what a waiting gang of higher priority could preempt."""
    state = ClusterState()
    state.apply("Node", node("n1", cpu="2", labels={"zone": "a"}))
    state.apply("PodGroup", pod_group("run", priority=3, admitted=True, plan={"run-0": "n1"}))
    state.apply("Pod", pod("run-0", group="run", cpu="2", node_name="n1", priority=3))
    repel = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "zone"}
    ]}}  # fmt: skip
    state.apply("PodGroup", pod_group("waits", priority=2))
    waiting = pod("waits-0", group="waits", cpu="2", priority=2, spec={"affinity": repel})
    state.apply("Pod", waiting)
    first = schedule(state, now=NOW, config=CONFIG)
    assert first.carried.kept[GroupKey("default", "waits")].reads is Reads.EVERYTHING
    state.apply("Pod", pod("run-1", group="run", cpu="1", priority=0))
    again = schedule(state, now=NOW + 1, config=CONFIG, carried=first.carried)
    fresh = schedule(state, now=NOW + 1, config=EngineConfig(keep_verdicts=False))
    assert again.verdicts == fresh.verdicts
