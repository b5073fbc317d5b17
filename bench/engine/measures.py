"""The engine's figures, each beside the plain baseline: a gang's fit, a queue's cycle,
estimates, preemption and updates."""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import time
from collections.abc import Callable, Iterator
from resource import RUSAGE_SELF, getrusage
from typing import Any

from bench.engine.cluster import (
    CONFIG,
    ESTIMATE_REPETITIONS,
    ESTIMATE_RUNS,
    GANG_SIZE,
    NODES,
    NOW,
    PENDING_GANGS,
    RHYTHM_BLOCKS,
    apply,
    base_state,
    carried,
    cycle,
    pending_gang,
    pending_gangs,
    pod_object,
)
from bench.engine.plain import PlainCluster
from muster.operator.config import OperatorConfig
from muster.operator.execution.forecast_process import Budget, Child, Request
from muster.scheduler import ClusterState
from muster.scheduler.decisions.results import CycleResult
from muster.scheduler.forecast.forecast import forecast

# ---- measuring -------------------------------------------------------------------------


def timed(run: Callable[[], object], repeats: int) -> tuple[float, list[float]]:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), samples


def measure_gang(
    state: ClusterState,
    plain: PlainCluster,
    topology: str | None,
    figures: dict[str, Any],
    label: str,
) -> None:
    gang = pending_gang(f"gang-{label}", GANG_SIZE, cpu="8", memory="32Gi", topology=topology)
    apply(state, gang)
    cold, _ = timed(lambda: cycle(state), 1)
    warm, samples = timed(lambda: cycle(state), 20)
    result = cycle(state)
    assert len(result.admissions) == 1 and len(result.admissions[0].placements) == GANG_SIZE, (
        result.verdicts
    )
    baseline, _ = timed(lambda: plain.decide(gang, topology), 3)
    figures[label] = {
        "engine_ms": round(warm * 1e3, 3),
        "engine_first_call_ms": round(cold * 1e3, 3),
        "engine_p90_ms": round(sorted(samples)[int(0.9 * len(samples))] * 1e3, 3),
        "plain_python_ms": round(baseline * 1e3, 1),
        "speedup": round(baseline / warm, 1),
    }
    if topology is not None:
        figures[label]["plain_python_note"] = "stops at the first domain, in name order, that fits"
    state.delete("PodGroup", "bench", f"gang-{label}")
    for obj in gang[1:]:
        state.delete("Pod", "bench", obj["metadata"]["name"])


def measure_queue(
    state: ClusterState,
    plain: PlainCluster,
    figures: dict[str, Any],
    label: str,
    priorities: tuple[int, ...],
) -> None:
    gangs = pending_gangs(PENDING_GANGS, priorities)
    for gang in gangs:
        apply(state, gang)
    cold, _ = timed(lambda: cycle(state), 1)
    warm, _ = timed(lambda: cycle(state), 3)
    result: CycleResult = cycle(state)
    prefix = 10
    started = time.perf_counter()
    for gang in gangs[:prefix]:
        spec = gang[0]["spec"]
        topology = spec.get("schedulingConstraints", {}).get("topology", [{}])[0].get("key")
        if plain.decide(gang, topology) is None and spec["priority"] > 0:
            plain.preempt(gang, spec["priority"])
    baseline = (time.perf_counter() - started) * PENDING_GANGS / prefix
    figures[label] = {
        "engine_ms": round(warm * 1e3, 1),
        "engine_first_call_ms": round(cold * 1e3, 1),
        "admitted": len(result.admissions),
        "admitted_with_victims": sum(bool(admission.victims) for admission in result.admissions),
        "unschedulable": len(result.verdicts),
        "plain_python_ms": round(baseline * 1e3, 1),
        "plain_python_note": f"scaled up from the first {prefix} gangs",
        "speedup": round(baseline / warm, 1),
    }
    for gang in gangs:
        state.delete("PodGroup", "bench", gang[0]["metadata"]["name"])
        for obj in gang[1:]:
            state.delete("Pod", "bench", obj["metadata"]["name"])


