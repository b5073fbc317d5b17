"""End-to-end benchmark: one burst of gang Jobs, scheduled several ways, side by side.

Each mode gets a fresh local control plane (hack/cluster.py, KWOK nodes, audit log
on) and the same Jobs: ``plain`` (kube-scheduler alone, no gang), ``floor`` (the
pods gated, each released by one patch of a minimal client: bench/e2e/floor.py),
``native`` (Kubernetes 1.37's own gang scheduling), ``kueue`` (Kueue alone, with its
topology-aware scheduling) and ``muster`` (`muster run` gates and releases whole
gangs), all five by default; and ``kueue-muster`` (Kueue's quota, Muster's
placement). The burst is submitted at once; every pod (and every PodGroup, and
Kueue Workload) is watched until all Jobs run, or nothing has moved for ``--settle``
seconds. Figures are written to bench/results/e2e.json (the Kueue pair to
e2e-kueue.json) and the tables in docs/performance.md are regenerated from them.

    python -m bench.e2e                    # the default: 500 nodes x 8 GPUs, 200 Jobs
    python -m bench.e2e --modes floor,muster --nodes 100 --jobs 50   # a quick comparison
    python -m bench.e2e --quick            # a smoke run on a small cluster
    python -m bench.e2e --scale            # every mode at 5,000 nodes and 50,000 pods
    python -m bench.e2e --gpus-per-pod 4   # demand above capacity: gangs must wait
    python -m bench.e2e --modes kueue,kueue-muster   # beside Kueue
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from devtools.builds import HACK
from devtools.cluster.local import LocalCluster

from bench.common import sections
from bench.common.apiclient import ApiClient, ApiError, create_namespace
from bench.common.audit import count_requests_in_log
from bench.common.machine import describe
from bench.common.processes import spent, usage
from bench.common.stats import summarize
from bench.common.timeline import Timeline
from bench.e2e import floor, kueue, report
from bench.e2e.arguments import RESULTS, WORK_DIR, parse_args
from bench.e2e.controlplane import (
    cluster_down,
    cluster_up,
    cycle_figures,
    rollback_count,
    start_operator,
)
from bench.e2e.observe import follow_kueue_workloads, follow_muster_gangs, follow_pods
from bench.e2e.rollbacks import rollback_reasons
from bench.e2e.spending import (
    OPERATOR,
    operator_figures,
    request_figures,
    webhook_calls,
    webhook_figures,
)
from bench.e2e.workload import (
    KUEUE_MODES,
    MUSTER_MODES,
    GangJob,
    Mode,
    job_manifest,
    make_workload,
)
from muster.api.times import rfc3339

NAMESPACE = "bench"


@dataclass(frozen=True, slots=True)
class Parameters:
    """Everything that shapes a run; recorded with its results."""

    nodes: int
    gpus_per_node: int
    node_lease_s: int
    jobs: int
    gpus_per_pod: int
    zone_share: float
    seed: int
    hold: str
    settle_s: float
    timeout_s: float
    submit_concurrency: int


@dataclass(frozen=True, slots=True)
class Setup:
    """What a run sets up beside its mode, for benchmarks that reuse this one's runner.

    ``work_dir`` holds the operator's log, and each mode's cluster state sits beside it
    (``<work_dir>-<mode>``), so two benchmarks never take down each other's clusters.
    ``before_burst`` creates what the burst meets on the cluster (it returns once that
    is in place; the engine's cycles are counted from then on), ``after_settle`` reads
    what it needs once the burst has settled; the figures of both join the mode's.
    """

    work_dir: Path = WORK_DIR
    operator_flags: tuple[str, ...] = ()
    kueue_levels: tuple[str, ...] = kueue.TOPOLOGY_LEVELS
    before_burst: Callable[[ApiClient], Awaitable[dict[str, Any]]] | None = None
    after_settle: Callable[[ApiClient], Awaitable[dict[str, Any]]] | None = None
    idle_s: float = 0.0  # after the burst settles: this long with nothing new (`idle_cost`)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    params = Parameters(
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        node_lease_s=args.node_lease_seconds,
        jobs=args.jobs,
        gpus_per_pod=args.gpus_per_pod,
        zone_share=args.zone_share,
        seed=args.seed,
        hold="1h",
        settle_s=args.settle,
        timeout_s=args.timeout,
        submit_concurrency=args.submit_concurrency,
    )
    output: Path = args.output.resolve()
    workload = make_workload(
        jobs=params.jobs,
        gpus_per_pod=params.gpus_per_pod,
        zone_share=params.zone_share,
        seed=params.seed,
    )
    setup = Setup(work_dir=args.work_dir)
    setup.work_dir.mkdir(parents=True, exist_ok=True)
    nodes_file = write_nodes(params, setup.work_dir)
    results = start_results(params, workload, output if args.merge else None)
    for mode in args.modes:
        print(f"[bench] {mode}: {params.jobs} Jobs on {params.nodes} nodes", flush=True)
        try:
            figures = run_mode(
                mode,
                params,
                workload,
                nodes_file,
                keep=args.keep_clusters,
                pods_ready_timeout=args.kueue_pods_ready_timeout,
                setup=setup,
            )
        except (ApiError, RuntimeError, OSError, subprocess.CalledProcessError) as error:
            # One mode failing must not cost the others' figures; the reason is kept.
            figures = {"not_measured": f"{type(error).__name__}: {error}"}
        results["modes"][mode] = figures
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(results, indent=2) + "\n")
        print(f"[bench] {mode}: {report.one_line(figures)}", flush=True)
    print(f"[bench] results in {output}")
    if output.parent == RESULTS.parent:
        report.write_docs(results, output.name)
        print(f"[bench] table in {sections.DOCS}")
    return 0


def write_nodes(params: Parameters, directory: Path = WORK_DIR) -> Path:
    path = directory / f"nodes-{params.nodes}x{params.gpus_per_node}.yaml"
    command = [
        sys.executable,
        str(HACK / "nodes.py"),
        f"--nodes={params.nodes}",
        f"--gpus={params.gpus_per_node}",
    ]
    path.write_text(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return path


def start_results(
    params: Parameters, workload: list[GangJob], merge_from: Path | None
) -> dict[str, Any]:
    """The results document; with ``merge_from``, earlier figures of the same workload."""
    pods = sum(job.size for job in workload)
    parameters = {
        **asdict(params),
        "pods": pods,
        "zone_jobs": sum(job.topology_key is not None for job in workload),
        "demand_ratio": round(
            sum(job.gpus for job in workload) / (params.nodes * params.gpus_per_node), 3
        ),
    }
    results: dict[str, Any] = {
        "date": rfc3339(time.time()),
        "machine": describe(),
        "parameters": parameters,
        "modes": {},
    }
    if merge_from is not None and merge_from.exists():
        earlier = json.loads(merge_from.read_text())
        if earlier.get("parameters") != parameters:
            raise SystemExit(f"--merge: {merge_from} was measured with other parameters")
        results["modes"] = earlier.get("modes", {})
    return results


def run_mode(
    mode: Mode,
    params: Parameters,
    workload: list[GangJob],
    nodes_file: Path,
    *,
    keep: bool,
    pods_ready_timeout: str,
    setup: Setup = Setup(),
) -> dict[str, Any]:
    cluster = cluster_up(
        setup.work_dir.with_name(f"{setup.work_dir.name}-{mode}"),
        nodes_file=nodes_file,
        mode=mode,
        # Thousands of simulated nodes take minutes to register on two cores.
        nodes_timeout=max(120.0, params.nodes / 10),
        node_lease_seconds=params.node_lease_s,
        kueue_pods_ready_timeout=pods_ready_timeout,
    )
    operator, floor_client = None, None
    clients: dict[str, int] = {}
    try:
        if mode in MUSTER_MODES:
            operator = start_operator(
                cluster, setup.work_dir / "operator.log", setup.operator_flags
            )
            clients[OPERATOR] = operator.pid
        if mode == "floor":
            floor_client = floor.FloorClient(
                cluster.kubeconfig, NAMESPACE, setup.work_dir / "floor.log"
            )
            floor_client.start()
            clients[floor.USER_AGENT] = floor_client.pid
        prepared = asyncio.run(prepare(cluster, setup.before_burst))
        metrics_before = operator.metrics() if operator is not None else ""
        figures = asyncio.run(measure(mode, cluster, workload, params, clients, setup=setup))
        figures |= prepared
        if operator is not None:
            # An operator that ended during the run has no /metrics left to read.
            exit_code = operator.exit_code()
            figures["operator"]["exited_during_run"] = exit_code is not None
            figures["operator"]["exit_code"] = exit_code
            if exit_code is None:
                figures["operator"]["scheduling_cycles"] = cycle_figures(
                    operator.metrics(), metrics_before
                )
                figures["operator"]["rollbacks"] = rollback_count(operator.metrics())
        if "kueue" in figures:
            figures["kueue"]["pods_ready_timeout"] = pods_ready_timeout
        figures["date"] = rfc3339(time.time())
        return figures
    finally:
        for process in (operator, floor_client):
            if process is not None:
                process.stop()
        if not keep:
            cluster_down(cluster)


async def prepare(
    cluster: LocalCluster, before_burst: Callable[[ApiClient], Awaitable[dict[str, Any]]] | None
) -> dict[str, Any]:
    """What ``before_burst`` sets up, and its figures; nothing without it."""
    if before_burst is None:
        return {}
    async with await ApiClient.from_kubeconfig(cluster.kubeconfig) as api:
        return await before_burst(api)


async def measure(
    mode: Mode,
    cluster: LocalCluster,
    workload: list[GangJob],
    params: Parameters,
    clients: dict[str, int],
    *,
    setup: Setup,
) -> dict[str, Any]:
    """Submit the burst, watch it until it settles, and gather every figure.

    ``clients`` are the processes the mode adds to the control plane (the operator, the
    floor client) by name; their CPU is counted with the control plane's.
    """
    api = await ApiClient.from_kubeconfig(cluster.kubeconfig)
    timeline = Timeline({job.name: job.size for job in workload})
    pids = cluster.component_pids() | clients
    async with api:
        await create_namespace(api, NAMESPACE)
        if mode in KUEUE_MODES:
            levels = () if mode in MUSTER_MODES else setup.kueue_levels
            await create_queue(api, params, levels=levels)
        watches = [follow_pods]
        watches += [follow_muster_gangs] if mode in MUSTER_MODES else []
        watches += [follow_kueue_workloads] if mode in KUEUE_MODES else []
        listed = [asyncio.Event() for _ in watches]
        tasks = [
            asyncio.create_task(watch(api, NAMESPACE, timeline, flag))
            for watch, flag in zip(watches, listed, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(flag.wait() for flag in listed)), timeout=60)
        before = {name: usage(pid) for name, pid in pids.items()}
        hooks_before = webhook_calls(await api.text("/metrics"))
        load_before = os.getloadavg()[0]
        wall_start, start = time.time(), time.monotonic()
        await submit(api, workload, mode, params, timeline)
        submitted = time.monotonic() - start
        ended_because = await settle(timeline, start, params)
        end, wall_end = time.monotonic(), time.time()
        after = {name: usage(pid) for name, pid in pids.items()}
        hooks = webhook_figures(
            hooks_before, webhook_calls(await api.text("/metrics")), len(workload)
        )
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        rolled_back = await rollback_reasons(api, NAMESPACE) if OPERATOR in clients else {}
        idle = await idle_cost(clients.get(OPERATOR), setup.idle_s)
        settled = await setup.after_settle(api) if setup.after_settle else {}

    figures = summarize(timeline, started_at=start, ended_at=end) | settled | idle
    figures["submitted_in_s"] = round(submitted, 3)
    figures["ended_because"] = ended_because
    figures["processes"] = spent(before, after)
    # The machine is shared: what else ran shows in the load when the burst began.
    figures["load_average_1m_at_start"] = round(load_before, 2)
    calls = count_requests_in_log(cluster.audit_log, start=wall_start, end=wall_end)
    bound = max(figures["pods_bound"], 1)
    figures["api_requests"] = request_figures(calls, bound)
    if OPERATOR in clients:
        figures["operator"] = operator_figures(calls, figures["processes"][OPERATOR], bound)
        figures["operator"]["rollbacks_by_reason"] = rolled_back
        figures["operator"]["webhook_calls"] = hooks
    return figures


async def idle_cost(operator: int | None, seconds: float) -> dict[str, Any]:
    """The operator's CPU seconds per minute over `seconds` in which nothing is submitted
    (what its queue, its informers and its estimates cost at rest); nothing without an
    operator or a time to measure."""
    if operator is None or seconds <= 0:
        return {}
    before = usage(operator).cpu_seconds
    await asyncio.sleep(seconds)
    spent_s = usage(operator).cpu_seconds - before
    return {"idle": {"for_s": seconds, "operator_cpu_s_per_min": round(spent_s * 60 / seconds, 3)}}


async def create_queue(api: ApiClient, params: Parameters, *, levels: Sequence[str]) -> None:
    """Kueue's queue for the burst (bench/e2e/kueue.py), once Kueue admits into it; with
    ``levels``, its topology-aware scheduling on."""
    manifests = kueue.queue_manifests(
        namespace=NAMESPACE,
        nodes=params.nodes,
        gpus_per_node=params.gpus_per_node,
        levels=levels,
    )
    for manifest in manifests:
        await api.create(kueue.collection_path(manifest), manifest)
    queues = [m for m in manifests if m["kind"] in ("ClusterQueue", "LocalQueue")]
    deadline = time.monotonic() + 120
    for queue in queues:
        path = f"{kueue.collection_path(queue)}/{queue['metadata']['name']}"
        while not kueue.active(await api.request("GET", path)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kueue's {queue['kind']} did not become active")
            await asyncio.sleep(0.5)


async def submit(
    api: ApiClient, workload: list[GangJob], mode: Mode, params: Parameters, timeline: Timeline
) -> None:
    """Create every Job at once (bounded concurrency); a Job's clock starts on its 201."""
    limit = asyncio.Semaphore(params.submit_concurrency)
    path = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs"

    async def create(job: GangJob) -> None:
        async with limit:
            await api.create(path, job_manifest(job, mode, namespace=NAMESPACE, hold=params.hold))
            timeline.job_created(job.name, time.monotonic())

    await asyncio.gather(*(create(job) for job in workload))


async def settle(timeline: Timeline, start: float, params: Parameters) -> str:
    """Wait until every Job runs, nothing binds for a while, or the run times out."""
    while True:
        await asyncio.sleep(0.25)
        now = time.monotonic()
        if all(record.all_running_at is not None for record in timeline.jobs.values()):
            return "all Jobs running"
        if now - (timeline.last_progress_at or start) > params.settle_s:
            return f"no pod bound or started for {params.settle_s:.0f}s"
        if now - start > params.timeout_s:
            return f"timed out after {params.timeout_s:.0f}s"


if __name__ == "__main__":
    sys.exit(main())
