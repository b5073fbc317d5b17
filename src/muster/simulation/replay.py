"""Replay a recorded trace (`muster.scheduler.state.trace`) through the engine.

Each change the operator's state received is given, in order, to a fresh
`ClusterState` through the same door (`ClusterState.apply` and `delete`); at each
recorded cycle the engine decides at the recorded clock with the recorded
configuration, and its decisions are set beside the ones the operator recorded.
Equal decisions, cycle after cycle, show that the operator's own part is execution
only: the engine, given the same inputs, is the whole of the decision.

Pure apart from reading the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from muster.api.wire import JsonObject
from muster.scheduler import (
    APPLY,
    CYCLE,
    DELETE,
    JUDGED,
    RELEASE,
    START,
    ClusterState,
    EngineConfig,
    observe_judged,
    observe_release,
    schedule,
    traced_decisions,
)
from muster.scheduler.decisions import NOTHING_CARRIED


@dataclass(frozen=True, slots=True)
class ReplayedCycle:
    """One cycle: when it decided, what the operator recorded, what the replay decided."""

    number: int  # 1-based, counted over the whole trace
    now: float
    recorded: JsonObject
    replayed: JsonObject


def read_trace(path: Path) -> list[JsonObject]:
    """The trace's complete lines (one still being written, without its newline, is left
    out: the operator may be writing while a test reads)."""
    text = path.read_text()
    lines = text.split("\n")
    return [json.loads(line) for line in lines[:-1] if line]


def replay(lines: Iterable[JsonObject]) -> list[ReplayedCycle]:
    """Every recorded cycle, decided again."""
    state = ClusterState()
    config = EngineConfig()
    carried = NOTHING_CARRIED
    cycles: list[ReplayedCycle] = []
    for line in lines:
        kind = line["line"]
        if kind == START:
            state, config = ClusterState(), EngineConfig(**line["config"])
            carried = NOTHING_CARRIED
        elif kind == APPLY:
            state.apply(line["kind"], line["object"])
        elif kind == DELETE:
            state.delete(line["kind"], line["namespace"], line["name"])
        elif kind == RELEASE:
            observe_release(state, line)
        elif kind == JUDGED:
            observe_judged(state, line)
        elif kind == CYCLE:
            result = schedule(state, now=line["now"], config=config, carried=carried)
            carried = result.carried
            replayed = json.loads(json.dumps(traced_decisions(result)))
            cycles.append(ReplayedCycle(len(cycles) + 1, line["now"], line["decisions"], replayed))
    return cycles


def first_difference(cycles: Sequence[ReplayedCycle]) -> str | None:
    """Where the replay first decided otherwise than the operator, said in a few lines;
    None when every cycle decided the same."""
    for cycle in cycles:
        if cycle.recorded == cycle.replayed:
            continue
        parts = []
        for part in sorted(cycle.recorded.keys() | cycle.replayed.keys()):
            recorded, replayed = cycle.recorded.get(part), cycle.replayed.get(part)
            if recorded != replayed:
                parts.append(
                    f"  {part}:\n    operator: {json.dumps(recorded, sort_keys=True)}\n"
                    f"    replay:   {json.dumps(replayed, sort_keys=True)}"
                )
        return f"cycle {cycle.number} (at {cycle.now}) decided otherwise:\n" + "\n".join(parts)
    return None
