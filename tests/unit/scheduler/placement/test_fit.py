"""Best-fit placement of shapes onto free capacity."""

from __future__ import annotations

import numpy as np

from muster.scheduler.placement.fit import (
    NodeOrder,
    Shape,
    copies_per_node,
    place_gang,
    place_greedily,
)
from muster.scheduler.state.predicates import PASSES, StaticFilter

# columns: pods, cpu (millicores), gpu
FREE = np.array(
    [
        [10, 8000, 0],  # n0: a CPU node with room for eight 1-core pods
        [10, 2000, 0],  # n1: room for two
        [10, 8000, 4],  # n2: a GPU node
    ],
    dtype=np.int64,
)
EVERYWHERE = np.ones(3, dtype=np.bool_)
ORDER = NodeOrder(name_rank=np.arange(3, dtype=np.int32), scarce_columns=(2,))
LARGEST = FREE.max(axis=0)


def shape(cpu: int, gpu: int, count: int, allowed: list[bool] | None = None) -> Shape:
    mask = np.array(allowed or [True] * 3, dtype=np.bool_)
    rules = StaticFilter(mask, np.where(mask, PASSES, 0).astype(np.int32), ("excluded",))
    pods = tuple(f"p{cpu}-{gpu}-{index}" for index in range(count))
    return Shape(np.array([1, cpu, gpu], dtype=np.int64), rules, pods)


def test_copies_per_node_is_the_tightest_resource() -> None:
    copies = copies_per_node(FREE, np.array([1, 1000, 1]), EVERYWHERE)
    assert copies.tolist() == [0, 0, 4]
    assert copies_per_node(
        FREE, np.array([1, 3000, 0]), np.array([True, True, False])
    ).tolist() == [2, 0, 0]


def test_copies_never_go_negative_on_overcommitted_nodes() -> None:
    overcommitted = np.array([[1, -500, 0]], dtype=np.int64)
    assert copies_per_node(
        overcommitted, np.array([1, 100, 0]), np.ones(1, dtype=np.bool_)
    ).tolist() == [0]


def test_the_fullest_node_is_filled_first() -> None:
    placed = place_greedily(FREE, [shape(1000, 0, 3)], EVERYWHERE, ORDER, limit=3)
    assert sorted(placed.values()) == [0, 1, 1]


def test_pods_without_gpus_avoid_gpu_nodes() -> None:
    placed = place_greedily(FREE, [shape(1000, 0, 10)], EVERYWHERE, ORDER, limit=10)
    assert sorted(placed.values()) == [0] * 8 + [1, 1]


def test_placement_never_overcommits_and_respects_the_limit() -> None:
    free = FREE.copy()
    gpu_pods = shape(3000, 1, 9)
    placed = place_greedily(free, [gpu_pods], EVERYWHERE, ORDER, limit=9)
    assert sorted(placed.values()) == [2, 2]  # cpu, not gpus, is short on n2
    assert (free == FREE).all()  # the caller's view is not touched
    assert len(place_greedily(free, [gpu_pods], EVERYWHERE, ORDER, limit=1)) == 1


def test_largest_shapes_go_first() -> None:
    big, small = shape(4000, 0, 2), shape(2000, 0, 2)
    placed = place_gang(
        FREE, [small, big], within=EVERYWHERE, order=ORDER, largest=LARGEST, needed=4
    )
    assert len(placed) == 4


def test_disallowed_nodes_take_nothing() -> None:
    only_n1 = shape(1000, 0, 5, allowed=[False, True, False])
    placed = place_greedily(FREE, [only_n1], EVERYWHERE, ORDER, limit=5)
    assert sorted(placed.values()) == [1, 1]
