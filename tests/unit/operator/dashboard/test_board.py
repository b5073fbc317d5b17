"""The board: the queue in the engine's order and words, running gangs where they run."""

from __future__ import annotations

from muster.operator.dashboard.board import _end_words, board_of, levels_of, start_words
from muster.scheduler import EngineConfig
from muster.scheduler.decisions.results import GroupKey
from muster.scheduler.forecast.forecast import Estimate, Forecast, Outcome, Run
from tests.unit.operator.dashboard.scene import NOW, ZONE, scene

CONFIG = EngineConfig()


def test_waiting_gangs_come_in_queue_order_with_the_engines_reason_and_start() -> None:
    board = board_of(scene(), now=NOW, config=CONFIG, horizon=86400)
    assert [row.group.name for row in board.waiting] == ["wait", "big"]
    wait, big = board.waiting
    assert (wait.position, wait.reason) == (1, "Unschedulable")
    assert "nvidia.com/gpu" in wait.message
    assert wait.start == "unknown"  # the running gang declares no runtime
    assert "needs" in wait.waits_for and ZONE in wait.waits_for
    assert big.start == "never"
    assert set(board.explanations) == {GroupKey("default", "wait"), GroupKey("default", "big")}
    explanation = board.explanation(GroupKey("default", "wait"))
    assert explanation is not None and explanation.queue_position == 1
    assert board.explanation(GroupKey("default", "run")) is None


def test_a_running_gang_shows_its_domain_and_the_board_counts_the_cluster() -> None:
    board = board_of(scene(), now=NOW, config=CONFIG, horizon=86400)
    (running,) = board.running
    assert (running.group.name, running.domain, running.end) == ("run", f"{ZONE}=a", "unknown")
    assert (board.nodes, board.pods, board.levels) == (4, 8, (ZONE,))
    assert [bar.group.name for bar in board.timeline] == ["run"]
    assert board.timeline[0].running and board.timeline[0].end is None


def test_the_levels_are_the_operators_else_those_gangs_name_else_zones() -> None:
    state = scene()
    assert levels_of(state, EngineConfig(topology_levels=("z", "rack"))) == ("z", "rack")
    assert levels_of(state, CONFIG) == (ZONE,)


def test_a_start_reads_as_explain_prints_it() -> None:
    ahead = Forecast(now=NOW, horizon=86400, estimates={}, timeline=())
    key = GroupKey("ml", "a")
    assert start_words(None, ahead) == "unknown"
    soon = Estimate(key, Outcome.STARTS, start=NOW + 720)
    assert start_words(soon, ahead) == "~12m (at 00:12 UTC)"
    assert start_words(Estimate(key, Outcome.STARTS, start=NOW), ahead) == "now"


def test_a_gang_whose_pods_all_finished_says_it_ended_not_when_it_ends() -> None:
    key = GroupKey("ml", "done")
    assert _end_words(Run(key, NOW - 60, NOW - 5, None, running=True, finished=True), NOW) == (
        "ended: every pod has finished"
    )
    assert _end_words(Run(key, NOW, NOW + 120, None, running=True), NOW) == "~2m (at 00:02 UTC)"
    assert _end_words(None, NOW) == "unknown"
