"""What the overview shows, from one run of the engine: the board.

The run is `forecast` on the cluster as watched, the very call `muster explain`
makes: its first cycle is the operator's next cycle (the queue, each gang's verdict in
the engine's words), the rest its start-time estimates and timeline. The board is
made where the run is (a child process, see `feed`) and only the board travels back:
a few thousand small rows, not the state. Each waiting gang's `Explanation` (for its
own page) travels pickled and stays so until that page is asked for: at the
benchmark's size they are tens of thousands of objects, whose unpickling would hold the
page's event loop for a tenth of a second at every board.

Each row carries the gang's `Facts` (its scarcest resource requested, priority, time
waited). Gangs whose pods have all finished leave the running rows for the finished
ones, with their waits; the board remembers the last `FINISHED_KEPT` of them from one
board to the next (`board_of`'s `finished_before`), so that a gang whose Job is
deleted once done is still listed, and the memory stays bounded however many finish.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from muster.api.keys import GroupKey
from muster.operator.dashboard.domains import ZONE, Domain, domains
from muster.operator.dashboard.facts import Facts, allocatable_totals, facts_of
from muster.scheduler import (
    ClusterState,
    EngineConfig,
    Estimate,
    Forecast,
    Outcome,
    Reach,
    Run,
    clock_time,
    format_duration,
    group_records,
    node_records,
    pod_count,
    run_forecast,
    starts_in,
    waiting_for,
    waiting_gangs,
)
from muster.scheduler.decisions import Explanation, Verdict

FITS_NOW = "fits now: the operator admits it on its next cycle"
FINISHED_KEPT = 20


@dataclass(frozen=True, slots=True)
class Waiting:
    """A gang in the queue, at its place in the order the engine considers them."""

    group: GroupKey
    position: int  # 0: it fits now
    reason: str
    message: str
    start: str  # `~12m (at 10:42 UTC)`, `now`, `unknown`, `never`, `>24h`
    starts_at: float | None
    waits_for: str  # empty for a gang that never starts: its message says why
    facts: Facts


@dataclass(frozen=True, slots=True)
class Running:
    group: GroupKey
    domain: str  # `topology.kubernetes.io/zone=zone-a`, or its nodes
    since: float | None
    end: str  # `~1h (at 11:42 UTC)`, or `unknown`
    facts: Facts


@dataclass(frozen=True, slots=True)
class Finished:
    """A gang all of whose pods have finished, with what it waited for its start."""

    group: GroupKey
    since: float | None  # its admission
    facts: Facts


@dataclass(frozen=True, slots=True)
class Bar:
    """A gang on the forecast's timeline: running until `end`, or starting at `start`."""

    group: GroupKey
    start: float
    end: float | None  # None: it runs past the horizon, or for an unknown time
    running: bool


@dataclass(frozen=True, slots=True)
class Board:
    now: float
    horizon: float  # seconds after `now`
    levels: tuple[str, ...]
    waiting: tuple[Waiting, ...]
    running: tuple[Running, ...]
    finished: tuple[Finished, ...]  # the last `FINISHED_KEPT`, the latest first
    domains: tuple[Domain, ...]
    timeline: tuple[Bar, ...]
    explanations: Mapping[GroupKey, bytes]  # pickled, of the waiting gangs
    complete: bool  # False: the forecast's budget ran out before every gang had a start
    nodes: int
    pods: int

    def explanation(self, key: GroupKey) -> Explanation | None:
        """The waiting gang's explanation, for its page."""
        kept = self.explanations.get(key)
        found: Explanation | None = None if kept is None else pickle.loads(kept)
        return found


def start_words(estimate: Estimate | None, ahead: Forecast) -> str:
    """When the gang should start: `~12m (at 10:42 UTC)`, `now`, `unknown`..."""
    if estimate is None:
        return "unknown"
    start = starts_in(estimate, ahead.now, ahead.horizon)
    if estimate.start is not None and start != "now":
        start = f"{start} (at {clock_time(estimate.start)})"
    return start


def board_of(
    state: ClusterState,
    *,
    now: float,
    config: EngineConfig,
    horizon: float,
    keep_going: Callable[[], bool] = lambda: True,
    owned: bool = False,
    finished_before: tuple[Finished, ...] = (),
) -> Board:
    """The board of `state` at `now`; with `owned`, the forecast runs on `state` itself.
    `finished_before` is the last board's finished gangs, remembered on this one."""
    levels = levels_of(state, config)
    filled = domains(state, levels)
    running = _running(state, levels)
    groups = group_records(state)
    keys = {key: groups[key].topology_key for key in waiting_gangs(state)}
    nodes = sum(1 for _ in node_records(state))
    pods = pod_count(state)
    totals = allocatable_totals(state)
    facts = {key: facts_of(state, key, totals, now) for key in groups}
    ahead = run_forecast(
        state, now=now, config=config, reach=Reach(horizon), keep_going=keep_going, owned=owned
    )
    ends = {run.group: run for run in ahead.timeline if run.running}
    done = {key for key, run in ends.items() if run.finished}
    return Board(
        now=now,
        horizon=horizon,
        levels=levels,
        waiting=_waiting(ahead, keys, facts),
        running=tuple(
            Running(key, domain, since, _end_words(ends.get(key), now), facts[key])
            for key, domain, since in running
            if key not in done
        ),
        finished=remembered(
            tuple(Finished(key, since, facts[key]) for key, _, since in running if key in done),
            finished_before,
        ),
        domains=filled,
        timeline=_bars(ahead),
        explanations={
            key: pickle.dumps(verdict.explanation)
            for key, verdict in ahead.first_cycle.verdicts.items()
            if verdict.explanation is not None
        },
        complete=ahead.complete,
        nodes=nodes,
        pods=pods,
    )


