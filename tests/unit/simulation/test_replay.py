"""A trace decided again cycle by cycle: the changes in order, each cycle at its
recorded clock and configuration, and the first decision made otherwise told."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from muster.scheduler import EngineConfig, schedule
from muster.scheduler.state.trace import apply_line, cycle_line, delete_line, start_line
from muster.simulation.replay import first_difference, read_trace, replay
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12)


def recorded(*objects: Obj, now: float = NOW, config: EngineConfig = CONFIG) -> list[Any]:
    """A trace as the operator writes it: the objects, then one cycle decided on them."""
    state = cluster(*objects)
    result = schedule(state, now=now, config=config)
    lines = [start_line(config), *(apply_line(obj["kind"], obj) for obj in objects)]
    return as_written([*lines, cycle_line(now, result)])


def as_written(lines: list[Any]) -> list[Any]:
    written: list[Any] = json.loads(json.dumps(lines))
    return written


def test_a_faithful_trace_replays_to_the_same_decisions() -> None:
    lines = recorded(node("n1", cpu="4"), *gang("g", 2, cpu="2"))
    (cycle,) = replay(lines)
    assert (cycle.number, cycle.now) == (1, NOW)
    assert cycle.replayed == cycle.recorded
    assert cycle.replayed["admissions"]
    assert first_difference([cycle]) is None


def test_each_start_begins_a_fresh_state_with_its_configuration() -> None:
    first = recorded(node("n1", cpu="4"), *gang("g", 2, cpu="2"))
    second = recorded(node("n2", cpu="1"), *gang("h", 2, cpu="2"), config=EngineConfig())
    cycles = replay([*first, *second])
    assert [cycle.number for cycle in cycles] == [1, 2]
    assert first_difference(cycles) is None
    assert not cycles[1].replayed["admissions"], "n1 is not in the second run's state"


def test_a_deletion_is_replayed_in_its_place() -> None:
    remaining = (node("n1", cpu="4"), *gang("g", 2, cpu="2"))
    lines = recorded(pod("web", node_name="n1", cpu="4"), *remaining)
    later = schedule(cluster(*remaining), now=NOW + 1, config=CONFIG)
    lines += as_written([delete_line("Pod", "default", "web"), cycle_line(NOW + 1, later)])
    cycles = replay(lines)
    assert first_difference(cycles) is None
    assert [bool(cycle.replayed["admissions"]) for cycle in cycles] == [False, True]


def test_the_first_difference_names_the_cycle_and_each_part_that_differs() -> None:
    lines = recorded(node("n1", cpu="4"), *gang("g", 2, cpu="2"))
    lines[-1]["decisions"]["admissions"] = []
    said = first_difference(replay(lines))
    assert said is not None
    assert said.startswith(f"cycle 1 (at {NOW}) decided otherwise:\n  admissions:\n")
    assert "    operator: []\n    replay:   [{" in said
    assert "verdicts" not in said


def test_a_line_still_being_written_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    lines = recorded(node("n1"))
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"line": "cy')
    assert read_trace(path) == lines
