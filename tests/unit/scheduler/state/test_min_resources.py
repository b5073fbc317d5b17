"""The advisory precheck of an adopted PodGroup's minResources."""

from __future__ import annotations

from muster.scheduler.state.intake import NodeRecord
from muster.scheduler.state.min_resources import beyond_cluster, schedulable_allocatable


def node(name: str, cpu: int, gpus: int = 0, *, cordoned: bool = False) -> NodeRecord:
    allocatable = {"cpu": cpu, "pods": 110} | ({"nvidia.com/gpu": gpus} if gpus else {})
    return NodeRecord(
        name=name,
        allocatable=tuple(sorted(allocatable.items())),
        labels={},
        taints=(),
        unschedulable=cordoned,
    )


def test_the_schedulable_nodes_are_summed_and_cordoned_ones_left_out() -> None:
    nodes = [node("a", 4000, 2), node("b", 2000), node("c", 8000, 8, cordoned=True)]
    assert schedulable_allocatable(nodes) == {"cpu": 6000, "pods": 220, "nvidia.com/gpu": 2}


def test_an_ask_the_cluster_could_hold_says_nothing() -> None:
    assert beyond_cluster({"cpu": "6", "memory": "0"}, {"cpu": 6000}) is None


def test_an_ask_beyond_the_sum_names_each_resource_over() -> None:
    message = beyond_cluster(
        {"cpu": "6500m", "nvidia.com/gpu": 4, "pods": "3"}, {"cpu": 6000, "pods": 220}
    )
    assert message is not None
    assert "cpu 6500m > 6" in message and "nvidia.com/gpu 4 > 0" in message
    assert "pods 3" not in message and "advisory" in message


def test_what_cannot_be_read_is_no_verdict() -> None:
    assert beyond_cluster(None, {}) is None
    assert beyond_cluster("4", {}) is None
    assert beyond_cluster({"cpu": "lots"}, {}) is None
