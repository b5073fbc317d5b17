"""A waiting gang whose kept verdict holds is not visited: the cycle walks only the
gangs that changed, fell due, or read what changed."""

from __future__ import annotations

import pytest

from muster.api.keys import GroupKey
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.cycle import engine
from muster.scheduler.cycle.queue import Gang
from muster.scheduler.decisions.results import NOTHING_CARRIED, Carried, CycleResult
from tests.unit.scheduler.builders import node, pod, pod_group

NOW = 1_767_225_610.0  # ten seconds after the gangs were created
CONFIG = EngineConfig()
SELECTOR = {"nodeSelector": {"pool": "reserved"}}


def backlog(waiting: int) -> ClusterState:
    """`waiting` gangs pinned to a full pool of one node, beside a free node."""
    state = ClusterState()
    state.apply("Node", node("pool-1", cpu="4", labels={"pool": "reserved"}))
    state.apply("Node", node("other", cpu="8"))
    state.apply("Pod", pod("holder", cpu="4", node_name="pool-1", phase="Running"))
    for number in range(waiting):
        name = f"team-{number}"
        state.apply("PodGroup", pod_group(name, min_count=2))
        for index in range(2):
            state.apply("Pod", pod(f"{name}-{index}", group=name, cpu="2", spec=SELECTOR))
    return state


class Visits:
    """The gangs each cycle decided (recalled or afresh), as `_Cycle._decide` saw them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[str] = []
        decide = engine._Cycle._decide

        def counted(cycle: engine._Cycle, gang: Gang, position: int) -> None:
            self.seen.append(gang.key.name)
            decide(cycle, gang, position)

        monkeypatch.setattr(engine._Cycle, "_decide", counted)

    def cycle(self, state: ClusterState, carried: Carried, now: float = NOW) -> CycleResult:
        self.seen.clear()
        return schedule(state, now=now, config=CONFIG, carried=carried)


def settled(visits: Visits, state: ClusterState) -> Carried:
    """Two cycles: the backlog refused, then its statuses as written."""
    carried = visits.cycle(state, NOTHING_CARRIED).carried
    return visits.cycle(state, carried).carried


def test_a_backlog_that_cannot_move_is_not_visited(monkeypatch: pytest.MonkeyPatch) -> None:
    visits = Visits(monkeypatch)
    state = backlog(50)
    result = visits.cycle(state, settled(visits, state))
    assert visits.seen == []
    assert len(result.verdicts) == 50
    assert result.verdicts[GroupKey("default", "team-7")].explanation is not None


def test_a_burst_beside_it_visits_only_the_burst(monkeypatch: pytest.MonkeyPatch) -> None:
    visits = Visits(monkeypatch)
    state = backlog(50)
    carried = settled(visits, state)
    state.apply("PodGroup", pod_group("burst", min_count=2, priority=5))
    for index in range(2):
        state.apply("Pod", pod(f"burst-{index}", group="burst", cpu="2", priority=5))
    result = visits.cycle(state, carried)
    assert visits.seen == ["burst"]
    assert [admission.group.name for admission in result.admissions] == ["burst"]


def test_capacity_freed_where_they_read_visits_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    visits = Visits(monkeypatch)
    state = backlog(3)
    carried = settled(visits, state)
    state.delete("Pod", "default", "holder")
    result = visits.cycle(state, carried)
    assert visits.seen == ["team-0", "team-1", "team-2"]
    assert [admission.group.name for admission in result.admissions] == ["team-0"]


def test_a_changed_gang_alone_is_visited(monkeypatch: pytest.MonkeyPatch) -> None:
    visits = Visits(monkeypatch)
    state = backlog(3)
    carried = settled(visits, state)
    state.apply("Pod", pod("team-1-2", group="team-1", cpu="2", spec=SELECTOR))
    visits.cycle(state, carried)
    assert visits.seen == ["team-1"]


def test_a_verdict_falling_due_is_visited(monkeypatch: pytest.MonkeyPatch) -> None:
    visits = Visits(monkeypatch)
    state = backlog(2)
    carried = settled(visits, state)
    visits.cycle(state, carried, NOW + CONFIG.verdict_flush_seconds)
    assert visits.seen == ["team-0", "team-1"]


def test_the_queue_position_is_as_of_now() -> None:
    state = backlog(3)
    first = schedule(state, now=NOW, config=CONFIG)
    carried = schedule(state, now=NOW, config=CONFIG, carried=first.carried).carried
    state.apply("Pod", pod("team-0-1", group="team-0", cpu="9", spec=SELECTOR))
    result = schedule(state, now=NOW, config=CONFIG, carried=carried)
    positions = {
        key.name: verdict.explanation.queue_position
        for key, verdict in result.verdicts.items()
        if verdict.explanation is not None
    }
    assert positions == {"team-0": 1, "team-1": 2, "team-2": 3}
    state.delete("PodGroup", "default", "team-0")
    result = schedule(state, now=NOW, config=CONFIG, carried=result.carried)
    explanation = result.verdicts[GroupKey("default", "team-2")].explanation
    assert explanation is not None and explanation.queue_position == 2


def test_members_repaired_ahead_of_the_walk_wake_what_they_touch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An admitted gang short of a member is repaired before the waiting gangs are
    walked: a waiting gang whose verdict read its node (here under inter-pod rules)
    is visited, and refused as deciding every gang refuses it."""
    repel = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "zone"}
    ]}}  # fmt: skip
    state = ClusterState()
    state.apply("Node", node("n1", cpu="4", labels={"zone": "a"}))
    state.apply("Pod", pod("holder", cpu="4", node_name="n1", phase="Running"))
    state.apply("PodGroup", pod_group("run", admitted=True, plan={"run-0": "n1"}))
    state.apply("Pod", pod("run-0", group="run", cpu="0", node_name="n1", phase="Running"))
    state.apply("PodGroup", pod_group("waits"))
    state.apply("Pod", pod("waits-0", group="waits", cpu="1", spec={"affinity": repel}))
    visits = Visits(monkeypatch)
    state.delete("Pod", "default", "run-0")
    carried = settled(visits, state)
    state.apply("Pod", pod("run-1", group="run", cpu="0", labels={"app": "solo"}))
    kept = visits.cycle(state, carried)
    assert visits.seen == ["waits"]
    fresh = schedule(state, now=NOW, config=EngineConfig(keep_verdicts=False))
    assert [growth.group.name for growth in kept.growths] == ["run"]
    assert kept.verdicts == fresh.verdicts
