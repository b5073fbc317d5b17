"""Why a gang waits: counted on the cluster now, or on the empty one; nodes held once it starves."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.cycle import refusal
from muster.scheduler.cycle.board import Board
from muster.scheduler.cycle.queue import Gang, gangs_of
from muster.scheduler.decisions.results import Reason, Verdict
from muster.scheduler.placement.exhaustive import MAX_PODS
from muster.scheduler.placement.explain import NEVER_FITS
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod
from tests.unit.scheduler.device_builders import (
    claim_template,
    device_class,
    from_template,
    request,
    resource_slice,
)

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=60.0)


def waiting_gang(*objects: Obj) -> tuple[Board, Gang, refusal.Attempt]:
    state = cluster(*objects)
    (waiting,) = gangs_of(state, NOW)
    board = Board(state, CONFIG)
    shapes, interplay = board.shapes(waiting.pending, waiting.record)
    placement = board.fit(
        waiting, board.request(waiting, shapes, interplay, needed=waiting.missing)
    )
    return board, waiting, refusal.Attempt(shapes, interplay, placement)


def refuse(
    board: Board,
    gang: Gang,
    tried: refusal.Tried,
    *,
    position: int,
    waited: float,
    config: EngineConfig,
) -> Verdict:
    """The refusal as a cycle decides it: why, then the nodes it closes if it starves."""
    told = refusal.told_why(board, gang, tried, position=position)
    if not refusal.starving(told, waited, config):
        return told
    return refusal.starved(board, told, waited, refusal.close_nodes(board, gang, tried.now))


def test_a_gang_that_fits_the_empty_cluster_is_not_never() -> None:
    board, waiting, _ = waiting_gang(
        node("n1", cpu="4"), pod("busy", cpu="4", node_name="n1"), *gang("g", 1, cpu="4")
    )
    assert refusal.never(board, waiting) is None


def test_a_gang_too_large_for_any_node_is_told_so_and_holds_nothing() -> None:
    board, waiting, now_tried = waiting_gang(node("n1", cpu="4"), *gang("g", 1, cpu="8"))
    never = refusal.never(board, waiting)
    assert never is not None
    verdict = refuse(
        board,
        waiting,
        refusal.Tried(now_tried, never, preemption=False),
        position=1,
        waited=1e6,
        config=CONFIG,
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
    patient = refuse(
        board,
        waiting,
        refusal.Tried(now_tried, None, preemption=False),
        position=1,
        waited=10.0,
        config=CONFIG,
    )
    assert "closing nodes" not in patient.message and not board.closed_for_older.any()
    starving = refuse(
        board,
        waiting,
        refusal.Tried(now_tried, None, preemption=False),
        position=1,
        waited=61.0,
        config=CONFIG,
    )
    assert "(2 node(s) closed to the gangs behind it)" in starving.message
    assert board.closed_for_older.all()


def test_a_gang_whose_pods_are_still_arriving_is_not_told_it_never_fits() -> None:
    """Two of a gang's pods, created a second ago, fit no node; more may be on their
    way. It is told why as of the cluster now, and decided again once its pods have
    stopped arriving: then, if nothing came, that it never fits."""
    created = datetime.fromtimestamp(NOW - 1, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    members = gang("g", 2, min_count=2, cpu="3")
    for member in members[1:]:
        member["metadata"]["creationTimestamp"] = created
    state = cluster(node("n1", cpu="4"), *members)
    config = EngineConfig(arrival_grace=10.0)
    soon = schedule(state, now=NOW, config=config)
    verdict = soon.verdicts[GroupKey("default", "g")]
    assert verdict.explanation is not None and not verdict.explanation.never
    assert not verdict.message.startswith(NEVER_FITS)
    assert soon.plan.wake_at == NOW - 1 + 10.0
    later = schedule(state, now=NOW + 10.0, config=config)
    assert later.verdicts[GroupKey("default", "g")].message.startswith(NEVER_FITS)


@pytest.mark.parametrize(("size", "never"), [(16, True), (17, False)])
def test_never_is_said_only_where_the_search_could_prove_it(size: int, never: bool) -> None:
    """A gang of two shapes, each pod of one with a GPU claim of its own, on a node with
    one GPU: no placement exists. Up to `MAX_PODS` pods the search proves it, and the
    gang is told it never fits; beyond, it cannot tell, and the gang is not told so."""
    claims = [*gang("g", size, min_count=2 * size, cpu="1", spec=from_template("one"))]
    for member in claims[1:]:
        member["metadata"]["name"] = member["metadata"]["name"].replace("g-", "g-own-")
    plain = gang("g", size, cpu="1")[1:]
    state = cluster(
        node("n1", cpu="64"),
        device_class(),
        resource_slice("n1", 1),
        claim_template("one", request()),
        *claims,
        *plain,
    )
    assert (2 * size <= MAX_PODS) is never
    result = schedule(state, now=NOW, config=CONFIG)
    message = result.verdicts[GroupKey("default", "g")].message
    assert message.startswith(NEVER_FITS) is never
