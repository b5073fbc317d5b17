"""Preferred topology levels end to end: Muster beside Kueue's topology-aware scheduling.

A cluster of zones > blocks > racks > nodes (bench/levels.py: by default 2 x 2 x 4 x 4
nodes of 8 GPUs) takes a burst of gang Jobs that all prefer one rack, two ways, each
on a fresh control plane (bench/e2e.py's runner), for each of a few orders of the
same Jobs (``--seeds``):

- ``muster``: Muster's operator, told the levels (`--topology-levels`), the Jobs
  opted in with `scheduling.muster.dev/topology-preferred: example.com/rack`;
- ``kueue``: Kueue alone, its flavor naming a `Topology` of the same levels, the
  Jobs carrying `kueue.x-k8s.io/podset-preferred-topology: example.com/rack`.

Once the burst settles, the pods and nodes say how many gangs sit in one rack (of
those that could), in one block, at the narrowest level they could, and how many
GPUs are left free in racks with nothing on them (bench/levels.py). The figures go to
bench/results/levels-e2e.json and its section of docs/performance.md.

    python bench/levels_e2e.py                 # both modes, eight bursts
    python bench/levels_e2e.py --modes muster --seeds 7  # one mode, one burst
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
from dataclasses import asdict
from typing import Any

from bench import kueue, levels, levels_report
from bench.apiclient import ApiClient, ApiError
from bench.e2e import NAMESPACE, Parameters, Setup, run_mode
from bench.machine import describe
from bench.workload import GangJob, Mode
from muster.api.times import rfc3339

RESULTS = levels_report.RESULTS
WORK_DIR = Path("/tmp/muster-levels")
MODES: tuple[Mode, ...] = ("muster", "kueue")
# One burst is a handful of gangs: which system leaves more racks whole can turn on the
# order they come in, so several orders are measured.
SEEDS = (1, 2, 3, 4, 5, 6, 7, 8)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    shape = levels.Shape()
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    nodes_file = WORK_DIR / "nodes.yaml"
    nodes_file.write_text(levels.nodes_yaml(shape))
    results = start_results(shape, args)
    for seed in args.seeds:
        workload = levels.make_workload(rounds=args.rounds, seed=seed)
        burst: dict[str, Any] = {"seed": seed, "modes": {}}
        results["bursts"].append(burst)
        for mode in args.modes:
            print(f"[levels] seed {seed}, {mode}: {len(workload)} Jobs", flush=True)
            figures = run(mode, shape, workload, nodes_file, seed=seed, args=args)
            burst["modes"][mode] = figures
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(results, indent=2) + "\n")
            print(f"[levels] seed {seed}, {mode}: {figures.get('placement', figures)}", flush=True)
    if args.output == RESULTS:
        levels_report.write(results)
        print(f"[levels] section of {RESULTS.name} regenerated")
    return 0


def run(
    mode: Mode,
    shape: levels.Shape,
    workload: Sequence[GangJob],
    nodes_file: Path,
    *,
    seed: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One burst through one mode on a fresh control plane; a failure is kept as such."""
    params = Parameters(
        nodes=shape.nodes,
        gpus_per_node=shape.gpus_per_node,
        node_lease_s=40,
        jobs=len(workload),
        gpus_per_pod=0,  # each Job has its own (bench/levels.py's GANG_MIX)
        zone_share=0.0,
        seed=seed,
        hold="1h",
        settle_s=args.settle,
        timeout_s=args.timeout,
        submit_concurrency=16,
    )
    try:
        return run_mode(
            mode,
            params,
            list(workload),
            nodes_file,
            keep=args.keep_clusters,
            pods_ready_timeout=kueue.PODS_READY_TIMEOUT,
            setup=setup(workload),
        )
    except (ApiError, RuntimeError, OSError, subprocess.CalledProcessError) as error:
        return {"not_measured": f"{type(error).__name__}: {error}"}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--modes",
        type=lambda text: [mode for mode in text.split(",") if mode],
        default=list(MODES),
        help=f"comma-separated, from {','.join(MODES)} (default both)",
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="rounds of the gang mix (2: 67%% of the GPUs)"
    )
    parser.add_argument(
        "--seeds",
        type=lambda text: [int(seed) for seed in text.split(",") if seed],
        default=list(SEEDS),
        help="one burst per seed, each its own order of the mix (default 1 to 8)",
    )
    parser.add_argument("--settle", type=float, default=60.0, help="stop after this long idle")
    parser.add_argument("--timeout", type=float, default=600.0, help="longest run of a mode")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--keep-clusters", action="store_true", help="leave each cluster up")
    args = parser.parse_args(argv)
    unknown = [mode for mode in args.modes if mode not in MODES]
    if unknown:
        parser.error(f"unknown mode(s): {', '.join(unknown)}")
    return args


def setup(workload: Sequence[GangJob]) -> Setup:
    """Both systems know the same levels; the placement is read before the cluster goes."""

    async def read_placement(api: ApiClient) -> dict[str, Any]:
        pods = await api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")
        nodes = await api.request("GET", "/api/v1/nodes")
        return {"placement": levels.placement(workload, pods["items"], nodes["items"])}

    return Setup(
        work_dir=WORK_DIR,
        operator_flags=(f"--topology-levels={','.join(levels.LEVELS)}",),
        kueue_levels=levels.LEVELS,
        after_settle=read_placement,
    )


def start_results(shape: levels.Shape, args: argparse.Namespace) -> dict[str, Any]:
    """The results document: what every burst shares, then one entry per burst."""
    workload = levels.make_workload(rounds=args.rounds, seed=0)
    gpus = sum(job.gpus for job in workload)
    return {
        "date": rfc3339(time.time()),
        "machine": describe(),
        "parameters": {
            "shape": asdict(shape),
            "levels": list(levels.LEVELS),
            "preferred": levels.RACK_KEY,
            "gang_mix": [list(pair) for pair in levels.GANG_MIX],
            "rounds": args.rounds,
            "jobs": len(workload),
            "pods": sum(job.size for job in workload),
            "gpus_asked": gpus,
            "demand_ratio": round(gpus / shape.gpus, 3),
            "seeds": args.seeds,
            "settle_s": args.settle,
            "timeout_s": args.timeout,
        },
        "bursts": [],
    }


if __name__ == "__main__":
    sys.exit(main())
