"""`ClusterState.copy`: a what-if run changes its copy, never the original."""

from __future__ import annotations

from muster.api.keys import PodKey
from muster.scheduler import ClusterState, EngineConfig, schedule
from tests.unit.scheduler.builders import cluster, gang, node, pod


def _state() -> ClusterState:
    return cluster(
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        pod("web", node_name="n1", cpu="2", labels={"app": "web"}),
        *gang("g", 2, cpu="2"),
    )


def test_the_copy_has_every_part_of_the_state() -> None:
    state = _state()
    assert set(vars(state.copy())) == set(vars(state))


def test_changing_the_copy_leaves_the_original_as_it_was() -> None:
    state = _state()
    before = schedule(state, now=0.0, config=EngineConfig())
    held = state.taken.copy()
    twin = state.copy()
    twin.delete("Pod", "default", "web")
    twin.apply("Pod", pod("db", node_name="n2", cpu="4"))
    twin.delete("Node", "", "n1")
    assert PodKey("default", "web") in state.pods
    assert PodKey("default", "db") not in state.pods
    assert (state.taken == held).all()
    assert sorted(state.placed.groups) != sorted(twin.placed.groups)
    assert schedule(state, now=0.0, config=EngineConfig()) == before
