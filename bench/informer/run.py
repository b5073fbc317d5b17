"""Informer benchmark: memory and CPU of keeping 50,000 pods in step.

Run with `.venv/bin/python -m bench.informer` (add `--pods N --events M` to scale).
It starts a small fake API server (a separate process, so its memory is not
counted) serving N realistic pods (labels, owner references, managedFields, resource
requests, bound to 5,000 nodes) and then M watch events (MODIFIED pods). Each client
runs in a fresh process and reports its resident memory after the initial list and
its CPU time for the list and per watch event:

- `muster`: the operator's informer (`muster.client.informer`) feeding its cache
  (`LiveCache`: the engine's `ClusterState` plus the operator's indexes);
- `kopf-index`: a kopf operator whose `@kopf.index` keeps only what the engine needs
  of each pod (node, phase, requests), the usual way to hold a cluster view in kopf.
  It keeps less than `muster` does, so its figures are a floor for the kopf way.

Results go to `bench/results/informer.json` (`--out` to change). The kopf client
needs minutes per 10,000 pods; `--variants muster` measures the operator alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import kopf
from aiohttp import web
from devtools.builds import ROOT
from devtools.ports import free_port
from kubernetes_asyncio import client

from muster.api.times import rfc3339
from muster.api.wire import JsonObject
from muster.client.informer import Informer
from muster.client.kube import Kube
from muster.operator.intake.cache import LiveCache

VARIANTS = ("muster", "kopf-index")
RESULTS = Path(__file__).resolve().parents[1] / "results" / "informer.json"
PAGE = 500


def make_pod(index: int, version: int) -> dict[str, Any]:
    """A pod as a Job controller and kube-scheduler leave it, managedFields included."""
    name = f"worker-{index:06d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": f"team-{index % 50}",
            "uid": f"00000000-0000-0000-0000-{index:012d}",
            "resourceVersion": str(version),
            "creationTimestamp": "2026-11-30T00:00:00Z",
            "labels": {
                "batch.kubernetes.io/job-name": f"job-{index // 8}",
                "batch.kubernetes.io/controller-uid": f"uid-{index // 8}",
                "scheduling.muster.dev/pod-group": f"job-{index // 8}",
            },
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": f"job-{index // 8}",
                    "uid": f"uid-{index // 8}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "finalizers": ["batch.kubernetes.io/job-tracking"],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-11-30T00:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {".": {}, "f:job-name": {}}},
                        "f:spec": {"f:containers": {'k:{"name":"worker"}': {".": {}}}},
                    },
                },
                {
                    "manager": "kube-scheduler",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-11-30T00:00:01Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:conditions": {}}},
                    "subresource": "status",
                },
            ],
        },
        "spec": {
            "nodeName": f"node-{index % 5000:04d}",
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.example/train:1.0",
                    "resources": {
                        "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                        "limits": {"nvidia.com/gpu": "1"},
                    },
                }
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
            "qosClass": "Burstable",
        },
    }


# ---- the fake API server ----------------------------------------------------------


def serve(port: int, pods: int, events: int) -> None:
    """List (paginated) and watch of pods, and the discovery documents."""
    encoded = [json.dumps(make_pod(i, i + 1)).encode() for i in range(pods)]
    list_version = str(pods + 1)

    async def api(_: web.Request) -> web.Response:
        return web.json_response({"kind": "APIVersions", "versions": ["v1"]})

    extensions = {"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"}

    async def version(_: web.Request) -> web.Response:
        return web.json_response({"major": "1", "minor": "37", "gitVersion": "v1.37.2"})

    async def apis(_: web.Request) -> web.Response:
        group: dict[str, Any] = {
            "name": "apiextensions.k8s.io",
            "versions": [extensions],
            "preferredVersion": extensions,
        }
        return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": [group]})

    def resource_list(group_version: str, *resources: tuple[str, str, bool]) -> web.Response:
        listed = [
            {
                "name": plural,
                "singularName": kind.lower(),
                "namespaced": namespaced,
                "kind": kind,
                "verbs": ["get", "list", "watch", "patch"],
            }
            for plural, kind, namespaced in resources
        ]
        return web.json_response(
            {"kind": "APIResourceList", "groupVersion": group_version, "resources": listed}
        )

    async def core(_: web.Request) -> web.Response:
        return resource_list("v1", ("pods", "Pod", True), ("namespaces", "Namespace", False))

    async def extension_resources(_: web.Request) -> web.Response:
        crds = ("customresourcedefinitions", "CustomResourceDefinition", False)
        return resource_list(extensions["groupVersion"], crds)

    async def empty(request: web.Request) -> web.StreamResponse:
        """Namespaces and CRDs, which kopf watches besides the pods: none, ever."""
        if request.query.get("watch") in ("true", "1"):
            response = web.StreamResponse()
            await response.prepare(request)
            await asyncio.sleep(3600)
            return response
        return web.json_response(
            {"kind": "List", "metadata": {"resourceVersion": "1"}, "items": []}
        )

    async def pod_list(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") in ("true", "1"):
            return await pod_watch(request)
        start = int(request.query.get("continue") or 0)
        limit = int(request.query.get("limit") or pods)
        end = min(pods, start + limit)
        metadata = {"resourceVersion": list_version}
        if end < pods:
            metadata["continue"] = str(end)
        body = (
            b'{"kind":"PodList","apiVersion":"v1","metadata":'
            + json.dumps(metadata).encode()
            + b',"items":['
            + b",".join(encoded[start:end])
            + b"]}"
        )
        return web.Response(body=body, content_type="application/json")

    async def pod_watch(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        if request.query.get("resourceVersion") == list_version:
            for n in range(events):
                pod = make_pod(n % pods, pods + 2 + n)
                pod["metadata"]["labels"]["bench/step"] = str(n)
                pod["status"]["phase"] = "Running" if n % 2 else "Succeeded"
                line = json.dumps({"type": "MODIFIED", "object": pod}).encode() + b"\n"
                await response.write(line)
        await asyncio.sleep(3600)
        return response

    app = web.Application()
    app.router.add_get("/version", version)
    app.router.add_get("/api", api)
    app.router.add_get("/apis", apis)
    app.router.add_get("/api/v1", core)
    app.router.add_get("/api/v1/pods", pod_list)
    app.router.add_get("/api/v1/namespaces", empty)
    app.router.add_get("/apis/apiextensions.k8s.io/v1", extension_resources)
    app.router.add_get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", empty)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


# ---- the clients ------------------------------------------------------------------


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Progress:
    """Counts deliveries and says when the list and the events are in."""

    def __init__(self, pods: int, events: int) -> None:
        self.pods = pods
        self.events = events
        self.seen = 0
        self.start_cpu = cpu_seconds()
        self.start_wall = time.perf_counter()
        self.base_rss = rss_mib()
        self.figures: dict[str, float] = {}

    def tick(self) -> bool:
        """One object delivered; True once the events are all in too."""
        self.seen += 1
        if self.seen == self.pods:
            self.figures["list_cpu_s"] = cpu_seconds() - self.start_cpu
            self.figures["list_wall_s"] = time.perf_counter() - self.start_wall
            self.figures["rss_after_list_mib"] = rss_mib()
            self.figures["rss_growth_mib"] = rss_mib() - self.base_rss
            self.events_cpu = cpu_seconds()
        if self.seen == self.pods + self.events:
            spent = cpu_seconds() - self.events_cpu
            self.figures["event_cpu_us"] = spent / max(self.events, 1) * 1e6
            self.figures["rss_end_mib"] = rss_mib()
            return True
        return False


async def run_muster(url: str, progress: Progress) -> dict[str, float]:
    configuration = client.Configuration(host=url)
    kube = Kube(client.ApiClient(configuration))
    cache = LiveCache()
    done = asyncio.Event()

    class CountingSink:
        def upsert(self, obj: JsonObject) -> bool:
            relevant = cache.pods.upsert(obj)
            if progress.tick():
                done.set()
            return relevant

        def remove(self, obj: JsonObject) -> bool:
            return cache.pods.remove(obj)

    informer = Informer(kube, "/api/v1/pods", CountingSink(), on_change=lambda: None)
    task = asyncio.create_task(informer.run())
    await done.wait()
    task.cancel()
    return progress.figures


async def run_kopf(url: str, progress: Progress) -> dict[str, float]:
    logging.getLogger("kopf").setLevel(logging.WARNING)
    registry = kopf.OperatorRegistry()
    done = asyncio.Event()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=url, insecure=True)

    @kopf.index("pods", registry=registry)
    def by_pod(body: kopf.Body, **_: Any) -> dict[tuple[str, str], Any]:
        if progress.tick():
            done.set()
        spec = body.get("spec", {})
        resources = spec.get("containers", [{}])[0].get("resources", {})
        return {
            (str(body.metadata.namespace), str(body.metadata.name)): (
                spec.get("nodeName"),
                body.get("status", {}).get("phase"),
                tuple(sorted((resources.get("requests") or {}).items())),
            )
        }

    settings = kopf.OperatorSettings()
    settings.posting.enabled = False
    stop = asyncio.Event()
    operator = asyncio.create_task(
        kopf.operator(
            registry=registry,
            settings=settings,
            clusterwide=True,
            standalone=True,
            stop_flag=stop,
        )
    )
    await done.wait()
    stop.set()
    await asyncio.wait({operator}, timeout=10)
    return progress.figures


def client_main(variant: str, url: str, pods: int, events: int) -> None:
    async def main() -> dict[str, float]:
        runner = run_muster if variant == "muster" else run_kopf
        return await runner(url, Progress(pods, events))

    figures = asyncio.run(main())
    print(json.dumps(figures))


# ---- orchestration ----------------------------------------------------------------


def wait_for_port(port: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"the fake API server did not listen on {port}")


def measure(variant: str, pods: int, events: int) -> dict[str, float]:
    """One client against a fresh fake API server; its figures."""
    port = free_port()
    role_args = [f"--port={port}", f"--pods={pods}", f"--events={events}"]
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.informer.run", "--role=serve", *role_args], cwd=ROOT
    )
    try:
        wait_for_port(port)
        answer = subprocess.run(
            [sys.executable, "-m", "bench.informer.run", f"--role={variant}", *role_args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=1800,
        )
    finally:
        server.kill()
        server.wait()
    figures: dict[str, float] = json.loads(answer.stdout.strip().splitlines()[-1])
    print(variant, json.dumps(figures), flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--role", choices=["bench", "serve", *VARIANTS], default="bench")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()
    if args.role == "serve":
        serve(args.port, args.pods, args.events)
        return
    if args.role in VARIANTS:
        client_main(args.role, f"http://127.0.0.1:{args.port}", args.pods, args.events)
        return

    figures = {variant: measure(variant, args.pods, args.events) for variant in args.variants}
    report = {
        "when": rfc3339(time.time()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "pods": args.pods,
        "events": args.events,
        "results": figures,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
