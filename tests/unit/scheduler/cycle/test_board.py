"""A cycle's working view: shapes of a gang's pods, fits, and capacity taken as it goes."""

from __future__ import annotations

from dataclasses import replace

from muster.scheduler import EngineConfig
from muster.scheduler.cycle.board import Board
from muster.scheduler.cycle.queue import Gang, gangs_of
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod

NOW = 1_798_761_600.0
CONFIG = EngineConfig()


def only_gang(*objects: Obj) -> tuple[Board, Gang]:
    state = cluster(*objects)
    (waiting,) = gangs_of(state, NOW)
    return Board(state, CONFIG), waiting


def test_pods_alike_are_one_shape_and_the_largest_shape_comes_first() -> None:
    board, waiting = only_gang(
        node("n1", cpu="8"),
        *gang("g", 2, cpu="1"),
        pod("g-big", group="g", cpu="4"),
    )
    shapes, interplay = board.shapes(waiting.pending, waiting.record)
    assert [shape.pods for shape in shapes] == [("g-big",), ("g-0", "g-1")]
    assert interplay is None


def test_a_placement_taken_is_gone_for_the_gangs_decided_after() -> None:
    board, waiting = only_gang(node("n1", cpu="4"), node("n2", cpu="4"), *gang("g", 2, cpu="3"))
    shapes, _ = board.shapes(waiting.pending, waiting.record)
    placement = board.fit(waiting, board.request(waiting, shapes, None, needed=waiting.missing))
    assert sorted(board.node_names(placement.placements).values()) == ["n1", "n2"]
    board.take(waiting, placement.placements)
    request = board.request(waiting, shapes, None, needed=waiting.missing)
    assert not board.fit(waiting, request).placements
    assert board.fit(waiting, replace(request, free=board.capacity)).placements


def test_nodes_closed_for_older_gangs_are_out_of_reach() -> None:
    board, waiting = only_gang(node("n1", cpu="4"), *gang("g", 1, cpu="1"))
    shapes, _ = board.shapes(waiting.pending, waiting.record)
    board.closed_for_older[:] = True
    request = board.request(waiting, shapes, None, needed=waiting.missing)
    assert not board.fit(waiting, request).placements
