"""The feed's board is made in a forked child, on the state as it was at the fork, and
its pages rendered there."""

from __future__ import annotations

from functools import partial

from muster.api.keys import GroupKey
from muster.api.wire import JsonObject
from muster.operator.dashboard.board import Finished
from muster.operator.dashboard.facts import Facts
from muster.operator.dashboard.feed import _event_time, board_in_child, shown_in_child
from muster.operator.dashboard.rendering import templates
from muster.operator.execution.forecast_process import Request, forecast_elsewhere
from muster.scheduler import EngineConfig
from tests.unit.operator.dashboard.scene import NOW, scene


async def test_a_board_comes_back_from_a_child_and_leaves_the_state_as_it_was() -> None:
    state = scene()
    pods = len(state.pods)
    board = await forecast_elsewhere(
        state, Request(NOW, EngineConfig(), horizon=86400, budget=5), board_in_child
    )
    assert board.now == NOW
    assert [row.group.name for row in board.waiting] == ["wait", "big"]
    assert len(state.pods) == pods and state.unadmitted_gangs  # the child's copy ran


async def test_the_child_sends_the_board_with_its_pages_rendered_under_its_number() -> None:
    work = partial(shown_in_child, version=7, environment=templates())
    shown = await forecast_elsewhere(
        scene(), Request(NOW, EngineConfig(), horizon=86400, budget=5), work
    )
    assert shown.version == 7 and shown.board is not None
    assert b'<div id="board" data-version="7">' in shown.overview
    assert shown.live.startswith(b'<div class="board" data-version="7">')


async def test_the_child_s_board_remembers_the_finished_gangs_it_is_handed() -> None:
    """A gang listed finished stays listed once its PodGroup is gone (its Job deleted)."""
    before = (Finished(GroupKey("gone", "done"), NOW - 60, Facts("1 cpu", 0, 5.0)),)
    work = partial(shown_in_child, version=2, environment=templates(), finished=before)
    shown = await forecast_elsewhere(
        scene(), Request(NOW, EngineConfig(), horizon=86400, budget=5), work
    )
    assert shown.board is not None and shown.board.finished == before
    assert b'<tr data-gang="gone/done" data-namespace="gone">' in shown.overview


def test_events_are_ordered_by_their_last_time_whichever_field_holds_it() -> None:
    older: JsonObject = {"lastTimestamp": "2026-12-01T10:00:00Z"}
    newer: JsonObject = {"eventTime": "2026-12-01T10:00:05.000000Z"}
    bare: JsonObject = {"metadata": {"creationTimestamp": "2026-12-01T09:00:00Z"}}
    assert sorted([newer, older, bare], key=_event_time) == [bare, older, newer]
