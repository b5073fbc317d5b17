"""How Muster's cost grows with the cluster: the default burst, scaled, at four sizes.

The default burst of bench/e2e.py (200 gang Jobs on 500 nodes x 8 GPUs, demand 39% of
capacity) is run through Muster at 500, 1,000, 2,000 and 5,000 nodes, with the Jobs
scaled with the nodes so that every size asks the same share of its cluster. Each
size gets a fresh local control plane. For each, the operator's CPU seconds per
1,000 pods, its API requests per pod, the engine's milliseconds per cycle and the
operator's peak RSS go to bench/results/growth.json; the table and the plot
(docs/images/cost-growth.png) in docs/performance.md are generated from it
(`python -m bench.report`).

    python bench/growth.py                      # all four sizes
    python bench/growth.py --sizes 500,1000     # some of them
"""

from __future__ import annotations

import sys
from pathlib import Path

# `make bench` runs this file as a script; its imports are relative to the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from bench import growth_report, kueue, sections
from bench.apiclient import ApiError
from bench.e2e import WORK_DIR, Parameters, run_mode, write_nodes
from bench.machine import describe
from bench.workload import make_workload
from muster.api.times import rfc3339

RESULTS = growth_report.RESULTS
SIZES = (500, 1000, 2000, 5000)
JOBS_PER_NODE = 200 / 500  # the default burst's share


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(size) for size in text.split(",") if size],
        default=list(SIZES),
        help="comma-separated node counts (default 500,1000,2000,5000)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"date": rfc3339(time.time()), "machine": describe(), "sizes": []}
    for nodes in args.sizes:
        params = parameters(nodes)
        print(f"[growth] {params.jobs} Jobs on {nodes} nodes", flush=True)
        workload = make_workload(
            jobs=params.jobs, gpus_per_pod=1, zone_share=params.zone_share, seed=params.seed
        )
        try:
            figures = run_mode(
                "muster",
                params,
                workload,
                write_nodes(params),
                keep=False,
                pods_ready_timeout=kueue.PODS_READY_TIMEOUT,  # no Kueue in this mode
            )
        except (ApiError, RuntimeError, OSError, subprocess.CalledProcessError) as error:
            figures = {"not_measured": f"{type(error).__name__}: {error}"}
        pods = sum(job.size for job in workload)
        results["sizes"].append(growth_report.cost(nodes, params.jobs, pods, figures))
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=2) + "\n")
        print(f"[growth] {nodes} nodes: {results['sizes'][-1]}", flush=True)
    if args.output == RESULTS:
        growth_report.write(results)
        print(f"[growth] table and plot in {sections.DOCS}")
    return 0


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
