"""Gangs alike (`cycle.alike`): refused as the last of their kind was, only on the same view."""

from __future__ import annotations

from dataclasses import replace

import pytest

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.cycle.board import Board
from muster.scheduler.decisions.results import CycleResult, Reason
from muster.scheduler.state.state import ClusterState
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod

NOW = 1_798_761_600.0
KEPT = EngineConfig(starvation_seconds=10**12)
EVERY = replace(KEPT, keep_verdicts=False)


def created(minute: int) -> str:
    return f"2026-01-01T00:{minute:02d}:00Z"


def both(*objects: Obj) -> tuple[CycleResult, CycleResult]:
    """One cycle with refusals shared by kind, and one deciding every gang afresh."""
    return (
        schedule(cluster(*objects), now=NOW, config=KEPT),
        schedule(cluster(*objects), now=NOW, config=EVERY),
    )


def test_gangs_alike_are_refused_once_and_told_as_if_each_was_decided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    objects = [node("n1", cpu="2")]
    for index, name in enumerate(("a", "b", "c")):
        objects += gang(name, 2, cpu="2", created=created(index))
    decided: list[str] = []
    shapes = Board.shapes

    def counted(board: Board, pending: list[object], group: object, **alone: bool) -> object:
        if not alone:  # `alone`: asked whether it fits the empty cluster
            decided.append(group.key.name)  # type: ignore[attr-defined]
        return shapes(board, pending, group, **alone)  # type: ignore[arg-type]

    monkeypatch.setattr(Board, "shapes", counted)
    kept = schedule(cluster(*objects), now=NOW, config=KEPT)
    assert decided == ["a"]
    decided.clear()
    every = schedule(cluster(*objects), now=NOW, config=EVERY)
    assert decided == ["a", "b", "c"]
    assert dict(kept.verdicts) == dict(every.verdicts)
    positions = [kept.verdicts[GroupKey("default", name)].explanation for name in "abc"]
    assert [explanation.queue_position for explanation in positions if explanation] == [1, 2, 3]


def test_a_view_changed_between_two_alike_decides_the_second_afresh() -> None:
    """`b` fits between them and takes the node `a` was counted on: `c` is told of the
    view that is left, not of `a`'s."""
    objects = [
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        pod("busy", cpu="2", node_name="n2"),
        *gang("a", 2, cpu="3", created=created(0)),
        *gang("b", 1, cpu="4", created=created(1)),
        *gang("c", 2, cpu="3", created=created(2)),
    ]
    kept, every = both(*objects)
    assert [admission.group.name for admission in kept.admissions] == ["b"]
    assert dict(kept.verdicts) == dict(every.verdicts)
    first, last = (kept.verdicts[GroupKey("default", name)] for name in "ac")
    assert first.reason is last.reason is Reason.UNSCHEDULABLE
    assert first.explanation is not None and last.explanation is not None
    assert (first.explanation.best_fit, last.explanation.best_fit) == (1, 0)


def test_gangs_of_other_namespaces_or_priorities_are_not_alike() -> None:
    objects = [node("n1", cpu="2")]
    objects += gang("a", 2, cpu="2", created=created(0))
    objects += gang("b", 2, cpu="2", created=created(1), priority=5)
    kept, every = both(*objects)
    assert dict(kept.verdicts) == dict(every.verdicts)


def test_state_is_not_changed_by_sharing() -> None:
    state: ClusterState = cluster(node("n1", cpu="1"), *gang("a", 2), *gang("b", 2))
    before = dict(state.changed)
    schedule(state, now=NOW, config=KEPT)
    assert dict(state.changed) == before


def test_starving_gangs_alike_close_nodes_as_each_would() -> None:
    """Past starvation, the first closes the nodes it needs, which changes the view: the
    second is decided afresh and finds them closed, and so would every one after it."""
    starving = replace(KEPT, starvation_seconds=60.0)
    objects = [
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        node("n3", cpu="2"),
        pod("busy-1", cpu="2", node_name="n1"),
        pod("busy-2", cpu="2", node_name="n2"),
    ]
    for index, name in enumerate("abcd"):
        objects += gang(name, 2, cpu="2", created=created(index))
    kept = schedule(cluster(*objects), now=NOW, config=starving)
    every = schedule(cluster(*objects), now=NOW, config=replace(starving, keep_verdicts=False))
    assert dict(kept.verdicts) == dict(every.verdicts)
    messages = [kept.verdicts[GroupKey("default", name)].message for name in "abcd"]
    assert "(2 node(s) closed to the gangs behind it)" in messages[0]
    assert all("the nodes it needs are closed for gangs ahead" in said for said in messages[1:])
