"""Why a gang waits: counted on the cluster now, or on the empty one; nodes held once it starves."""

from __future__ import annotations

from muster.scheduler import EngineConfig
from muster.scheduler.cycle import refusal
from muster.scheduler.cycle.board import Board
from muster.scheduler.cycle.queue import Gang, gangs_of
from muster.scheduler.decisions.results import Reason
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=60.0)


def waiting_gang(*objects: Obj) -> tuple[Board, Gang, refusal.Attempt]:
    state = cluster(*objects)
    (waiting,) = gangs_of(state, NOW)
    board = Board(state, CONFIG)
    shapes, interplay = board.shapes(waiting.pending, waiting.record)
    placement = board.fit(board.free, waiting, shapes, waiting.missing, interplay=interplay)
    return board, waiting, refusal.Attempt(shapes, interplay, placement)


def test_a_gang_that_fits_the_empty_cluster_is_not_never() -> None:
    board, waiting, _ = waiting_gang(
        node("n1", cpu="4"), pod("busy", cpu="4", node_name="n1"), *gang("g", 1, cpu="4")
    )
    assert refusal.never(board, waiting) is None


def test_a_gang_too_large_for_any_node_is_told_so_and_holds_nothing() -> None:
    board, waiting, now_tried = waiting_gang(node("n1", cpu="4"), *gang("g", 1, cpu="8"))
    never = refusal.never(board, waiting)
    assert never is not None
    verdict = refusal.refuse(
        board, waiting, now_tried, 1, never=never, preemption_tried=False, waited=1e6, config=CONFIG
    )
    assert verdict.reason is Reason.UNSCHEDULABLE
    assert verdict.explanation is not None and verdict.explanation.never
    assert verdict.message.startswith("it does not fit even on an empty cluster")
    assert not board.closed_for_older.any()


def test_a_starving_gang_closes_the_nodes_it_would_use_to_the_gangs_behind_it() -> None:
    board, waiting, now_tried = waiting_gang(
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        pod("busy", cpu="2", node_name="n1"),
        pod("other", cpu="2", node_name="n2"),
        *gang("g", 2, cpu="4"),
    )
    patient = refusal.refuse(
        board, waiting, now_tried, 1, never=None, preemption_tried=False, waited=10.0, config=CONFIG
    )
    assert "closing nodes" not in patient.message and not board.closed_for_older.any()
    starving = refusal.refuse(
        board, waiting, now_tried, 1, never=None, preemption_tried=False, waited=61.0, config=CONFIG
    )
    assert "(2 node(s) closed to the gangs behind it)" in starving.message
    assert board.closed_for_older.all()
