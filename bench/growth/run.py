"""How Muster's cost grows: with the cluster, and with the gangs waiting in its queue.

Two series, each point on a fresh local control plane, Muster only:

- ``nodes``: the default burst of bench/e2e/run.py (200 gang Jobs on 500 nodes x 8 GPUs,
  demand 39% of capacity) at 500, 1,000, 2,000 and 5,000 nodes, its Jobs scaled with
  the nodes so that every size asks the same share of its cluster.
- ``waiting``: the default burst at 500 nodes while 100, 500, 1,000, 2,000 and 5,000
  gangs wait behind a full pool of nodes for the whole burst (bench/growth/waiting.py), so
  every cycle of the burst carries them in its queue.

For each point, the operator's CPU seconds per 1,000 pods of the burst, its API
requests per pod, the engine's milliseconds per cycle of the burst and the
operator's peak RSS go to bench/results/growth.json, with the growth exponent of
each measure per series; the table and the plot (docs/images/cost-growth.png) in
docs/performance.md are generated from it (`python -m bench.e2e.report`).

    python -m bench.growth                                  # both series, every point
    python -m bench.growth --series nodes --sizes 500,1000  # some points of one series
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import sections
from bench.common.apiclient import ApiError
from bench.common.machine import describe
from bench.e2e import kueue
from bench.e2e.run import Parameters, Setup, run_mode, write_nodes
from bench.e2e.workload import make_workload
from bench.growth import report as growth_report
from bench.growth import waiting
from muster.api.times import rfc3339

RESULTS = growth_report.RESULTS
WORK_DIR = Path("/tmp/muster-growth")
SIZES = (500, 1000, 2000, 5000)
WAITING = (100, 500, 1000, 2000, 5000)
WAITING_NODES = 500
JOBS_PER_NODE = 200 / 500  # the default burst's share


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    results = _start(args.output)
    for series in args.series:
        points = args.sizes if series == "nodes" else args.waiting
        axis = growth_report.SERIES[series][0]
        for point in points:
            row = run_point(series, point, args.work_dir)
            others = [kept for kept in results.get(series, []) if kept[axis] != point]
            results[series] = sorted([*others, row], key=lambda each: int(each[axis]))
            results["exponents"] = growth_report.exponents(results)
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(results, indent=2) + "\n")
            print(f"[growth] {series} {point}: {row}", flush=True)
    if args.output == RESULTS:
        growth_report.write(results)
        print(f"[growth] table and plot in {sections.DOCS}")
    return 0


def _parser() -> argparse.ArgumentParser:
    def numbers(text: str) -> list[int]:
        return [int(number) for number in text.split(",") if number]

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--series",
        type=lambda text: [name for name in text.split(",") if name],
        default=list(growth_report.SERIES),
        help="comma-separated, from nodes,waiting (default both)",
    )
    parser.add_argument(
        "--sizes", type=numbers, default=list(SIZES), help="node counts (default 500 to 5,000)"
    )
    parser.add_argument(
        "--waiting",
        type=numbers,
        default=list(WAITING),
        help="waiting gangs (default 100 to 5,000)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=WORK_DIR,
        help=f"logs here, each cluster beside it (default {WORK_DIR})",
    )
    return parser


def _start(output: Path) -> dict[str, Any]:
    """The results document, with what is already in ``output`` kept: a point run
    again replaces its row, the others stay."""
    earlier = json.loads(output.read_text()) if output.exists() else {}
    kept = {series: earlier[series] for series in growth_report.SERIES if series in earlier}
    return {"date": rfc3339(time.time()), "machine": describe(), **kept}


def run_point(series: str, point: int, work_dir: Path) -> dict[str, Any]:
    """One point of a series on a fresh control plane: its row of growth.json."""
    nodes = point if series == "nodes" else WAITING_NODES
    params = parameters(nodes)
    workload = make_workload(
        jobs=params.jobs, gpus_per_pod=1, zone_share=params.zone_share, seed=params.seed
    )
    work_dir.mkdir(parents=True, exist_ok=True)
    before, after = (
        waiting.setup(point, gpus_per_node=params.gpus_per_node, ready_timeout_s=params.timeout_s)
        if series == "waiting"
        else (None, None)
    )
    setup = Setup(work_dir=work_dir, before_burst=before, after_settle=after)
    print(f"[growth] {series} {point}: {params.jobs} Jobs on {nodes} nodes", flush=True)
    try:
        figures = run_mode(
            "muster",
            params,
            workload,
            write_nodes(params, work_dir),
            keep=False,
            pods_ready_timeout=kueue.PODS_READY_TIMEOUT,  # no Kueue in this mode
            setup=setup,
        )
    except (ApiError, RuntimeError, OSError, subprocess.CalledProcessError) as error:
        figures = {"not_measured": f"{type(error).__name__}: {error}"}
    pods = sum(job.size for job in workload)
    return growth_report.cost(nodes, params.jobs, pods, figures) | (
        {"waiting": point} if series == "waiting" else {}
    )


def parameters(nodes: int) -> Parameters:
    """The default burst's parameters, its Jobs scaled to `nodes`."""
    return Parameters(
        nodes=nodes,
        gpus_per_node=8,
        # A thousand simulated nodes and more renew their Leases slower than 40 s
        # allows on a busy two-core machine, and a node that misses it is NotReady:
        # kube-scheduler then refuses the pods planned there. A longer lease keeps
        # them Ready; it changes no scheduling.
        node_lease_s=600,
        jobs=round(nodes * JOBS_PER_NODE),
        gpus_per_pod=1,
        zone_share=0.25,
        seed=7,
        hold="1h",
        settle_s=60.0,
        timeout_s=1800.0,
        submit_concurrency=16,
    )


if __name__ == "__main__":
    sys.exit(main())
