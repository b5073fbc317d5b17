"""The gate floor: the least a gate-based gang scheduler can ask of the control plane.

In the ``floor`` mode every pod is created with a scheduling gate (the Job's pod
template carries it, bench/e2e/workload.py) and this client, a process of its own whose
CPU is counted like the operator's, removes each pod's gate with one patch as soon as
its one watch sees the pod: no plan, no PodGroups, no status, no Events. What the
control plane spends on that mode is the floor under any scheduler that gates pods
and releases them; what Muster spends above it is its own.

    python -m bench.e2e.floor --kubeconfig K --namespace N   # says "listed" once watching
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from bench.common.apiclient import ApiClient, ApiError, JsonObject

# The client's name in the audit log (its User-Agent).
USER_AGENT = "muster-floor"
FLOOR_GATE = "bench.muster.dev/floor"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
# Patches in flight at once: the operator's release concurrency.
CONCURRENCY = 16
LISTED = "listed"


def ungate_patch() -> JsonObject:
    """Remove the floor's gate and nothing else."""
    return {"spec": {"schedulingGates": [{"$patch": "delete", "name": FLOOR_GATE}]}}


def gated(pod: JsonObject) -> bool:
    gates = pod.get("spec", {}).get("schedulingGates") or []
    return any(gate.get("name") == FLOOR_GATE for gate in gates)


async def release_every_pod(api: ApiClient, namespace: str, out: IO[str]) -> None:
    """Ungate each gated pod once, for ever; say ``listed`` on ``out`` once watching."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    limit = asyncio.Semaphore(CONCURRENCY)
    released: set[str] = set()
    in_flight: set[asyncio.Task[None]] = set()
    listed = asyncio.Event()

    async def ungate(name: str) -> None:
        async with limit:
            try:
                await api.request(
                    "PATCH", f"{path}/{name}", ungate_patch(), content_type=STRATEGIC_MERGE_PATCH
                )
            except ApiError as error:
                if error.status != 404:  # a pod deleted meanwhile needs nothing
                    print(f"{name}: {error}", file=sys.stderr, flush=True)

    async def announce() -> None:
        await listed.wait()
        print(LISTED, file=out, flush=True)

    announcing = asyncio.create_task(announce())
    async for kind, pod in api.watch(path, listed):
        uid = pod["metadata"]["uid"]
        if kind == "DELETED" or uid in released or not gated(pod):
            continue
        released.add(uid)
        task = asyncio.create_task(ungate(pod["metadata"]["name"]))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
    await announcing


async def run(kubeconfig: Path, namespace: str) -> None:
    async with await ApiClient.from_kubeconfig(kubeconfig, USER_AGENT) as api:
        await release_every_pod(api, namespace, sys.stdout)


class FloorClient:
    """The client as a child process, logging its errors to a file."""

    def __init__(self, kubeconfig: Path, namespace: str, log_path: Path) -> None:
        self.command = [
            sys.executable,
            "-m",
            "bench.e2e.floor",
            f"--kubeconfig={kubeconfig}",
            f"--namespace={namespace}",
        ]
        self.log_path = log_path
        self.process: subprocess.Popen[str] | None = None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("the floor client is not running")
        return self.process.pid

    def start(self) -> None:
        """Start it and return once it watches the namespace."""
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                self.command,
                cwd=Path(__file__).resolve().parents[2],
                stdout=subprocess.PIPE,
                stderr=log,
                stdin=subprocess.DEVNULL,
                text=True,
            )
        said = self.process.stdout.readline().strip() if self.process.stdout else ""
        if said != LISTED:
            self.stop()
            raise RuntimeError(f"the floor client did not start; see {self.log_path}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    args = parser.parse_args(argv)
    asyncio.run(run(args.kubeconfig, args.namespace))
    return 0


if __name__ == "__main__":
    sys.exit(main())