def measure_estimates(state: ClusterState, figures: dict[str, Any]) -> None:
    """The scheduling cycle with start-time estimates off and on, side by side.

    As the operator runs them: each forecast in a child process forked from the state
    (`forecast_process.Child`), at idle CPU priority, on the operator's default budget.
    Off and on alternate, so both see the same load on a shared machine; each figure
    is a median of several, and the whole is run `ESTIMATE_RUNS` times (the machine's
    noise changes from minute to minute); a cycle's CPU time (the process's own, which other
    people's load on the machine hardly changes) is given beside its wall time.

    - `worst_case`: a cycle alone, then a fork and a cycle while that child forecasts,
      `ESTIMATE_REPETITIONS` times. The first cycle after a fork pays for the pages
      it writes that the child still shares (copy on write); the figure counts the
      fork itself too, which holds the event loop.
    - `worst_case_child_stopped`: the same with the child stopped during the cycle,
      which leaves only the cost of copy on write (with the page faults it takes).
    - `operator_rhythm`: blocks of the cycles that fit in one `--estimate-interval`
      back to back (a burst), without estimates and with a fork after the block's
      first cycle, as the estimate writer forks after a cycle ends.
    """
    gangs = pending_gangs(PENDING_GANGS)
    for gang in gangs:
        apply(state, gang)
    budget = OperatorConfig().estimate_budget
    started = time.perf_counter()
    ahead = forecast(
        state, now=NOW, config=CONFIG, keep_going=Budget(budget), carried=carried(state)
    )
    forecast_s = time.perf_counter() - started
    cycle(state)  # warm
    forecaster = _Forecaster(state, budget)
    runs = [_estimate_run(state, forecaster) for _ in range(ESTIMATE_RUNS)]
    figures["estimates"] = {
        "state": f"{len(state.pods)} pods, {PENDING_GANGS} gangs waiting",
        "forecast_in_process_ms": round(forecast_s * 1e3, 1),
        "forecast_cycles": ahead.cycles,
        "forecast_complete": ahead.complete,
        "forecast_budget_cpu_s": budget,
        "forecasts_in_child": len(forecaster.cycles),
        "forecast_child_cycles_median": statistics.median(forecaster.cycles),
        "fork_ms": round(statistics.median(forecaster.forks) * 1e3, 1),
        "ratio_cpu_median_of_runs": {
            name: statistics.median(run[name]["ratio_cpu"] for run in runs)
            for name in ("worst_case", "worst_case_child_stopped", "operator_rhythm")
        },
        "goal": "cycle within 10% of its time without estimates (ratio <= 1.10)",
        "runs": runs,
    }
    for gang in gangs:
        state.delete("PodGroup", "bench", gang[0]["metadata"]["name"])
        for obj in gang[1:]:
            state.delete("Pod", "bench", obj["metadata"]["name"])


def _estimate_run(state: ClusterState, forecaster: _Forecaster) -> dict[str, Any]:
    """One run of the three comparisons (see `measure_estimates`)."""
    load = os.getloadavg()
    alone, beside, stopped, faults = [], [], [], []
    for _ in range(ESTIMATE_REPETITIONS):
        alone.append(_cycle(state))
        forecaster.fork()
        wall, cpu = _cycle(state)
        beside.append((wall + forecaster.forks[-1], cpu + forecaster.forks[-1]))
        forecaster.collect()
        forecaster.fork()
        with forecaster.stopped():
            before = getrusage(RUSAGE_SELF).ru_minflt
            stopped.append(_cycle(state))
            faults.append(getrusage(RUSAGE_SELF).ru_minflt - before)
        forecaster.collect()
    typical = statistics.median(wall for wall, _ in alone)
    per_block = max(2, round(OperatorConfig().estimate_interval / typical))
    quiet, busy = [], []
    for _ in range(RHYTHM_BLOCKS):
        quiet.append(_block(state, per_block, None))
        busy.append(_block(state, per_block, forecaster))
    return {
        "load_average_at_start": [round(x, 2) for x in load],
        "worst_case": _compared(alone, beside, ESTIMATE_REPETITIONS),
        "worst_case_child_stopped": {
            "page_faults_median": statistics.median(faults),
            **_compared(alone, stopped, ESTIMATE_REPETITIONS),
        },
        "operator_rhythm": {
            "cycles_per_block": per_block,
            **_compared(quiet, busy, RHYTHM_BLOCKS),
        },
    }


class _Forecaster:
    """Forecasts in child processes, as the estimate writer starts them."""

    def __init__(self, state: ClusterState, budget: float) -> None:
        self.state = state
        self.budget = budget
        self.child: Child | None = None
        self.forks: list[float] = []
        self.cycles: list[int] = []

    def fork(self) -> None:
        started = time.perf_counter()
        self.child = Child(
            self.state, Request(NOW, CONFIG, 86400.0, self.budget, carried(self.state))
        )
        self.forks.append(time.perf_counter() - started)

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """The child stopped meanwhile (SIGSTOP): what copy on write alone costs."""
        assert self.child is not None
        pid = self.child._process.pid or 0
        os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(pid, signal.SIGCONT)

    def collect(self) -> None:
        assert self.child is not None
        self.cycles.append(self.child.answer().forecast.cycles)
        self.child = None


