"""What a backlog that cannot move costs the engine: the same cycles with verdicts kept
and with every waiting gang decided in every cycle, side by side.

The cluster is bench/growth/waiting.py's, in memory: 500 nodes of 8 GPUs; a team's pool of 8
of them, labelled, each taken whole by a long-running pod; behind it `count` gangs of
that team, each two whole-node workers pinned to the pool, at a priority below
everyone's (nothing they could preempt). Then a burst arrives: 200 gangs of four
one-GPU pods, 10 per cycle, each cycle's plan carried out as `muster simulate` carries
it out (its pods bound at once), then idle cycles where nothing changes. For each
queue length and each switch, the engine's mean time per burst cycle and per idle
cycle go to bench/results/backlog.json, with the growth exponent of each against the
waiting gangs (the slope of log(time) on log(gangs), as in bench/growth/report.py).
The medians beside the means leave out the one cycle in which the interpreter's full
garbage collection falls (its cost grows with every object of the process, the
cluster's included, and it falls in a cycle at random).

    nice .venv/bin/python -m bench.backlog                       # 100 to 10,000
    nice .venv/bin/python -m bench.backlog --waiting 100,1000    # some points
    nice .venv/bin/python -m bench.backlog --only-kept --idle-cycles 60 \
        --output bench/results/backlog-idle-60.json                 # a longer idle
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common.machine import describe
from bench.engine.cluster import Obj, group_object, pod_object
from bench.growth.report import exponent
from muster.api.constants import EXPECTED_RUNTIME_ANNOTATION
from muster.api.keys import GroupKey, PodKey
from muster.api.times import rfc3339
from muster.scheduler import EngineConfig, Outcome, Reach, run_forecast, schedule
from muster.scheduler.decisions.results import NOTHING_CARRIED
from muster.simulation.cluster import SimulatedCluster

RESULTS = Path(__file__).resolve().parents[1] / "results" / "backlog.json"
WAITING = (100, 1000, 2000, 5000, 10000)
NODES, POOL, GPUS = 500, 8, 8
BURST_GANGS, PER_CYCLE, IDLE_CYCLES = 200, 10, 10
CREATED = 1_767_225_600.0  # 2026-01-01, bench/engine/run.py's creation time
NOW = CREATED + 60.0  # the burst is younger than starvation: nobody closes nodes
# The pool's occupants and the waiting gangs say how long they run, so that a forecast
# has starts to work out: four gangs at a time on the pool, one hour each.
RUNS_AN_HOUR = {EXPECTED_RUNTIME_ANNOTATION: "1h"}


def node_object(index: int) -> Obj:
    """A GPU node; the first `POOL` are the team's pool."""
    labels = {"pool": "reserved"} if index < POOL else {}
    allocatable = {"cpu": "96", "memory": "1Ti", "pods": "110", "nvidia.com/gpu": str(GPUS)}
    return {
        "metadata": {"name": f"n{index:04d}", "labels": labels},
        "spec": {},
        "status": {"allocatable": allocatable},
    }


def cluster(waiting: int) -> SimulatedCluster:
    """The pool, full, and `waiting` gangs pinned to it."""
    simulated = SimulatedCluster()
    for index in range(NODES):
        put(simulated, "Node", node_object(index))
    for index in range(POOL):
        holder = pod_object(
            f"holder-{index}", cpu="1", memory="1Gi", gpu=GPUS, node=f"n{index:04d}"
        )
        holder["metadata"]["annotations"] = RUNS_AN_HOUR
        put(simulated, "Pod", {**holder, "status": {"phase": "Running"}})
    pinned = {"nodeSelector": {"pool": "reserved"}}
    for number in range(waiting):
        name = f"team-{number:05d}"
        group = group_object(name, 2, priority=-10)
        group["metadata"]["annotations"] = RUNS_AN_HOUR
        put(simulated, "PodGroup", group)
        for member in range(2):
            worker = pod_object(
                f"{name}-{member}",
                cpu="1",
                memory="1Gi",
                gpu=GPUS,
                group=name,
                priority=-10,
                rules=pinned,
            )
            put(simulated, "Pod", worker)
    return simulated


