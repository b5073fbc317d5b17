"""Gangs that all fit in one cycle are placed the largest first when that leaves more whole."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import CycleResult
from tests.unit.scheduler.builders import Obj, cluster, gang, node

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12, topology_levels=("block", "rack"))
# three racks of two nodes of 8 GPUs
RACKS = {"n0": "r0", "n1": "r0", "n2": "r1", "n3": "r1", "n4": "r2", "n5": "r2"}


def nodes() -> list[Obj]:
    return [
        node(name, cpu="64", gpu="8", labels={"block": "b", "rack": rack})
        for name, rack in RACKS.items()
    ]


def burst(*shapes: tuple[int, int]) -> list[Obj]:
    """Gangs g0, g1, ... (created in that order) of (pods, GPUs a pod), preferring a rack."""
    objects: list[Obj] = []
    for number, (size, gpus) in enumerate(shapes):
        objects += gang(
            f"g{number}",
            size,
            cpu="1",
            gpu=str(gpus),
            preferred_key="rack",
            created=f"2026-01-01T00:00:0{number}Z",
        )
    return objects


def racks_touched(result: CycleResult) -> set[str]:
    return {RACKS[node] for a in result.admissions for node in a.placements.values()}


def test_a_burst_that_fits_is_placed_the_largest_first_and_leaves_a_rack_whole() -> None:
    # In queue order the small gangs take corners of two racks and the last gang a
    # third; the largest first, all four fit in two racks.
    result = schedule(
        cluster(*nodes(), *burst((3, 2), (2, 2), (2, 4), (3, 4))), now=NOW, config=CONFIG
    )
    assert [a.group.name for a in result.admissions] == ["g3", "g2", "g0", "g1"]
    assert racks_touched(result) == {"r0", "r1"}
    assert all(a.domain is not None and a.domain[0] == "rack" for a in result.admissions)


def test_when_a_gang_does_not_fit_the_queue_order_stands() -> None:
    # g2 asks for more than is left: the cycle is crowded, so who goes first is the
    # queue's to say, and g0 and g1 are placed in its order.
    result = schedule(cluster(*nodes(), *burst((1, 2), (2, 8), (6, 8))), now=NOW, config=CONFIG)
    assert [a.group.name for a in result.admissions] == ["g0", "g1"]
    assert GroupKey("default", "g2") in result.verdicts


def test_when_the_largest_first_leaves_no_more_whole_the_queue_order_stands() -> None:
    # Either way one rack and three nodes stay whole: nothing to gain by reordering.
    result = schedule(cluster(*nodes(), *burst((1, 2), (2, 8))), now=NOW, config=CONFIG)
    assert [a.group.name for a in result.admissions] == ["g0", "g1"]
    assert racks_touched(result) == {"r0", "r1"}