def _cycle(state: ClusterState) -> tuple[float, float]:
    """One cycle's wall and CPU time."""
    wall, cpu = time.perf_counter(), time.process_time()
    cycle(state)
    return time.perf_counter() - wall, time.process_time() - cpu


def _block(state: ClusterState, cycles: int, forecaster: _Forecaster | None) -> tuple[float, float]:
    """Cycles back to back, a fork after the first when `forecaster` is given (counted):
    the mean wall and CPU time of a cycle."""
    walls, cpus = [], []
    for index in range(cycles):
        wall, cpu = _cycle(state)
        if index == 0 and forecaster is not None:
            forecaster.fork()
            wall, cpu = wall + forecaster.forks[-1], cpu + forecaster.forks[-1]
        walls.append(wall)
        cpus.append(cpu)
    if forecaster is not None:
        forecaster.collect()
    return statistics.mean(walls), statistics.mean(cpus)


def _compared(
    off: list[tuple[float, float]], on: list[tuple[float, float]], repetitions: int
) -> dict[str, Any]:
    """Medians of (wall, CPU) samples without and with estimates, and their ratios."""
    wall_off, wall_on = (statistics.median(sample[0] for sample in run) for run in (off, on))
    cpu_off, cpu_on = (statistics.median(sample[1] for sample in run) for run in (off, on))
    return {
        "repetitions": repetitions,
        "cycle_without_estimates_ms": round(wall_off * 1e3, 1),
        "cycle_with_estimates_ms": round(wall_on * 1e3, 1),
        "cycle_cpu_without_estimates_ms": round(cpu_off * 1e3, 1),
        "cycle_cpu_with_estimates_ms": round(cpu_on * 1e3, 1),
        "ratio_wall": round(wall_on / wall_off, 3),
        "ratio_cpu": round(cpu_on / cpu_off, 3),
        "goal_met_cpu": cpu_on / cpu_off <= 1.10,
    }


def measure_preemption(figures: dict[str, Any]) -> None:
    state, objects = base_state(fill=1.5)
    gang = pending_gang("urgent", GANG_SIZE, cpu="40", memory="32Gi", priority=1000)
    apply(state, gang)
    cold, _ = timed(lambda: cycle(state), 1)
    warm, _ = timed(lambda: cycle(state), 10)
    result = cycle(state)
    (admission,) = result.admissions
    plain = PlainCluster([*objects, *gang])
    baseline, _ = timed(lambda: plain.preempt(gang, 1000), 1)
    figures["preemption_64_pod_gang"] = {
        "engine_ms": round(warm * 1e3, 3),
        "engine_first_call_ms": round(cold * 1e3, 3),
        "victims": len(admission.victims),
        "highest_victim_priority": max(victim.priority for victim in admission.victims),
        "plain_python_ms": round(baseline * 1e3, 1),
        "speedup": round(baseline / warm, 1),
    }


def measure_updates(state: ClusterState, plain: PlainCluster, figures: dict[str, Any]) -> None:
    """Per-event cost of creating and deleting bound pods: best of five rounds of 10,000.

    The best round is reported because the machine is shared: a slower round measures
    the neighbours, not the code.
    """
    events = [
        pod_object(f"event-{n:05d}", cpu="250m", memory="512Mi", node=f"node-{n % NODES:05d}")
        for n in range(10_000)
    ]
    creates, deletes = [], []
    for _ in range(5):
        started = time.perf_counter()
        for obj in events:
            state.apply("Pod", obj)
        creates.append((time.perf_counter() - started) / len(events))
        started = time.perf_counter()
        for obj in events:
            state.delete("Pod", "bench", obj["metadata"]["name"])
        deletes.append((time.perf_counter() - started) / len(events))
    create, delete = min(creates), min(deletes)
    rebuild, _ = timed(plain.recompute, 3)
    figures["update_per_pod_event"] = {
        "engine_create_us": round(create * 1e6, 2),
        "engine_delete_us": round(delete * 1e6, 2),
        "engine_create_median_us": round(statistics.median(creates) * 1e6, 2),
        "plain_python_rebuild_us": round(rebuild * 1e6, 1),
        "plain_python_note": "recomputing every node's usage from all pods after an event",
        "speedup": round(rebuild / max(create, delete), 1),
    }
