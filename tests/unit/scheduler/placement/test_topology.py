"""Domain choice for gangs with a topology key."""

from __future__ import annotations

import numpy as np

from muster.scheduler.decisions.results import DomainFit
from muster.scheduler.placement.fit import NodeOrder, Shape
from muster.scheduler.placement.request import FitRequest
from muster.scheduler.placement.topology import (
    BoolArray,
    Domains,
    GangPlacement,
    fit_anywhere,
    fit_in_one,
)
from muster.scheduler.state.predicates import StaticFilter
from tests.unit.scheduler.builders import node, node_table

TABLE = node_table(
    node("a1", labels={"zone": "a"}),
    node("a2", labels={"zone": "a"}),
    node("b1", labels={"zone": "b"}),
    node("x1"),
)
# columns: pods, cpu
FREE = np.array([[10, 4000], [10, 4000], [10, 3000], [10, 8000]], dtype=np.int64)
ORDER = NodeOrder(TABLE.name_rank, ())
EVERYWHERE = np.ones(4, dtype=np.bool_)


def gang(count: int) -> list[Shape]:
    allowed = np.ones(4, dtype=np.bool_)
    rules = StaticFilter(allowed, np.full(4, -1, dtype=np.int32), ())
    return [Shape(np.array([1, 1000]), rules, tuple(f"p{i}" for i in range(count)))]


def in_zone(count: int, within: BoolArray | None = None) -> GangPlacement:
    request = FitRequest(
        FREE,
        gang(count),
        EVERYWHERE if within is None else within,
        ORDER,
        FREE.max(axis=0),
        needed=count,
    )
    return fit_in_one(request, Domains.of(TABLE.labels, "zone"))


def test_the_fullest_domain_that_fits_is_chosen() -> None:
    placement = in_zone(3)
    assert placement.domain == "b"
    assert set(placement.placements.values()) == {2}


def test_a_larger_gang_goes_to_the_domain_with_room() -> None:
    placement = in_zone(5)
    assert placement.domain == "a"


def test_unlabelled_nodes_are_never_used() -> None:
    placement = in_zone(9)
    assert placement.placements == {}
    assert placement.fits == (DomainFit("zone=a", 8), DomainFit("zone=b", 3))
    assert placement.best_fit == 8


def test_excluded_nodes_shrink_the_domain() -> None:
    placement = in_zone(5, within=np.array([False, True, True, True]))
    assert placement.placements == {}


def test_without_a_key_the_whole_cluster_is_one_domain() -> None:
    placement = fit_anywhere(FitRequest(FREE, gang(12), EVERYWHERE, ORDER, FREE.max(axis=0), 12))
    assert len(placement.placements) == 12
    assert placement.fits == (DomainFit("cluster", 12),)
