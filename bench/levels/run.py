"""Preferred topology levels end to end: Muster beside Kueue's topology-aware scheduling.

A cluster of zones > blocks > racks > nodes (bench/levels/shape.py: by default 2 x 2 x 4 x 4
nodes of 8 GPUs) takes gang Jobs that all prefer one rack, two ways, each on a fresh
control plane (bench/e2e/run.py's runner), for each of a few orders of the same Jobs, in
two scenarios: ``burst`` (one burst on the empty cluster, ``--seeds``) and ``waves``
(bench/levels/waves.py: a first wave, half of it finishing soon, then a second wave
beyond what is left, ``--wave-seeds``). The two systems:

- ``muster``: Muster's operator, told the levels (`--topology-levels`), the Jobs
  opted in with `scheduling.muster.dev/topology-preferred: example.com/rack`;
- ``kueue``: Kueue alone, its flavor naming a `Topology` of the same levels, the
  Jobs carrying `kueue.x-k8s.io/podset-preferred-topology: example.com/rack`.

Once the burst settles (in the waves, as each gang is bound), the pods and nodes say
how many gangs sit in one rack (of those that could), in one block, at the narrowest
level they could, and how many GPUs are left free in racks with nothing on them
(bench/levels/shape.py). The figures go to bench/results/levels-e2e.json, one section a
scenario (a scenario not run keeps its figures), and its section of
docs/performance.md.

    python -m bench.levels                 # both modes, both scenarios
    python -m bench.levels --scenarios burst --modes muster --seeds 7
    python -m bench.levels --scenarios waves --wave-seeds 1,2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.common.apiclient import ApiClient, ApiError
from bench.common.machine import describe
from bench.common.stats import distribution
from bench.e2e import kueue
from bench.e2e.run import NAMESPACE, Parameters, Setup, run_mode
from bench.e2e.workload import KUEUE_MODES, GangJob, Mode, job_manifest
from bench.levels import report as levels_report
from bench.levels import shape as levels
from bench.levels import waves as levels_waves
from muster.api.times import rfc3339

RESULTS = levels_report.RESULTS
WORK_DIR = Path("/tmp/muster-levels")
MODES: tuple[Mode, ...] = ("muster", "kueue")
# One burst is a handful of gangs: which system leaves more racks whole can turn on the
# order they come in, so several orders are measured.
SEEDS = (1, 2, 3, 4, 5, 6, 7, 8)
# The waves take minutes a run (about 20 for the eight, both systems).
WAVE_SEEDS = SEEDS
SCENARIOS = ("burst", "waves")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    shape = levels.Shape()
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    nodes_file = WORK_DIR / "nodes.yaml"
    nodes_file.write_text(levels.nodes_yaml(shape))
    results = start_results(args.output)
    if "burst" in args.scenarios:
        results |= burst_results(shape, args)
        for seed in args.seeds:
            workload = levels.make_workload(rounds=args.rounds, seed=seed)
            burst: dict[str, Any] = {"seed": seed, "modes": {}}
            results["bursts"].append(burst)
            for mode in args.modes:
                print(f"[levels] seed {seed}, {mode}: {len(workload)} Jobs", flush=True)
                figures = run(mode, shape, workload, nodes_file, seed=seed, args=args)
                burst["modes"][mode] = figures
                save(results, args.output)
                print(f"[levels] seed {seed}, {mode}: {figures.get('placement', figures)}")
    if "waves" in args.scenarios:
        results["waves"] = waves_results(shape, args)
        for seed in args.wave_seeds:
            run_waves(results["waves"], shape, nodes_file, seed=seed, args=args)
            save(results, args.output)
    if args.output == RESULTS:
        levels_report.write(results)
        print(f"[levels] section of {RESULTS.name} regenerated")
    return 0


def save(results: dict[str, Any], output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n")


def run_waves(
    section: dict[str, Any],
    shape: levels.Shape,
    nodes_file: Path,
    *,
    seed: int,
    args: argparse.Namespace,
) -> None:
    """The two waves of ``seed`` through each mode, into the waves section."""
    waves = levels_waves.make_waves(seed=seed)
    entry: dict[str, Any] = {
        "seed": seed,
        "short": waves.short,
        "demand_ratio_after_churn": round(waves.demand_after_churn / shape.gpus, 3),
        "modes": {},
    }
    section["runs"].append(entry)
    for mode in args.modes:
        print(f"[levels] waves, seed {seed}, {mode}", flush=True)
        wave = second_wave(mode, waves, args)
        figures = run(mode, shape, waves.first, nodes_file, seed=seed, args=args, after=wave)
        entry["modes"][mode] = figures
        print(f"[levels] waves, seed {seed}, {mode}: {figures.get('waves', figures)}")


def run(
    mode: Mode,
    shape: levels.Shape,
    workload: Sequence[GangJob],
    nodes_file: Path,
    *,
    seed: int,
    args: argparse.Namespace,
    after: AfterSettle | None = None,
) -> dict[str, Any]:
    """One burst through one mode on a fresh control plane; a failure is kept as such.
    ``after`` replaces reading the placement once the burst settles."""
    params = Parameters(
        nodes=shape.nodes,
        gpus_per_node=shape.gpus_per_node,
        node_lease_s=40,
        jobs=len(workload),
        gpus_per_pod=0,  # each Job has its own (bench/levels/shape.py's GANG_MIX)
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
            setup=setup(after or read_placement(workload)),
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
    parser.add_argument(
        "--scenarios",
        type=lambda text: [name for name in text.split(",") if name],
        default=list(SCENARIOS),
        help=f"comma-separated, from {','.join(SCENARIOS)} (default both)",
    )
    parser.add_argument(
        "--wave-seeds",
        type=lambda text: [int(seed) for seed in text.split(",") if seed],
        default=list(WAVE_SEEDS),
        help="one run of the waves per seed (default 1 to 8)",
    )
    parser.add_argument(
        "--wave-settle",
        type=float,
        default=30.0,
        help="end the second wave after this long without a gang bound",
    )
    parser.add_argument("--settle", type=float, default=60.0, help="stop after this long idle")
    parser.add_argument("--timeout", type=float, default=600.0, help="longest run of a mode")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--keep-clusters", action="store_true", help="leave each cluster up")
    args = parser.parse_args(argv)
    unknown = [mode for mode in args.modes if mode not in MODES]
    unknown += [name for name in args.scenarios if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown mode(s) or scenario(s): {', '.join(unknown)}")
    return args


def second_wave(mode: Mode, waves: levels_waves.Waves, args: argparse.Namespace) -> AfterSettle:
    """Once the first wave runs: judge it, wait for its short gangs to finish, submit
    the second wave and follow it until it is bound or nothing more binds."""

    async def follow(api: ApiClient) -> dict[str, Any]:
        nodes = (await api.request("GET", "/api/v1/nodes"))["items"]
        moments = levels_waves.Moments(waves.jobs, nodes)
        moments.observe(await list_pods(api), time.monotonic())
        pods, waited = await wait_for_short(api, mode, waves, timeout=args.timeout)
        figures: dict[str, Any] = dict(waited)
        figures["at_second_wave"] = levels.fragmentation(nodes, levels_waves.in_use(pods))
        created: dict[str, float] = {}
        path = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs"
        for job in waves.second:
            await api.create(path, job_manifest(job, mode, namespace=NAMESPACE, hold="1h"))
            created[job.name] = time.monotonic()
        last = start = time.monotonic()
        while True:
            await asyncio.sleep(1.0)
            pods = await list_pods(api)
            now = time.monotonic()
            if moments.observe(pods, now):
                last = now
            if all(name in moments.seen for name in created):
                ended = "every gang of the second wave bound"
            elif now - last > args.wave_settle:
                ended = f"no gang bound for {args.wave_settle:.0f}s"
            elif now - start > args.timeout:
                ended = f"timed out after {args.timeout:.0f}s"
            else:
                continue
            break
        figures["second_wave_ended_because"] = ended
        figures["second_wave_time_to_all_bound_s"] = distribution(moments.bound_after(created))
        return {"waves": moments.figures(pods) | figures}

    return follow


async def wait_for_short(
    api: ApiClient, mode: Mode, waves: levels_waves.Waves, *, timeout: float
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The pods once the first wave's short gangs are over (levels_waves), and after
    how long their pods had finished and they were over."""
    short, start = set(waves.short), time.monotonic()
    seconds: dict[str, float] = {}
    while True:
        pods = await list_pods(api)
        if not any(held.job in short for held in levels.holding(pods)):
            seconds.setdefault("short_pods_finished_after_s", round(time.monotonic() - start, 1))
            jobs = await api.request("GET", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs")
            over = levels_waves.finished_jobs(jobs["items"])
            if mode in KUEUE_MODES:
                path = f"/apis/{kueue.API_VERSION}/namespaces/{NAMESPACE}/{kueue.WORKLOADS}"
                over &= levels_waves.finished_workloads((await api.request("GET", path))["items"])
            if short <= over:
                seconds["short_over_after_s"] = round(time.monotonic() - start, 1)
                return pods, seconds
        if time.monotonic() - start > timeout:
            raise RuntimeError("the short gangs of the first wave did not finish")
        await asyncio.sleep(1.0)


AfterSettle = Callable[[ApiClient], Awaitable[dict[str, Any]]]


def read_placement(workload: Sequence[GangJob]) -> AfterSettle:
    """The placement, read before the cluster goes."""

    async def read(api: ApiClient) -> dict[str, Any]:
        nodes = await api.request("GET", "/api/v1/nodes")
        pods = await list_pods(api)
        return {"placement": levels.placement(workload, pods, nodes["items"])}

    return read


async def list_pods(api: ApiClient) -> list[dict[str, Any]]:
    listed = await api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")
    items: list[dict[str, Any]] = listed["items"]
    return items


def setup(after_settle: AfterSettle) -> Setup:
    """Both systems know the same levels."""
    return Setup(
        work_dir=WORK_DIR,
        operator_flags=(f"--topology-levels={','.join(levels.LEVELS)}",),
        kueue_levels=levels.LEVELS,
        after_settle=after_settle,
    )


def start_results(output: Path) -> dict[str, Any]:
    """The results document: the scenarios not run keep their figures from ``output``."""
    earlier: dict[str, Any] = json.loads(output.read_text()) if output.exists() else {}
    return earlier


def shared_parameters(shape: levels.Shape, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "shape": asdict(shape),
        "levels": list(levels.LEVELS),
        "preferred": levels.RACK_KEY,
        "gang_mix": [list(pair) for pair in levels.GANG_MIX],
        "settle_s": args.settle,
        "timeout_s": args.timeout,
    }


def burst_results(shape: levels.Shape, args: argparse.Namespace) -> dict[str, Any]:
    """The burst's section: what every burst shares, then one entry per burst."""
    workload = levels.make_workload(rounds=args.rounds, seed=0)
    gpus = sum(job.gpus for job in workload)
    return {
        "date": rfc3339(time.time()),
        "machine": describe(),
        "parameters": shared_parameters(shape, args)
        | {
            "rounds": args.rounds,
            "jobs": len(workload),
            "pods": sum(job.size for job in workload),
            "gpus_asked": gpus,
            "demand_ratio": round(gpus / shape.gpus, 3),
            "seeds": args.seeds,
        },
        "bursts": [],
    }


def waves_results(shape: levels.Shape, args: argparse.Namespace) -> dict[str, Any]:
    """The waves' section: what every run shares, then one entry per seed."""
    waves = levels_waves.make_waves(seed=0)
    first, second = (sum(job.gpus for job in wave) for wave in (waves.first, waves.second))
    return {
        "date": rfc3339(time.time()),
        "machine": describe(),
        "parameters": shared_parameters(shape, args)
        | {
            "first_wave": {"jobs": len(waves.first), "gpus": first, "short": len(waves.short)},
            "short_hold": levels_waves.SHORT_HOLD,
            "second_wave": {"jobs": len(waves.second), "gpus": second},
            "second_wave_settle_s": args.wave_settle,
            "seeds": args.wave_seeds,
        },
        "runs": [],
    }


if __name__ == "__main__":
    sys.exit(main())
