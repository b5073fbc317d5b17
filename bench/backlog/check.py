"""A backlog beside a burst, on a local cluster with Muster as the benchmarks run it: what
1,000 gangs that can never start cost a small burst, side by side in one run.

Two runs, each on a fresh control plane of `NODES` simulated nodes: a burst of
`BURST_JOBS` four-pod gang Jobs alone, then the same burst after `WAITING` gangs were
queued behind a full pool of nodes (bench/growth/waiting.py: pinned to the pool, at a
priority below everyone's, so none can start or preempt). After each burst has
settled, the operator's CPU is read over `IDLE_S` seconds in which nothing is
submitted. The figures and their ratios, beside the goals, go to
bench/results/backlog-check.json:

- the burst's time to its last bind, beside the backlog, at most `TIME_RATIO` times
  the time alone;
- the mean scheduling cycle during the burst, at most `CYCLE_RATIO` times alone;
- the idle backlog, at most `IDLE_CPU_S_PER_MIN` CPU seconds a minute;
- no waiting gang's pod bound: they hold their pods for a day, so one bound at any
  moment is still bound when counted.

    nice .venv/bin/python -m bench.backlog.check
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common.machine import describe
from bench.e2e import kueue
from bench.e2e.run import Setup, run_mode, write_nodes
from bench.e2e.workload import GangJob
from bench.growth import waiting
from bench.growth.run import parameters
from muster.api.times import rfc3339

RESULTS = Path(__file__).resolve().parents[1] / "results" / "backlog-check.json"
WORK_DIR = Path("/tmp/muster-backlog-check")
NODES = 100
BURST_JOBS, BURST_SIZE = 40, 4
WAITING = 1000
IDLE_S = 60.0
TIME_RATIO, CYCLE_RATIO, IDLE_CPU_S_PER_MIN = 1.25, 2.0, 3.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--waiting", type=int, default=WAITING)
    args = parser.parse_args(argv)
    params = replace(parameters(NODES), jobs=BURST_JOBS)
    burst = [GangJob(f"gang-{i:02d}", BURST_SIZE, 1, None) for i in range(BURST_JOBS)]
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    nodes_file = write_nodes(params, WORK_DIR)
    before, after = waiting.setup(
        args.waiting, gpus_per_node=params.gpus_per_node, ready_timeout_s=params.timeout_s
    )
    alone = Setup(work_dir=WORK_DIR, idle_s=IDLE_S)
    beside = replace(alone, before_burst=before, after_settle=after)
    runs = {}
    for name, setup in (("alone", alone), ("beside", beside)):
        print(f"[backlog-check] {name}: {BURST_JOBS} gangs of {BURST_SIZE}", flush=True)
        figures = run_mode(
            "muster",
            params,
            burst,
            nodes_file,
            keep=False,
            pods_ready_timeout=kueue.PODS_READY_TIMEOUT,  # no Kueue in this mode
            setup=setup,
        )
        runs[name] = _row(figures)
    results = {
        "date": rfc3339(time.time()),
        "machine": describe(),
        "nodes": NODES,
        "burst": {"jobs": BURST_JOBS, "pods_per_job": BURST_SIZE},
        "waiting": args.waiting,
        "runs": runs,
        "checks": _checks(runs["alone"], runs["beside"]),
    }
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results["checks"], indent=2))
    return 0 if all(check["met"] for check in results["checks"].values()) else 1


def _row(figures: dict[str, Any]) -> dict[str, Any]:
    cycles = figures.get("operator", {}).get("scheduling_cycles", {})
    return {
        "last_bind_after_s": figures.get("last_bind_after_s"),
        "pods_bound": figures.get("pods_bound"),
        "cycles": cycles.get("cycles"),
        "cycle_mean_s": cycles.get("mean_s"),
        "idle_operator_cpu_s_per_min": figures.get("idle", {}).get("operator_cpu_s_per_min"),
        "waiting_pods_bound": figures.get("waiting_pods_bound"),
        "backlog_set_up_in_s": figures.get("waiting_set_up_in_s"),
        "partially_started_jobs": figures.get("partially_started_jobs"),
    }


def _checks(alone: dict[str, Any], beside: dict[str, Any]) -> dict[str, dict[str, Any]]:
    time_ratio = _ratio(beside["last_bind_after_s"], alone["last_bind_after_s"])
    cycle_ratio = _ratio(beside["cycle_mean_s"], alone["cycle_mean_s"])
    idle = beside["idle_operator_cpu_s_per_min"]
    bound = beside["waiting_pods_bound"]
    return {
        "burst_time_ratio": _check(time_ratio, TIME_RATIO),
        "cycle_mean_ratio": _check(cycle_ratio, CYCLE_RATIO),
        "idle_cpu_s_per_min": _check(idle, IDLE_CPU_S_PER_MIN),
        "waiting_pods_bound": _check(bound, 0),
    }


def _ratio(over: float | None, under: float | None) -> float | None:
    return None if over is None or not under else round(over / under, 3)


def _check(value: float | None, at_most: float) -> dict[str, Any]:
    return {"value": value, "at_most": at_most, "met": value is not None and value <= at_most}


if __name__ == "__main__":
    sys.exit(main())
