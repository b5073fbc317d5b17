"""Cycles with a refusal memory: refused nodes left out, no plan after max rollbacks."""

from __future__ import annotations

from typing import Any

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import Reason
from muster.scheduler.memory.refusals import RefusalMemory, Refused, after_rollback, to_status
from muster.scheduler.rules.filters import REFUSED
from muster.scheduler.state.state import ClusterState
from tests.unit.scheduler.builders import cluster, gang, node, pod, pod_group

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12, max_rollbacks=3)
GANG = GroupKey("default", "g")
NODES = (node("n1", gpu="4"), node("n2", gpu="4"), node("n3", gpu="4"))


def remembering(state: ClusterState, *refused: str, rollbacks: int = 1) -> RefusalMemory:
    """Give the gang's PodGroup a memory of refusals on these nodes, learnt now."""
    learnt = None
    digest = state.node_table().digest()
    for _ in range(rollbacks):
        items = [Refused("g-0", name, f"refused on {name}") for name in refused]
        learnt = after_rollback(learnt, items, node_set=digest)
    assert learnt is not None
    group: dict[str, Any] = pod_group("g", min_count=2)
    group["status"]["refusals"] = to_status(learnt)
    assert state.apply("PodGroup", group).rejected is None
    return learnt


def test_the_refused_node_is_left_out_of_the_next_plan() -> None:
    state = cluster(*NODES, *gang("g", 2, min_count=2, gpu="2"))
    assert set(schedule(state, now=NOW, config=CONFIG).admissions[0].placements.values()) == {"n1"}
    remembering(state, "n1")
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert set(admission.placements.values()) == {"n2"}


def test_a_memory_learnt_on_another_node_set_is_ignored() -> None:
    state = cluster(*NODES, *gang("g", 2, min_count=2, gpu="2"))
    remembering(state, "n1", rollbacks=3)
    state.apply("Node", node("n1", gpu="4", labels={"fixed": "yes"}))  # relabelled
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert set(admission.placements.values()) == {"n1"}


def test_when_only_refused_nodes_would_fit_the_verdict_says_so() -> None:
    state = cluster(node("n1", gpu="4"), node("n2", gpu="4"), *gang("g", 2, min_count=2, gpu="4"))
    remembering(state, "n1", "n2")
    verdict = schedule(state, now=NOW, config=CONFIG).verdicts[GANG]
    assert verdict.reason == Reason.UNSCHEDULABLE
    assert f"2 {REFUSED}" in verdict.message


def test_after_max_rollbacks_in_a_row_the_gang_gets_no_plan() -> None:
    state = cluster(*NODES, *gang("g", 2, min_count=2, gpu="2"))
    remembering(state, "n1", rollbacks=3)
    result = schedule(state, now=NOW, config=CONFIG)
    assert not result.admissions
    verdict = result.verdicts[GANG]
    assert verdict.reason == Reason.UNSCHEDULABLE
    assert "refused its released pods in 3 rollbacks in a row" in verdict.message
    assert 'pod g-0 on node n1: "refused on n1"' in verdict.message
    assert "until a node is added, removed or changed" in verdict.message


def test_fewer_rollbacks_or_no_limit_keep_planning() -> None:
    state = cluster(*NODES, *gang("g", 2, min_count=2, gpu="2"))
    remembering(state, "n1", rollbacks=2)
    assert schedule(state, now=NOW, config=CONFIG).admissions
    remembering(state, "n1", rollbacks=5)
    unlimited = EngineConfig(starvation_seconds=10**12, max_rollbacks=0)
    (admission,) = schedule(state, now=NOW, config=unlimited).admissions
    assert set(admission.placements.values()) == {"n2"}


def test_a_node_added_lifts_the_hold() -> None:
    state = cluster(*NODES, *gang("g", 2, min_count=2, gpu="2"))
    remembering(state, "n1", rollbacks=3)
    state.apply("Node", node("n4", gpu="4"))
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert set(admission.placements.values()) == {"n1"}  # the memory is forgotten too


def test_growth_of_an_admitted_gang_avoids_the_refused_nodes() -> None:
    def admitted_gang() -> ClusterState:
        return cluster(
            node("n1", gpu="4"),
            node("n2", gpu="4"),
            pod_group("g", min_count=1, admitted=True, plan={"g-0": "n1"}),
            pod("g-0", group="g", gpu="1", node_name="n1"),
            pod("g-1", group="g", gpu="1"),
        )

    (growth,) = schedule(admitted_gang(), now=NOW, config=CONFIG).growths
    assert growth.placements == {"g-1": "n1"}  # best fit: the fuller node
    state = admitted_gang()
    digest = state.node_table().digest()
    group = pod_group("g", min_count=1, admitted=True, plan={"g-0": "n1"})
    refused = [Refused("g-1", "n1", "no")]
    group["status"]["refusals"] = to_status(after_rollback(None, refused, node_set=digest))
    assert state.apply("PodGroup", group).rejected is None
    (growth,) = schedule(state, now=NOW, config=CONFIG).growths
    assert growth.placements == {"g-1": "n2"}