def levels_of(state: ClusterState, config: EngineConfig) -> tuple[str, ...]:
    """The operator's topology levels; without them the keys gangs name, else zones."""
    if config.topology_levels:
        return config.topology_levels
    named = {
        key
        for record in group_records(state).values()
        for key in (record.topology_key, record.preferred_key)
        if key is not None
    }
    return tuple(sorted(named)) or (ZONE,)


def remembered(found: tuple[Finished, ...], before: tuple[Finished, ...]) -> tuple[Finished, ...]:
    """The finished gangs to show: those found finished now that the last board did not
    list first (the latest admitted first), then the last board's, at most
    `FINISHED_KEPT`. A gang listed before keeps its place (and its first facts)."""
    listed = {row.group for row in before}
    new = sorted(
        (row for row in found if row.group not in listed),
        key=lambda row: (-(row.since or 0.0), row.group),
    )
    return (*new, *before)[:FINISHED_KEPT]


def _waiting(
    ahead: Forecast, keys: Mapping[GroupKey, str | None], facts: Mapping[GroupKey, Facts]
) -> tuple[Waiting, ...]:
    verdicts = ahead.first_cycle.verdicts
    rows = [
        Waiting(
            admission.group,
            0,
            "Fits",
            FITS_NOW,
            "now",
            ahead.now,
            "it fits now",
            facts[admission.group],
        )
        for admission in ahead.first_cycle.admissions
        if admission.group in keys
    ]
    for key, verdict in verdicts.items():
        estimate = ahead.estimates.get(key)
        explanation = verdict.explanation
        rows.append(
            Waiting(
                key,
                explanation.queue_position if explanation is not None else len(verdicts) + 1,
                str(verdict.reason),
                verdict.message,
                start_words(estimate, ahead),
                estimate.start if estimate is not None else None,
                _waits_for(estimate, verdict, keys.get(key)),
                facts[key],
            )
        )
    return tuple(sorted(rows, key=lambda row: (row.position, row.group)))


def _waits_for(estimate: Estimate | None, verdict: Verdict, topology_key: str | None) -> str:
    """What the start waits for; nothing for a gang that never starts, whose reason
    the message says already (the estimate's `why` is that same sentence)."""
    if estimate is None:
        return ""
    words = waiting_for(estimate, verdict, topology_key)
    if estimate.outcome is Outcome.NEVER and words in verdict.message:
        return ""
    return words


def _running(
    state: ClusterState, levels: tuple[str, ...]
) -> list[tuple[GroupKey, str, float | None]]:
    """Each admitted gang, the narrowest domain holding its whole plan, and since when."""
    labels = {record.name: record.labels for record in node_records(state)}
    found = []
    groups = group_records(state)
    for key in sorted(groups):
        record = groups[key]
        if not record.admitted or not record.gang:
            continue
        nodes = sorted(set(record.plan.values()))
        found.append((key, _domain_of(nodes, labels, levels), record.admitted_at))
    return found


def _domain_of(
    nodes: list[str], labels: Mapping[str, Mapping[str, str]], levels: tuple[str, ...]
) -> str:
    for level in reversed(levels):
        values = {labels.get(node, {}).get(level) for node in nodes}
        if len(values) == 1 and None not in values:
            return f"{level}={values.pop()}"
    if len(nodes) <= 3:
        return ", ".join(nodes) or "no node yet"
    return f"{len(nodes)} nodes"


def _end_words(run: Run | None, now: float) -> str:
    if run is None or run.end is None:
        return "unknown"
    return f"~{format_duration(max(0.0, run.end - now))} (at {clock_time(run.end)})"


def _bars(ahead: Forecast) -> tuple[Bar, ...]:
    """The timeline's gangs within the horizon: running ones, and those it starts."""
    limit = ahead.now + ahead.horizon
    bars = [
        Bar(run.group, max(run.start, ahead.now), run.end, run.running)
        for run in ahead.timeline
        if not run.finished and not run.preempted and run.start <= limit
    ]
    return tuple(sorted(bars, key=lambda bar: (bar.start, bar.end or limit, bar.group)))
