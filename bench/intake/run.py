"""Intake at scale: gang Jobs submitted at once, each expanded (its Workload and its
PodGroup created) and told (its PodGroup's condition written), timed beside the rate at
which the API server accepts the Jobs themselves.

The Jobs are suspended, as a queue such as Kueue holds them: the Job controller makes
no pods, so what is timed is Muster's intake, not the Job controller's pace of making
pods (its own client limit) nor the admission of those pods. The operator runs as the
benchmarks run it (bench/e2e/controlplane.py: the admin's kubeconfig and the client
limit the control plane's own clients have here). The webhooks it registers itself
admit the Jobs and, since it is not its ServiceAccount, its own PodGroups and
Workloads too (its log says so): a cost it does not pay as installed. Each object is
stamped when a watch of the benchmark's own first delivers it (the API server's
timestamps have a resolution of a second). Figures go to bench/results/intake.json:

- accepted: Jobs a second, from the first create sent to the last answered
  (`CONCURRENCY` creates in flight);
- expanded and told: Jobs a second, from the first create sent until the last Job's
  PodGroup and Workload were seen, and until the last PodGroup carried its condition;
  and per Job, from its create answered to its PodGroup told (p50, p99, max);
- where the operator's time went: its API requests by call (the audit log) per Job,
  the least time they take at its client limit, and its CPU seconds.

    nice .venv/bin/python -m bench.intake --jobs 10000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from devtools.cluster.control_plane import CLIENT_BURST, CLIENT_QPS

from bench.common.apiclient import ApiClient, create_namespace
from bench.common.audit import count_requests_in_log
from bench.common.machine import describe
from bench.common.processes import spent, usage
from bench.common.stats import percentile
from bench.e2e.controlplane import cluster_down, cluster_up, start_operator
from bench.e2e.observe import scheduled_condition
from bench.e2e.run import write_nodes
from bench.e2e.spending import OPERATOR, operator_figures
from bench.e2e.workload import GangJob, job_manifest
from bench.growth.run import parameters
from muster.api.constants import API_VERSION, POD_GROUP_PLURAL, WORKLOAD_PLURAL
from muster.api.times import rfc3339

RESULTS = Path(__file__).resolve().parents[1] / "results" / "intake.json"
WORK_DIR = Path("/tmp/muster-intake")
NAMESPACE = "bench-intake"
NODES = 50  # the intake reads no node; a small pool keeps the cluster's start short
GANG = 4  # pods each Job would run
CONCURRENCY = 16
TIMEOUT_S = 3600.0


@dataclass
class Seen:
    """When the benchmark's watches first saw each Job's objects (monotonic seconds)."""

    accepted: dict[str, float] = field(default_factory=dict)
    pod_groups: dict[str, float] = field(default_factory=dict)
    workloads: dict[str, float] = field(default_factory=dict)
    told: dict[str, float] = field(default_factory=dict)

    def expanded(self, name: str) -> float | None:
        """When both of the Job's children had been seen."""
        group, workload = self.pod_groups.get(name), self.workloads.get(name)
        return None if group is None or workload is None else max(group, workload)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    params = replace(parameters(NODES), jobs=args.jobs)
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    cluster = cluster_up(
        WORK_DIR.with_name(f"{WORK_DIR.name}-muster"),
        nodes_file=write_nodes(params, WORK_DIR),
        mode="muster",
        nodes_timeout=120.0,
        node_lease_seconds=params.node_lease_s,
    )
    operator = None
    try:
        operator = start_operator(cluster, WORK_DIR / "operator.log")
        figures = asyncio.run(_intake(cluster.kubeconfig, args.jobs, operator.pid))
        calls = count_requests_in_log(
            cluster.audit_log, start=figures.pop("wall_start"), end=figures.pop("wall_end")
        )
        spending = operator_figures(calls, figures.pop("operator_process"), args.jobs)
        figures["operator"] = _where_the_time_went(spending, args.jobs)
    finally:
        if operator is not None:
            operator.stop()
        cluster_down(cluster)
    results = {"date": rfc3339(time.time()), "machine": describe(), **figures}
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0 if figures["told"]["jobs"] == args.jobs else 1


