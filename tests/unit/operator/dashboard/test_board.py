"""The board: the queue in the engine's order and words, running gangs where they run,
finished gangs with their waits, and each gang's facts."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.operator.dashboard.board import (
    FINISHED_KEPT,
    Finished,
    _end_words,
    board_of,
    levels_of,
    remembered,
    start_words,
)
from muster.operator.dashboard.facts import Facts
from muster.scheduler import ClusterState, EngineConfig
from muster.scheduler.forecast.forecast import Estimate, Forecast, Outcome, Run
from tests.unit.operator.dashboard.scene import NOW, ZONE, scene
from tests.unit.scheduler.builders import pod, pod_group

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


def test_a_running_gang_s_end_reads_as_explain_prints_it() -> None:
    key = GroupKey("ml", "done")
    assert _end_words(Run(key, NOW, NOW + 120, None, running=True), NOW) == "~2m (at 00:02 UTC)"
    assert _end_words(None, NOW) == "unknown"


def test_each_gang_shows_its_scarcest_resource_its_priority_and_how_long_it_waited() -> None:
    board = board_of(scene(), now=NOW, config=CONFIG, horizon=86400)
    wait, big = board.waiting
    # Created at 00:01 and 00:02 on 2026-01-01; the board is at 2027-01-01 00:00.
    assert wait.facts == Facts("8 nvidia.com/gpu", 0, NOW - 1_767_225_660.0)
    assert big.facts.demand == "16 nvidia.com/gpu" and big.facts.waited == NOW - 1_767_225_720.0
    (running,) = board.running
    assert running.facts.demand == "8 nvidia.com/gpu"


def test_a_gang_that_never_fits_says_why_once() -> None:
    board = board_of(scene(), now=NOW, config=CONFIG, horizon=86400)
    big = board.waiting[1]
    assert big.start == "never" and "even on an empty cluster" in big.message
    assert big.waits_for == ""  # its estimate's why is the message's own sentence
    assert board.waiting[0].waits_for  # a gang that will start says what it waits for


def finished_scene() -> ClusterState:
    """The scene, with a gang of two whose pods have both succeeded, admitted at 00:05
    after it was created at 00:00, at priority 7."""
    done = pod_group("done", min_count=2, admitted=True, plan={"done-0": "b-1", "done-1": "b-2"})
    done["spec"]["priority"] = 7
    done["status"]["admittedAt"] = "2026-01-01T00:05:00Z"
    pods = [
        pod(f"done-{i}", group="done", gpu="1", node_name=f"b-{i + 1}", phase="Succeeded")
        for i in range(2)
    ]
    state = scene()
    for obj in (done, *pods):
        assert state.apply(obj["kind"], obj).rejected is None
    return state


def test_a_gang_whose_pods_all_finished_is_listed_finished_with_its_wait_not_running() -> None:
    board = board_of(finished_scene(), now=NOW, config=CONFIG, horizon=86400)
    assert [row.group.name for row in board.running] == ["run"]
    (done,) = board.finished
    assert done.group == GroupKey("default", "done")
    assert done.facts == Facts("2 nvidia.com/gpu", 7, 300.0)


def test_finished_gangs_are_remembered_from_board_to_board_the_latest_first_and_bounded() -> None:
    facts = Facts("1 nvidia.com/gpu", 0, 1.0)
    before = tuple(Finished(GroupKey("old", f"g{n}"), float(n), facts) for n in range(30))
    board = board_of(finished_scene(), now=NOW, config=CONFIG, horizon=86400)
    again = board_of(scene(), now=NOW, config=CONFIG, horizon=86400, finished_before=before)
    assert len(again.finished) == FINISHED_KEPT and again.finished[0].group.name == "g0"
    kept = remembered(board.finished, before)
    assert kept[0].group.name == "done" and len(kept) == FINISHED_KEPT
    assert remembered(board.finished, kept) == kept  # one already listed keeps its place
