"""`muster simulate --timeline`: the start-time forecast over the input, as a table.

The same forecast the operator writes into `status.estimatedStartTime`, run from the
input's cluster at the run's clock: when each gang starts and ends, those running
already included, and for the gangs without a time, why.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from muster.api.keys import GroupKey
from muster.api.times import rfc3339
from muster.scheduler import (
    DEFAULT_HORIZON_SECONDS,
    EngineConfig,
    Forecast,
    Outcome,
    Reach,
    Run,
    format_duration,
    group_records,
    run_forecast,
    starts_in,
    waiting_for,
)
from muster.simulation.documents import Document, Problem
from muster.simulation.render import aligned
from muster.simulation.run import load

HEADER = ("NAMESPACE", "PODGROUP", "START", "END", "RUNTIME", "WAITING FOR")


def timeline(
    documents: Iterable[Document],
    *,
    now: datetime | None = None,
    config: EngineConfig | None = None,
    horizon: float = DEFAULT_HORIZON_SECONDS,
    max_cycles: int,
) -> tuple[Forecast, dict[GroupKey, str], tuple[Problem, ...]]:
    """The forecast of the input, the words for each waiting gang, and what was ignored."""
    cluster, clock, warnings = load(documents, now=now)
    state = cluster.state
    result = run_forecast(
        state,
        now=clock.timestamp(),
        config=config or EngineConfig(),
        reach=Reach(horizon, max_cycles),
    )
    words = {
        key: waiting_for(
            estimate, result.first_cycle.verdicts.get(key), group_records(state)[key].topology_key
        )
        for key, estimate in result.estimates.items()
    }
    return result, words, warnings


def render_timeline(result: Forecast, words: dict[GroupKey, str]) -> str:
    """Gangs in the order they start, then those without a time."""
    rows = [HEADER, *(_run_row(run, result, words) for run in result.timeline)]
    for key, estimate in result.estimates.items():
        if estimate.outcome is not Outcome.STARTS:
            start = starts_in(estimate, result.now, result.horizon)
            rows.append((key.namespace, key.name, start, "", "", words[key]))
    if len(rows) == 1:
        return "No gangs in the input.\n"
    return aligned(rows)


def timeline_to_json(result: Forecast, words: dict[GroupKey, str]) -> list[dict[str, Any]]:
    started = {run.group: run for run in result.timeline}
    keys = sorted({*started, *result.estimates})
    entries = []
    for key in keys:
        run = started.get(key)
        runtime = None if run is None else run.runtime
        estimate = result.estimates.get(key)
        entries.append(
            {
                "namespace": key.namespace,
                "name": key.name,
                "running": run is not None and run.running and not run.finished,
                "finished": run is not None and run.finished,
                "preempted": run is not None and run.preempted,
                "start": None if run is None else rfc3339(run.start),
                "end": None if run is None or run.end is None else rfc3339(run.end),
                "runtime": None if runtime is None else runtime.seconds,
                "basis": None if runtime is None else str(runtime.basis),
                "outcome": None if estimate is None else str(estimate.outcome),
                "waitingFor": words.get(key, ""),
            }
        )
    return entries


def _run_row(run: Run, result: Forecast, words: dict[GroupKey, str]) -> tuple[str, ...]:
    start = _at(run.start, result.now)
    if run.running and not run.finished:
        start = f"{_time(run.start)} (running)"
    end = "unknown" if run.end is None else _at(run.end, result.now)
    if run.preempted:
        end = f"{end} (preempted)"
    elif run.finished:
        end = f"{end} (finished)"
    runtime = "unknown" if run.runtime is None else run.runtime.describe()
    note = "" if run.running else words.get(run.group, "")
    return (run.group.namespace, run.group.name, start, end, runtime, note)


def _at(moment: float, now: float) -> str:
    offset = moment - now
    return f"{_time(moment)} (+{format_duration(offset)})" if offset >= 1 else f"{_time(moment)}"


def _time(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%H:%M:%S")
