"""Admission load against lease renewal: does a busy webhook delay the leader's Lease?

One `muster run` leads (Lease renewed every 2 s, lost after 10 s) while this process
sends it admission reviews at a fixed rate, open loop (200/s for 60 s by default):
PodGroup UPDATE validations and CREATE priority resolutions, alternately, over HTTPS
with keep-alive, as the API server calls them. A watch on the Lease records every
renewTime the operator writes (its own clock), idle for a while first, then under load.

Reported: the intervals between renewals (idle and loaded), how late the latest was
against the renew period, and the admission latencies and failures. Writes
bench/results/admission.json.

    python -m bench.admission --kubeconfig .cluster/kubeconfig [--rate 200 --seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import itertools
import json
import os
import ssl
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from devtools.builds import ROOT
from devtools.operator import OperatorProcess, WebhookService

from bench.common.apiclient import ApiClient
from bench.common.stats import percentile

RESULTS = ROOT / "bench" / "results" / "admission.json"
LEASE = "muster-bench-admission"
RENEW_PERIOD = 2.0


def pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, "priority": 0},
    }


def review(index: int) -> tuple[str, dict[str, Any]]:
    """(webhook path, AdmissionReview) of the index-th request."""
    name = f"bench-{index % 1000}"
    request: dict[str, Any] = {
        "uid": f"review-{index}",
        "kind": {"group": "scheduling.muster.dev", "version": "v1beta1", "kind": "PodGroup"},
        "resource": {
            "group": "scheduling.muster.dev",
            "version": "v1beta1",
            "resource": "podgroups",
        },
        "name": name,
        "namespace": "default",
        "userInfo": {"username": "bench"},
        "object": pod_group(name, 8),
    }
    if index % 2:
        return "/resolve-podgroup-priority", {
            **envelope(),
            "request": {**request, "operation": "CREATE"},
        }
    update = {**request, "operation": "UPDATE", "oldObject": pod_group(name, 4)}
    return "/validate-podgroups", {**envelope(), "request": update}


def envelope() -> dict[str, str]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}


async def renewals(api: ApiClient, into: list[float]) -> None:
    """Every distinct renewTime of the Lease, as epoch seconds."""
    path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    async for _, lease in api.watch(path):
        if lease["metadata"]["name"] != LEASE:
            continue
        renewed = (lease.get("spec") or {}).get("renewTime")
        if renewed:
            stamp = datetime.datetime.fromisoformat(renewed).timestamp()
            if not into or stamp != into[-1]:
                into.append(stamp)


async def load(url: str, rate: float, seconds: float) -> dict[str, Any]:
    """Open-loop admission requests; latencies (s) of the answered, and failures."""
    tls = ssl.create_default_context()
    tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    latencies: list[float] = []
    failures: dict[str, int] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls, limit=64)) as session:

        async def one(index: int) -> None:
            path, body = review(index)
            started = time.monotonic()
            try:
                async with session.post(url + path, json=body) as response:
                    answer = await response.json()
                    ok = response.status == 200 and answer["response"]["uid"] == f"review-{index}"
            except (aiohttp.ClientError, TimeoutError, KeyError) as error:
                failures[type(error).__name__] = failures.get(type(error).__name__, 0) + 1
                return
            if ok:
                latencies.append(time.monotonic() - started)
            else:
                failures[str(response.status)] = failures.get(str(response.status), 0) + 1

        start, tasks = time.monotonic(), []
        for index in range(int(rate * seconds)):
            await asyncio.sleep(max(0.0, start + index / rate - time.monotonic()))
            tasks.append(asyncio.create_task(one(index)))
        await asyncio.gather(*tasks)
    return {
        "sent": int(rate * seconds),
        "answered": len(latencies),
        "failures": failures,
        "latency_p50_ms": round(1000 * percentile(latencies, 50), 1),
        "latency_p99_ms": round(1000 * percentile(latencies, 99), 1),
        "latency_max_ms": round(1000 * max(latencies, default=0.0), 1),
    }


def intervals(stamps: list[float]) -> dict[str, Any]:
    gaps = [later - earlier for earlier, later in itertools.pairwise(stamps)]
    return {
        "renewals": len(stamps),
        "interval_p50_s": round(percentile(gaps, 50), 3),
        "interval_p99_s": round(percentile(gaps, 99), 3),
        "interval_max_s": round(max(gaps, default=0.0), 3),
        "latest_late_by_s": round(max(gaps, default=RENEW_PERIOD) - RENEW_PERIOD, 3),
    }


async def measure(
    kubeconfig: Path, rate: float, seconds: float, idle: float, log_path: Path
) -> dict[str, Any]:
    service = WebhookService(
        kubeconfig=kubeconfig,
        credentials=kubeconfig,
        settings={},
        flags=(
            "--no-manage-webhooks",
            f"--lease-name={LEASE}",
            f"--lease-renew-period={RENEW_PERIOD}",
            "--log-level=warning",
        ),
    )
    operator = OperatorProcess(
        service=service, log_path=log_path, identity="bench-admission", ready_timeout=120
    )
    operator.start()
    stamps: list[float] = []
    try:
        async with await ApiClient.from_kubeconfig(kubeconfig) as api:
            watcher = asyncio.create_task(renewals(api, stamps))
            while len(stamps) < 2:  # leading, and renewing
                if watcher.done():
                    watcher.result()  # raises what stopped it
                if not operator.running():
                    raise RuntimeError(f"muster run exited; see {log_path}")
                await asyncio.sleep(0.2)
            idle_from = len(stamps) - 1  # the first renewal of this leader's term
            await asyncio.sleep(idle)
            loaded_from = len(stamps)
            answered = await load(f"https://127.0.0.1:{operator.webhook_port}", rate, seconds)
            await asyncio.sleep(RENEW_PERIOD)
            watcher.cancel()
            return {
                "rate_per_s": rate,
                "seconds": seconds,
                "cpus": os.cpu_count(),
                "renew_period_s": RENEW_PERIOD,
                "idle": intervals(stamps[idle_from:loaded_from]),
                "loaded": intervals(stamps[loaded_from - 1 :]),
                "admission": answered,
            }
    finally:
        operator.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--idle", type=float, default=20.0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    log_path = args.kubeconfig.parent / "logs" / "bench-admission-operator.log"
    figures = asyncio.run(measure(args.kubeconfig, args.rate, args.seconds, args.idle, log_path))
    text = json.dumps(figures, indent=2)
    args.output.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
