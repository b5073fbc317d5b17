"""Memory benchmark: what the operator keeps at the scale point, part by part.

Run with `.venv/bin/python -m bench.memory` (add `--against REV` to measure the code
at a git revision side by side, in the same run). Without a cluster, it feeds the
operator's own sinks the objects of the scale point as their watches deliver them,
each parsed from its JSON text as it arrives:

- 5,000 nodes of 16 GPUs (`hack.nodes.gpu_node`) into the cache;
- 6,250 Workloads into admission's store (every replica keeps one);
- 6,250 PodGroups as Muster leaves them once admitted (plan, conditions, counts);
- 50,000 gated member pods, 8 a gang, as the Job controller creates them, through
  both pod informers (capacity and members), so each arrives twice;
- 100 TLS connections over loopback, both ends in the process, as the operator sets
  them up (its client's pool to the API server holds up to 100, and the API server
  opens dozens to the webhook server).

Each variant runs in a fresh process and reports its resident memory (RSS) after the
imports and after each part, with the cost of a pod. `bench/results/memory.json`
(`--out` to change). Not a replacement for the run at the scale point
(`bench/e2e/run.py --scale`): it leaves out what a running operator holds in flight
(requests, watch buffers, admission reviews), and shows where the kept memory is.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import importlib
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from hack.nodes import gpu_node  # noqa: E402

import muster.operator.app  # noqa: E402, F401  # every module the operator loads: its floor
from bench.common.machine import describe  # noqa: E402
from muster.client.informer import Informer  # noqa: E402
from muster.operator.intake.cache import LiveCache  # noqa: E402
from muster.operator.intake.pod_views import PodViews  # noqa: E402
from muster.operator.webhook_feeds.workloads import WorkloadStore  # noqa: E402
from muster.webhooks.certificates import issue  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "memory.json"
NODES = 5000
GANGS = 6250
GANG_SIZE = 8
CONNECTIONS = 100
NAMESPACE = "bench"
CREATED = "2026-12-01T18:18:27Z"


def rss_mib() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _uid(kind: int, index: int) -> str:
    return f"{kind:08x}-0000-4000-8000-{index:012x}"


def _job_labels(gang: int) -> dict[str, str]:
    job = f"gang-{gang:04d}"
    return {
        "batch.kubernetes.io/controller-uid": _uid(1, gang),
        "batch.kubernetes.io/job-name": job,
        "controller-uid": _uid(1, gang),
        "job-name": job,
        "scheduling.muster.dev/pod-group": job,
    }


def _owner(gang: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": f"gang-{gang:04d}",
            "uid": _uid(1, gang),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _child_metadata(gang: int, *, kind: int) -> dict[str, Any]:
    """The metadata of an object Muster creates for a Job (its PodGroup, its Workload)."""
    return {
        "name": f"gang-{gang:04d}",
        "namespace": NAMESPACE,
        "uid": _uid(kind, gang),
        "resourceVersion": str(kind * 100000 + gang),
        "generation": 1,
        "creationTimestamp": CREATED,
        "labels": {"app.kubernetes.io/managed-by": "muster"},
        "ownerReferences": _owner(gang),
    }


def pod_name(index: int) -> str:
    return f"gang-{index // GANG_SIZE:04d}-{index:05x}"


def pod(index: int) -> dict[str, Any]:
    """A gated member pod as the Job controller creates it and the API server stores it."""
    gang = index // GANG_SIZE
    token = f"kube-api-access-{index % 100000:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(index),
            "generateName": f"gang-{gang:04d}-",
            "namespace": NAMESPACE,
            "uid": _uid(2, index),
            "resourceVersion": str(100000 + index),
            "creationTimestamp": CREATED,
            "labels": _job_labels(gang),
            "annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "1h"},
            "ownerReferences": _owner(gang),
            "finalizers": ["batch.kubernetes.io/job-tracking"],
        },
        "spec": {
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.invalid/worker:bench",
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {
                        "limits": {"nvidia.com/gpu": "1"},
                        "requests": {"cpu": "100m", "memory": "256Mi", "nvidia.com/gpu": "1"},
                    },
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "volumeMounts": [
                        {
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "name": token,
                            "readOnly": True,
                        }
                    ],
                }
            ],
            "schedulingGates": [{"name": "scheduling.muster.dev/gang"}],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 0,
            "tolerations": [
                {
                    "effect": "NoExecute",
                    "key": key,
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                }
                for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
            ],
            "volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": []}}],
        },
        "status": {
            "phase": "Pending",
            "qosClass": "Burstable",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                    "lastProbeTime": None,
                    "lastTransitionTime": CREATED,
                }
            ],
        },
    }


def pod_group(gang: int) -> dict[str, Any]:
    """A PodGroup as Muster leaves it once the gang is admitted and placed."""
    name = f"gang-{gang:04d}"
    node = f"gpu-{gang % NODES}"
    message = f"{GANG_SIZE} pods placed in topology.kubernetes.io/zone=zone-{gang % 4}"
    conditions = [
        {
            "type": kind,
            "status": "True",
            "reason": "Scheduled",
            "message": message,
            "observedGeneration": 1,
            "lastTransitionTime": CREATED,
        }
        for kind in ("PodGroupScheduled", "PodGroupInitiallyScheduled")
    ]
    members = range(gang * GANG_SIZE, (gang + 1) * GANG_SIZE)
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": _child_metadata(gang, kind=3),
        "spec": {
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
            "schedulingPolicy": {"gang": {"minCount": GANG_SIZE}},
            "workloadRef": {"templateName": "workers", "workloadName": name},
        },
        "status": {
            "admittedAt": CREATED,
            "conditions": conditions,
            "lifecycle": {"releaseStarted": CREATED, "rollbacks": 0},
            "minCount": GANG_SIZE,
            "observedGeneration": 1,
            "plan": {pod_name(index): node for index in members},
            "pods": {"failed": 0, "gated": 0, "running": 8, "scheduled": 8, "total": 8},
        },
    }


def workload(gang: int) -> dict[str, Any]:
    name = f"gang-{gang:04d}"
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": _child_metadata(gang, kind=4),
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": name},
            "podGroupTemplates": [
                {
                    "name": "workers",
                    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
                    "schedulingPolicy": {"gang": {"minCount": GANG_SIZE}},
                }
            ],
        },
    }


async def _connections(count: int, scratch: Path) -> list[asyncio.StreamWriter]:
    """`count` TLS connections to a local server that keeps them open; their client ends."""
    served = issue(["localhost"], now=datetime.datetime.now(datetime.UTC))
    (scratch / "chain.pem").write_bytes(served.chain)
    (scratch / "key.pem").write_bytes(served.key)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(scratch / "chain.pem", scratch / "key.pem")
    client_side = ssl.create_default_context(cadata=served.ca_bundle.decode())
    kept: list[asyncio.StreamWriter] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        kept.append(writer)
        writer.write(await reader.readexactly(1024))

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_side)
    port = server.sockets[0].getsockname()[1]
    for _ in range(count):
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_side, server_hostname="localhost"
        )
        writer.write(bytes(1024))
        await reader.readexactly(1024)
        kept.append(writer)
    return kept


def _operator_tls_setup() -> None:
    """What the operator does to its TLS connections, in revisions that do anything."""
    try:
        module = importlib.import_module("muster.client.tls_buffers")
    except ImportError:
        return
    module.limit_read_buffers()


def measure(pods: int) -> dict[str, Any]:
    """One variant, in this process: RSS after each part (MiB)."""
    gc.collect()
    parts: dict[str, float] = {"imports": round(rss_mib(), 1)}
    cache = LiveCache()
    store = WorkloadStore(None)  # type: ignore[arg-type]  # never asked to go live here
    views = PodViews(cache.pods)
    informers = [
        Informer(None, "/api/v1/pods", views.view(), on_change=lambda: None)  # type: ignore[arg-type]
        for _ in range(2)
    ]

    def part(name: str, feed: Callable[[], None]) -> None:
        before = rss_mib()
        feed()
        gc.collect()
        parts[name] = round(rss_mib() - before, 1)

    def nodes() -> None:
        for index in range(NODES):
            node = gpu_node(
                f"gpu-{index}", zone=f"zone-{index % 4}", rack=f"r{index // 40}", gpus=16
            )
            cache.nodes.upsert(json.loads(json.dumps(node)))

    def workloads() -> None:
        for gang in range(GANGS):
            store.upsert(json.loads(json.dumps(workload(gang))))

    def pod_groups() -> None:
        for gang in range(GANGS):
            cache.pod_group_sink.upsert(json.loads(json.dumps(pod_group(gang))))

    def member_pods() -> None:
        for index in range(pods):
            text = json.dumps({"type": "ADDED", "object": pod(index)})
            for informer in informers:
                informer._deliver(json.loads(text), "")

    started = time.process_time()
    part("nodes", nodes)
    part("workloads", workloads)
    part("pod_groups", pod_groups)
    part("pods", member_pods)
    open_connections: list[asyncio.StreamWriter] = []

    def connections() -> None:
        _operator_tls_setup()
        loop = asyncio.new_event_loop()
        with tempfile.TemporaryDirectory() as scratch:
            open_connections.extend(
                loop.run_until_complete(_connections(CONNECTIONS, Path(scratch)))
            )

    part("tls_connections", connections)
    return {
        "rss_mib": parts,
        "total_mib": round(rss_mib(), 1),
        "pod_bytes": round(parts["pods"] * 2**20 / pods),
        "cpu_s": round(time.process_time() - started, 1),
        "cached_pods": len(cache.state.pods),
    }


def _run_child(source: Path, pods: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{source / 'src'}{os.pathsep}{source}"}
    command = [sys.executable, __file__, "--child", f"--pods={pods}"]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True, cwd=source)
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def _git(tree: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=tree, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _revision(tree: Path, rev: str | None = None) -> str:
    """The short commit; the working tree's is marked `+` when it has changes."""
    if rev is not None:
        return _git(tree, "rev-parse", "--short", rev)
    changed = _git(tree, "status", "--porcelain", "--untracked-files=no")
    return _git(tree, "rev-parse", "--short", "HEAD") + ("+" if changed else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=GANGS * GANG_SIZE)
    parser.add_argument("--against", help="a git revision to measure side by side")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.pods)))
        return
    variants: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        if args.against:
            tree = Path(scratch) / "against"
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(tree), args.against],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
            try:
                variants[_revision(ROOT, args.against)] = _run_child(tree, args.pods)
            finally:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(tree)], check=False, cwd=ROOT
                )
        variants[_revision(ROOT)] = _run_child(ROOT, args.pods)
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": describe(),
        "parameters": {
            "nodes": NODES,
            "gangs": GANGS,
            "gang_size": GANG_SIZE,
            "pods": args.pods,
            "connections": CONNECTIONS,
        },
        "variants": variants,
    }
    if len(variants) == 2:
        old, new = variants.values()
        results["ratio_total"] = round(new["total_mib"] / old["total_mib"], 2)
        results["ratio_pod_bytes"] = round(new["pod_bytes"] / old["pod_bytes"], 2)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