async def _intake(kubeconfig: Path, count: int, operator_pid: int) -> dict[str, Any]:
    seen = Seen()
    async with await ApiClient.from_kubeconfig(kubeconfig) as api:
        await create_namespace(api, NAMESPACE)
        listed = [asyncio.Event(), asyncio.Event()]
        watches = [
            asyncio.create_task(_follow_pod_groups(api, seen, listed[0])),
            asyncio.create_task(_follow_workloads(api, seen, listed[1])),
        ]
        await asyncio.wait_for(asyncio.gather(*(flag.wait() for flag in listed)), timeout=60)
        before = usage(operator_pid)
        wall_start, start = time.time(), time.monotonic()
        await _submit(api, count, seen)
        await _until_told(seen, count, deadline=start + TIMEOUT_S)
        wall_end = time.time()
        process = spent({OPERATOR: before}, {OPERATOR: usage(operator_pid)})[OPERATOR]
        for watch in watches:
            watch.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
    names = list(seen.accepted)
    expanded = [moment for name in names if (moment := seen.expanded(name)) is not None]
    told = [seen.told[name] for name in names if name in seen.told]
    lags = sorted(seen.told[name] - seen.accepted[name] for name in names if name in seen.told)
    return {
        "jobs": count,
        "suspended": True,
        "pods_per_job": GANG,
        "submit_concurrency": CONCURRENCY,
        "accepted": _rate(list(seen.accepted.values()), start),
        "expanded": _rate(expanded, start),
        "told": _rate(told, start),
        "accepted_to_told_s": {
            "p50": round(percentile(lags, 50), 2) if lags else None,
            "p99": round(percentile(lags, 99), 2) if lags else None,
            "max": round(lags[-1], 2) if lags else None,
        },
        "wall_start": wall_start,
        "wall_end": wall_end,
        "operator_process": process,
    }


def _rate(moments: list[float], start: float) -> dict[str, Any]:
    """How many, by when (seconds after the first create was sent), and at what rate."""
    if not moments:
        return {"jobs": 0, "last_after_s": None, "jobs_per_s": None}
    last = max(moments) - start
    return {
        "jobs": len(moments),
        "last_after_s": round(last, 2),
        "jobs_per_s": round(len(moments) / last, 1),
    }


def _where_the_time_went(spending: dict[str, Any], jobs: int) -> dict[str, Any]:
    """The operator's requests per Job by call, and the least time its client limit lets
    them take (every request goes through the one limiter; its burst aside)."""
    by_call = spending["api_requests_by_call"]
    return {
        "cpu_seconds": spending["cpu_seconds"],
        "peak_rss_mib": spending["peak_rss_mib"],
        "api_requests": spending["api_requests"],
        "api_requests_per_job": round(spending["api_requests"] / jobs, 2),
        "api_requests_per_job_by_call": {
            call: round(count / jobs, 3) for call, count in by_call.items()
        },
        "client_limit": {"qps": CLIENT_QPS, "burst": CLIENT_BURST},
        "least_time_at_the_client_limit_s": round(
            max(0, spending["api_requests"] - CLIENT_BURST) / CLIENT_QPS, 1
        ),
    }


def _job(index: int) -> dict[str, Any]:
    manifest = job_manifest(
        GangJob(f"intake-{index:05d}", GANG, 1, None), "muster", namespace=NAMESPACE, hold="1h"
    )
    manifest["spec"]["suspend"] = True
    return manifest


async def _submit(api: ApiClient, count: int, seen: Seen) -> None:
    limit = asyncio.Semaphore(CONCURRENCY)
    path = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs"

    async def create(index: int) -> None:
        manifest = _job(index)
        async with limit:
            await api.create(path, manifest)
        seen.accepted[manifest["metadata"]["name"]] = time.monotonic()

    await asyncio.gather(*(create(index) for index in range(count)))


async def _follow_pod_groups(api: ApiClient, seen: Seen, listed: asyncio.Event) -> None:
    path = f"/apis/{API_VERSION}/namespaces/{NAMESPACE}/{POD_GROUP_PLURAL}"
    async for kind, group in api.watch(path, listed):
        name, now = group["metadata"]["name"], time.monotonic()
        if kind == "DELETED":
            continue
        seen.pod_groups.setdefault(name, now)
        if scheduled_condition(group):
            seen.told.setdefault(name, now)


async def _follow_workloads(api: ApiClient, seen: Seen, listed: asyncio.Event) -> None:
    path = f"/apis/{API_VERSION}/namespaces/{NAMESPACE}/{WORKLOAD_PLURAL}"
    async for kind, workload in api.watch(path, listed):
        if kind != "DELETED":
            seen.workloads.setdefault(workload["metadata"]["name"], time.monotonic())


async def _until_told(seen: Seen, count: int, *, deadline: float) -> None:
    while len(seen.told) < count and time.monotonic() < deadline:
        await asyncio.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