def put(simulated: SimulatedCluster, kind: str, obj: Obj) -> None:
    """An object the bench makes, as the API server would give it to the engine."""
    name = obj["metadata"]["name"]
    namespace = obj["metadata"].get("namespace", "")
    if kind == "Pod":
        simulated.pods[PodKey(namespace, name)] = obj
    elif kind == "PodGroup":
        simulated.pod_groups[GroupKey(namespace, name)] = obj
    simulated.state.apply(kind, obj)


def burst_gang(simulated: SimulatedCluster, number: int) -> None:
    name = f"burst-{number:04d}"
    put(simulated, "PodGroup", group_object(name, 4))
    for member in range(4):
        put(
            simulated,
            "Pod",
            pod_object(f"{name}-{member}", cpu="1", memory="1Gi", gpu=1, group=name),
        )


def run(waiting: int, *, keep_verdicts: bool, idle_cycles: int = IDLE_CYCLES) -> dict[str, Any]:
    """The burst and the idle cycles after it, on a fresh cluster: mean seconds each."""
    config = EngineConfig(keep_verdicts=keep_verdicts)
    simulated = cluster(waiting)
    carried = NOTHING_CARRIED

    def cycle() -> float:
        nonlocal carried
        started = time.process_time()
        result = schedule(simulated.state, now=NOW, config=config, carried=carried)
        spent = time.process_time() - started
        carried = result.carried
        simulated.execute(result.plan)
        return spent

    cycle()  # the backlog refused once, as before the burst starts
    cycle()  # its statuses written: the cycle after them
    burst = []
    for start in range(0, BURST_GANGS, PER_CYCLE):
        for number in range(start, start + PER_CYCLE):
            burst_gang(simulated, number)
        burst.append(cycle())
    idle = [cycle() for _ in range(idle_cycles)]
    admitted = sum(1 for key, group in simulated.state.groups.items() if group.admitted)
    ahead = forecast_figures(simulated, config) if keep_verdicts else {}
    return ahead | {
        "burst_cycle_ms": round(statistics.fmean(burst) * 1000, 2),
        "idle_cycle_ms": round(statistics.fmean(idle) * 1000, 2),
        "burst_cycle_median_ms": round(statistics.median(burst) * 1000, 2),
        "idle_cycle_median_ms": round(statistics.median(idle) * 1000, 2),
        "admitted": admitted,
    }


def forecast_figures(simulated: SimulatedCluster, config: EngineConfig) -> dict[str, Any]:
    """One start-time forecast of the whole backlog, as the operator runs them (its
    horizon and cycles), but with no CPU budget: what a complete one costs."""
    started = time.process_time()
    ahead = run_forecast(simulated.state, now=NOW, config=config, reach=Reach())
    spent = time.process_time() - started
    starts = sum(e.outcome is Outcome.STARTS for e in ahead.estimates.values())
    return {
        "forecast_s": round(spent, 2),
        "forecast_cycles": ahead.cycles,
        "forecast_complete": ahead.complete,
        "forecast_starts": starts,
        "forecast_estimates": len(ahead.estimates),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--waiting",
        type=lambda text: [int(number) for number in text.split(",") if number],
        default=list(WAITING),
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--idle-cycles", type=int, default=IDLE_CYCLES)
    parser.add_argument("--only-kept", action="store_true", help="leave out every-cycle runs")
    args = parser.parse_args(argv)
    earlier = json.loads(args.output.read_text())["rows"] if args.output.exists() else []
    rows = [row for row in earlier if row["waiting"] not in args.waiting]  # others kept
    for waiting in args.waiting:
        row: dict[str, Any] = {"waiting": waiting}
        for switch, label in ((True, "kept"), (False, "every_cycle"))[: 1 if args.only_kept else 2]:
            figures = run(waiting, keep_verdicts=switch, idle_cycles=args.idle_cycles)
            row |= {f"{label}_{name}": value for name, value in figures.items()}
        rows = sorted([*rows, row], key=lambda each: int(each["waiting"]))
        print(f"[backlog] {row}", flush=True)
    exponents = {
        measure: exponent([(row["waiting"], row[measure]) for row in rows])
        for measure in rows[0]
        if measure.endswith("_ms")
    }
    results = {"date": rfc3339(time.time()), "machine": describe(), "rows": rows}
    results["idle_cycles"] = args.idle_cycles
    results["exponents"] = exponents
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"[backlog] exponents {exponents}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
