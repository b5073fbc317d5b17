"""Filling a wider domain one narrower domain at a time: the roomiest first, the rest tightest."""

from __future__ import annotations

import numpy as np

from muster.scheduler.placement.filling import fill_cost
from muster.scheduler.placement.fit import Shape
from muster.scheduler.state.predicates import StaticFilter


def costs(free_per_node: list[int], racks: list[int], needed: int) -> list[int]:
    """Node costs for single-CPU pods on nodes with `free_per_node` CPUs, in `racks`."""
    count = len(free_per_node)
    free = np.array([[cpu] for cpu in free_per_node], dtype=np.int64)
    within = np.ones(count, dtype=np.bool_)
    rules = StaticFilter(within, np.full(count, -1, dtype=np.int32), ())
    shape = Shape(np.array([1], dtype=np.int64), rules, tuple(f"p{i}" for i in range(needed)))
    inner = np.array(racks, dtype=np.int32)
    cost = fill_cost(free, [shape], within, inner=inner, inner_count=max(racks) + 1, needed=needed)
    return [int(value) for value in cost]


def test_the_roomiest_domain_first_then_the_tightest_that_holds_the_rest() -> None:
    # racks 0..3 hold 2, 4, 1, 4 pods; 5 are needed: rack 1 (4, the lower id of the
    # two roomiest), then rack 2, the tightest holding the 1 left; the others after.
    assert costs([1, 1, 2, 2, 1, 2, 2], [0, 0, 1, 1, 2, 3, 3], 5) == [3, 3, 0, 0, 1, 2, 2]


def test_a_gang_one_domain_holds_goes_to_the_tightest_such_domain() -> None:
    assert costs([3, 2, 3, 4], [0, 1, 1, 2], 4) == [2, 1, 1, 0]


def test_nodes_of_no_narrower_domain_and_domains_without_room_come_last() -> None:
    assert costs([2, 0, 2], [0, 1, -1], 2) == [0, 2, 2]
