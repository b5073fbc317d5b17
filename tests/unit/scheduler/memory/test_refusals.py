"""The refusal memory: read leniently from status, updated by rollbacks and success."""

from __future__ import annotations

from muster.api.constants import MAX_REFUSAL_MESSAGE, MAX_REFUSED_NODES
from muster.api.podgroup import PodGroupStatus
from muster.scheduler.memory.refusals import (
    NodeRefusal,
    RefusalMemory,
    Refused,
    after_rollback,
    after_success,
    exhausted,
    refusals_from,
    to_status,
)


def memory(*nodes: str, rollbacks: int = 1, node_set: str = "set-a") -> RefusalMemory:
    return RefusalMemory(
        node_set, rollbacks, tuple(NodeRefusal(node, "p", f"no {node}", 1) for node in nodes)
    )


def test_a_first_refusal_starts_the_memory() -> None:
    learnt = after_rollback(None, [Refused("p-0", "n1", "0/2 nodes")], node_set="set-a")
    assert learnt == RefusalMemory("set-a", 1, (NodeRefusal("n1", "p-0", "0/2 nodes", 1),))


def test_each_refused_node_counts_once_per_rollback_and_moves_to_the_end() -> None:
    before = memory("n1", "n2")
    refused = [
        Refused("p-0", "n1", "again"),
        Refused("p-1", "n1", "again"),
        Refused("p-2", "n3", "x"),
    ]
    after = after_rollback(before, refused, node_set="set-a")
    assert after.rollbacks == 2
    assert [(r.node, r.count, r.message) for r in after.nodes] == [
        ("n2", 1, "no n2"),
        ("n1", 2, "again"),
        ("n3", 1, "x"),
    ]


def test_a_memory_learnt_on_another_node_set_is_dropped_first() -> None:
    after = after_rollback(memory("n1", rollbacks=2), [Refused("p", "n2", "m")], node_set="b")
    assert after.node_set == "b" and after.rollbacks == 1
    assert [r.node for r in after.nodes] == ["n2"]


def test_the_memory_is_bounded_to_the_most_recent_nodes_and_short_messages() -> None:
    learnt = None
    for index in range(MAX_REFUSED_NODES + 5):
        refused = [Refused("p", f"n{index}", "m" * (MAX_REFUSAL_MESSAGE * 2))]
        learnt = after_rollback(learnt, refused, node_set="s")
    assert learnt is not None and len(learnt.nodes) == MAX_REFUSED_NODES
    assert learnt.nodes[0].node == "n5" and learnt.nodes[-1].node == f"n{MAX_REFUSED_NODES + 4}"
    assert all(len(r.message) == MAX_REFUSAL_MESSAGE for r in learnt.nodes)
    PodGroupStatus.model_validate({"refusals": to_status(learnt)})  # within the CRD's bounds


def test_binding_completely_ends_the_run_of_rollbacks_but_keeps_the_nodes() -> None:
    settled = after_success(memory("n1", rollbacks=2))
    assert settled is not None and settled.rollbacks == 0 and settled.node_names == {"n1"}
    assert after_success(settled) is None
    assert after_success(None) is None


def test_exhausted_after_max_rollbacks_on_the_same_node_set_only() -> None:
    three = memory("n1", rollbacks=3)
    assert exhausted(three, 3, node_set="set-a")
    assert not exhausted(three, 4, node_set="set-a")
    assert not exhausted(three, 3, node_set="set-b")
    assert not exhausted(three, 0, node_set="set-a")  # 0: no limit
    assert not exhausted(None, 3, node_set="set-a")


def test_the_status_round_trips_and_matches_the_api_model() -> None:
    learnt = memory("n1", "n2", rollbacks=2)
    status = {"refusals": to_status(learnt)}
    assert refusals_from(status) == learnt
    PodGroupStatus.model_validate(status)


def test_a_malformed_memory_is_no_memory() -> None:
    assert refusals_from({}) is None
    assert refusals_from({"refusals": "x"}) is None
    assert refusals_from({"refusals": {"rollbacks": 1}}) is None
    assert refusals_from({"refusals": {"nodeSet": "s", "rollbacks": -1}}) is None
    assert refusals_from({"refusals": {"nodeSet": "s", "nodes": [{"count": 1}]}}) is None
    bad_count = {"nodeSet": "s", "nodes": [{"node": "n1", "count": True}]}
    assert refusals_from({"refusals": bad_count}) is None
    minimal = refusals_from({"refusals": {"nodeSet": "s", "nodes": [{"node": "n1"}]}})
    assert minimal == RefusalMemory("s", 0, (NodeRefusal("n1", "", "", 1),))
