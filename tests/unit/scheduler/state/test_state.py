"""The cluster state: incremental capacity accounting, reservations, tolerant intake."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.api.priority import resolve_priority
from muster.scheduler.state.state import ClusterState
from tests.unit.scheduler.builders import cluster, node, pod, pod_group, priority_class


def held(state: ClusterState, node_name: str, resource: str = "cpu") -> int:
    slot = state.node_slot(node_name)
    assert slot is not None
    return int(state.taken[slot, state.resource_names.index(resource)])


def test_bound_pods_hold_their_node_until_deleted() -> None:
    state = ClusterState()
    state.apply("Node", node("n1"))
    state.apply("Pod", pod("a", cpu="1500m", node_name="n1"))
    state.apply("Pod", pod("b", cpu="500m", node_name="n1"))
    assert held(state, "n1") == 2000
    assert held(state, "n1", "pods") == 2
    state.delete("Pod", "default", "a")
    assert held(state, "n1") == 500


def test_reapplying_a_pod_replaces_its_old_hold() -> None:
    state = ClusterState()
    state.apply("Node", node("n1"))
    state.apply("Node", node("n2"))
    state.apply("Pod", pod("a", cpu="2", node_name="n1"))
    state.apply("Pod", pod("a", cpu="2", node_name="n1"))
    assert held(state, "n1") == 2000
    state.apply("Pod", pod("a", cpu="3", node_name="n2"))
    assert (held(state, "n1"), held(state, "n2")) == (0, 3000)


def test_finished_pods_hold_nothing() -> None:
    state = ClusterState()
    state.apply("Node", node("n1"))
    state.apply("Pod", pod("a", node_name="n1"))
    state.apply("Pod", pod("a", node_name="n1", phase="Succeeded"))
    assert held(state, "n1") == 0
    state.apply("Pod", pod("b", node_name="n1", phase="Failed"))
    assert held(state, "n1") == 0


def test_pods_seen_before_their_node_count_once_it_arrives() -> None:
    state = ClusterState()
    state.apply("Pod", pod("a", cpu="2", node_name="late"))
    state.apply("Node", node("late"))
    assert held(state, "late") == 2000
    state.delete("Node", "", "late")
    state.apply("Node", node("late"))
    assert held(state, "late") == 2000


def test_extended_resources_get_their_own_column() -> None:
    state = ClusterState()
    state.apply("Node", node("gpu", gpu="8"))
    state.apply("Pod", pod("a", gpu="3", node_name="gpu"))
    assert held(state, "gpu", "nvidia.com/gpu") == 3
    slot = state.node_slot("gpu")
    assert slot is not None
    assert state.allocatable[slot, state.resource_names.index("nvidia.com/gpu")] == 8


def test_an_admitted_plan_reserves_capacity_until_its_pods_bind() -> None:
    state = ClusterState()
    state.apply("Node", node("n1"))
    state.apply("Pod", pod("w0", group="g", cpu="2"))
    assert held(state, "n1") == 0
    state.apply("PodGroup", pod_group("g", min_count=1, admitted=True, plan={"w0": "n1"}))
    assert held(state, "n1") == 2000
    state.apply("Pod", pod("w0", group="g", cpu="2", node_name="n1"))
    assert held(state, "n1") == 2000
    state.apply("Pod", pod("w0", group="g", cpu="2", gated=False))
    state.delete("PodGroup", "default", "g")
    assert held(state, "n1") == 0


def reserved(state: ClusterState, node_name: str) -> int:
    slot = state.node_slot(node_name)
    assert slot is not None
    return int(state.reserved()[slot, state.resource_names.index("cpu")])


def test_what_a_plan_reserves_is_told_from_what_bound_pods_take() -> None:
    state = ClusterState()
    state.apply("Node", node("n1"))
    state.apply("Pod", pod("other", cpu="1", node_name="n1"))
    state.apply("Pod", pod("w0", group="g", cpu="2"))
    state.apply("PodGroup", pod_group("g", min_count=1, admitted=True, plan={"w0": "n1"}))
    assert (held(state, "n1"), reserved(state, "n1")) == (3000, 2000)
    [entry] = [entry for key, entry in state.pods.items() if key.name == "w0"]
    assert entry.reserved_on == "n1"
    state.apply("Pod", pod("w0", group="g", cpu="2", node_name="n1"))
    assert (held(state, "n1"), reserved(state, "n1")) == (3000, 0)


def test_a_plan_without_admission_reserves_nothing() -> None:
    state = ClusterState()
    state.apply("Node", node("n1"))
    state.apply("Pod", pod("w0", group="g", cpu="2"))
    state.apply("PodGroup", pod_group("g", plan={"w0": "n1"}))
    assert held(state, "n1") == 0


def test_odd_objects_are_recorded_and_skipped() -> None:
    state = ClusterState()
    state.apply("Node", node("n1"))
    state.apply("Pod", pod("a", node_name="n1"))
    reason = state.apply("Pod", pod("a", cpu="lots", node_name="n1")).rejected
    assert reason is not None and "lots" in reason
    assert held(state, "n1") == 0
    assert ("Pod", "default", "a") in state.rejected
    assert state.apply("Pod", pod("a", node_name="n1")).rejected is None
    assert state.rejected == {}
    for odd in (None, {}, {"metadata": {"name": 3}}, {"metadata": {"name": "x"}, "spec": []}):
        assert state.apply("Pod", odd).rejected is not None  # type: ignore[arg-type]
        assert state.apply("Node", odd).rejected is not None  # type: ignore[arg-type]
        assert state.apply("PodGroup", odd).rejected is not None  # type: ignore[arg-type]
    assert state.apply("PodGroup", pod_group("bad", min_count=0)).rejected is not None


def test_priority_comes_from_the_pod_then_its_class_then_the_global_default() -> None:
    state = ClusterState()
    state.apply("Pod", pod("explicit", priority=7, priority_class="high"))
    state.apply("Pod", pod("classed", priority_class="high"))
    state.apply("Pod", pod("plain"))
    state.apply("PriorityClass", priority_class("high", 1000))
    state.apply("PriorityClass", priority_class("default", 5, global_default=True))
    priorities = {key.name: entry.priority for key, entry in state.pods.items()}
    assert priorities == {"explicit": 7, "classed": 1000, "plain": 5}
    state.delete("PriorityClass", "", "default")
    assert state.pods[next(k for k in state.pods if k.name == "plain")].priority == 0


def test_of_several_global_defaults_the_lowest_applies_as_in_admission() -> None:
    classes = [
        priority_class("low", 5, global_default=True),
        priority_class("high", 50, global_default=True),
    ]
    state = cluster(*classes, pod("plain"))
    [entry] = state.pods.values()
    assert entry.priority == 5
    assert resolve_priority({}, classes).priority_class_name == "low"


EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["node", "delete-node", "pod", "delete-pod", "group", "delete-group"]),
        st.integers(0, 3),
        st.integers(0, 3),
        st.booleans(),
    ),
    max_size=40,
)


def _apply(state: ClusterState, event: tuple[str, int, int, bool]) -> None:
    kind, first, second, flag = event
    if kind == "node":
        state.apply("Node", node(f"n{first}", cpu=str(4 + second)))
    elif kind == "delete-node":
        state.delete("Node", "", f"n{first}")
    elif kind == "pod":
        state.apply(
            "Pod",
            pod(
                f"p{first}",
                group="g" if flag else None,
                cpu=f"{second + 1}00m",
                node_name=f"n{second}" if second % 2 else None,
                phase="Succeeded" if second == 3 else None,
            ),
        )
    elif kind == "delete-pod":
        state.delete("Pod", "default", f"p{first}")
    elif kind == "group":
        plan = {f"p{index}": f"n{(index + second) % 4}" for index in range(4)}
        state.apply("PodGroup", pod_group("g", admitted=flag, plan=plan))
    else:
        state.delete("PodGroup", "default", "g")


def _latest(events: list[tuple[str, int, int, bool]]) -> list[tuple[str, int, int, bool]]:
    """The last event per object, skipping objects whose last event deleted them."""
    last: dict[tuple[str, int], tuple[str, int, int, bool]] = {}
    for event in events:
        kind, first, _, _ = event
        obj = kind.removeprefix("delete-")
        last[(obj, first if obj != "group" else 0)] = event
    return [event for event in last.values() if not event[0].startswith("delete")]


@settings(max_examples=150, deadline=None)
@given(EVENTS)
def test_incremental_accounting_matches_a_fresh_build(
    events: list[tuple[str, int, int, bool]],
) -> None:
    """Whatever the order of events, held capacity equals a state built from the end result."""
    live = ClusterState()
    for event in events:
        _apply(live, event)
    fresh = ClusterState()
    for event in _latest(events):
        _apply(fresh, event)
    for name in live.node_names():
        for resource in live.resource_names:
            assert held(live, name, resource) == held(fresh, name, resource)


def test_host_ports_are_tracked_where_pods_hold_them() -> None:
    ported = {"containers": [{"name": "c", "ports": [{"containerPort": 22, "hostPort": 22}]}]}
    state = ClusterState()
    state.apply("Node", node("n1"))
    state.apply("Pod", pod("a", node_name="n1", spec=ported))
    state.apply("Pod", pod("b", node_name="n1", spec=ported))
    assert state.host_ports == {("TCP", 22): {"n1": 2}}
    state.delete("Pod", "default", "a")
    state.apply("Pod", pod("b", node_name="n1", spec=ported, phase="Succeeded"))
    assert state.host_ports == {}


def test_the_schedulable_allocatable_sums_the_nodes_present_and_not_cordoned() -> None:
    state = ClusterState()
    state.apply("Node", node("a", cpu="4", gpu="8"))
    state.apply("Node", node("b", cpu="2"))
    state.apply("Node", node("cordoned", cpu="64", gpu="8", unschedulable=True))
    state.apply("Node", node("gone", cpu="16"))
    state.delete("Node", "", "gone")
    total = state.schedulable_allocatable()
    assert (total["cpu"], total["nvidia.com/gpu"], total["pods"]) == (6000, 8, 220)
