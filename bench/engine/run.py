"""Decision-engine benchmark: the issue's figures, each beside a plain-Python loop.

Run with `.venv/bin/python -m bench.engine` (or `make bench-engine`). It builds a
snapshot of 5,000 nodes and 50,000 bound pods, measures the engine, measures a
straightforward pure-Python implementation of the same step in the same run, prints a
table and writes `bench/results/engine.json`.

The plain loops are the obvious code a first version would have: dictionaries per
node, every pod checked against every node. Where they would take minutes (a cycle
over 1,000 gangs) they run on a prefix of the work and the figure is scaled up; the
table says so.

The inter-pod figures (required anti-affinity, hard topology spread, self-affinity)
run on a second snapshot of the same size whose bound pods carry `app` labels and, a
quarter of them, hostname anti-affinity, so every placement consults the engine's
label and existing anti-affinity indexes. They have no plain-Python counterpart; each
scenario's decision is checked (one pod per node, balanced zones, one zone) and the
run stops if it is not the expected one. `--rules-only` measures just these and keeps
the other figures already in the results file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.engine.cluster import NODES, RESULTS, ZONE, base_state
from bench.engine.measures import (
    measure_estimates,
    measure_gang,
    measure_preemption,
    measure_queue,
    measure_updates,
)
from bench.engine.plain import PlainCluster
from bench.engine.rules import measure_quiet_cycle, measure_rules


def machine() -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if "model name" in line),
        platform.processor(),
    )
    return {
        "cpu_model": model,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


TARGETS_MS = {
    "gang_64_pods_no_topology": 5.0,
    "gang_64_pods_zone_key": 20.0,
    "gang_64_pods_rack_key": 20.0,
    "cycle_1000_gangs": 1000.0,
    "cycle_1000_gangs_preempting": 1000.0,
    "preemption_64_pod_gang": 50.0,
}
RULE_GOALS_MS = {
    "gang_64_pods_hostname_anti_affinity": 20.0,
    "gang_64_pods_zone_spread": 20.0,
    "cycle_1000_gangs_inter_pod_rules": 2000.0,
}


def _row(
    name: str, engine: float, target: float, plain: float, *, speedup: float, unit: str
) -> str:
    return (
        f"{name:30} {engine:>10.2f} {unit} {target:>7.0f} {unit} "
        f"{plain:>12.1f} {unit} {speedup:>9.1f}x"
    )


def print_table(figures: dict[str, Any]) -> None:
    print(f"{'figure':30} {'engine':>13} {'target':>10} {'plain Python':>15} {'speedup':>10}")
    for name, target in TARGETS_MS.items():
        row = figures[name]
        print(
            _row(
                name,
                row["engine_ms"],
                target,
                row["plain_python_ms"],
                speedup=row["speedup"],
                unit="ms",
            )
        )
    update = figures["update_per_pod_event"]
    engine_us = max(update["engine_create_us"], update["engine_delete_us"])
    rebuild_us = update["plain_python_rebuild_us"]
    print(
        _row(
            "update_per_pod_event",
            engine_us,
            20,
            rebuild_us,
            speedup=update["speedup"],
            unit="us",
        )
    )


def print_rules(figures: dict[str, Any]) -> None:
    print(f"{'inter-pod figure':38} {'median':>13} {'p90':>10} {'goal':>10}")
    for name, target in RULE_GOALS_MS.items():
        row = figures[name]
        verdict = "met" if row["goal_met"] else "MISSED"
        print(
            f"{name:38} {row['engine_ms']:>10.2f} ms {row['engine_p90_ms']:>7.2f} ms"
            f" {target:>7.0f} ms  {verdict}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--estimates-only",
        action="store_true",
        help="measure only the start-time estimate figures; keep the others in the results",
    )
    parser.add_argument(
        "--quiet-cycle-only",
        action="store_true",
        help="measure only the cycle with little to decide; keep the others in the results",
    )
    parser.add_argument(
        "--rules-only",
        action="store_true",
        help="measure only the inter-pod figures; keep the others already in the results",
    )
    args = parser.parse_args(argv)
    load = os.getloadavg()
    figures: dict[str, Any]
    if args.estimates_only:
        figures = json.loads(RESULTS.read_text())
        measure_estimates(base_state()[0], figures)
        figures["estimates"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
        print(json.dumps(figures["estimates"], indent=2))
        return 0
    if args.quiet_cycle_only:
        figures = json.loads(RESULTS.read_text())
        measure_quiet_cycle(figures)
        RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
        print(json.dumps(figures["cycle_quiet_admitted_gangs"], indent=2))
        return 0
    figures = json.loads(RESULTS.read_text()) if args.rules_only else measure_all()
    measure_rules(figures)
    for name, target in RULE_GOALS_MS.items():
        figures[name]["target_ms"] = target
        figures[name]["goal_met"] = figures[name]["engine_ms"] <= target
    figures["inter_pod_snapshot"]["load_average_at_start"] = [round(x, 2) for x in load]
    figures["machine"] = machine()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    print_table(figures)
    print_rules(figures)
    return 0


def measure_all() -> dict[str, Any]:
    """Every figure but the inter-pod ones, on the cluster without app labels."""
    started = time.perf_counter()
    state, objects = base_state()
    build = time.perf_counter() - started
    plain = PlainCluster(objects)
    figures: dict[str, Any] = {
        "snapshot": {"nodes": NODES, "bound_pods": len(state.pods), "build_s": round(build, 2)},
    }
    measure_gang(state, plain, None, figures, "gang_64_pods_no_topology")
    measure_gang(state, plain, ZONE, figures, "gang_64_pods_zone_key")
    measure_gang(state, plain, "rack", figures, "gang_64_pods_rack_key")
    measure_queue(state, plain, figures, "cycle_1000_gangs", (0,))
    measure_queue(state, plain, figures, "cycle_1000_gangs_preempting", (0, 0, 50, 200))
    measure_updates(state, plain, figures)
    measure_estimates(state, figures)
    measure_preemption(figures)
    measure_quiet_cycle(figures)
    for name, target in TARGETS_MS.items():
        figures[name]["target_ms"] = target
    figures["update_per_pod_event"]["target_us"] = 20.0
    return figures


if __name__ == "__main__":
    sys.exit(main())
