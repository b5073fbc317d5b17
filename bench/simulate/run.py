"""`muster simulate` at cluster size: the whole command over a dump of a large cluster.

Run with `.venv/bin/python -m bench.simulate`. It writes a dump shaped like
`kubectl get nodes,pods,podgroups,priorityclasses -A -o yaml` (and the same objects as
`-o json`) of 5,000 nodes, 50,000 bound pods and 100 pending 64-pod gangs (6,400 gated
pods), runs `muster simulate` over each as a user would (a new process, wall clock from
start to exit), measures the phases in-process (read, parse, simulate, render) and
writes `bench/results/simulate.json`.

Objects carry the fields `kubectl` prints for them (managed fields excepted), so the
parser reads what it would read from a real dump, not a minimal one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from bench.common.machine import describe
from muster.api.constants import (
    API_VERSION,
    GANG_GATE,
    POD_GROUP_KIND,
    POD_GROUP_LABEL,
)
from muster.api.manifests import parse_manifests
from muster.simulation.documents import Document
from muster.simulation.render import render_table
from muster.simulation.run import simulate

NODES = 5_000
BOUND_PODS = 50_000
GANGS = 100
GANG_SIZE = 64
ZONES = 4
CREATED = "2026-01-01T10:00:00Z"
RESULTS = Path(__file__).resolve().parents[1] / "results" / "simulate.json"
MUSTER = Path(sys.executable).with_name("muster")


def node(index: int) -> dict[str, Any]:
    name = f"node-{index:05d}"
    zone = f"zone-{index % ZONES}"
    capacity = {
        "cpu": "64",
        "memory": "256Gi",
        "pods": "110",
        "nvidia.com/gpu": "8",
        "ephemeral-storage": "1Ti",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"00000000-0000-0000-0000-{index:012d}",
            "resourceVersion": str(1000 + index),
            "creationTimestamp": CREATED,
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "gpu-8x",
                "topology.kubernetes.io/region": "region-1",
                "topology.kubernetes.io/zone": zone,
                "type": "kwok",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {},
        "status": {
            "allocatable": capacity,
            "capacity": capacity,
            "conditions": [
                {
                    "type": kind,
                    "status": "True" if kind == "Ready" else "False",
                    "lastHeartbeatTime": CREATED,
                    "lastTransitionTime": CREATED,
                    "reason": f"Kubelet{kind}",
                    "message": f"kubelet reports {kind}",
                }
                for kind in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "kubeletVersion": "v1.37.2",
                "operatingSystem": "linux",
                "osImage": "Ubuntu 24.04",
                "containerRuntimeVersion": "containerd://2.1.0",
            },
            "addresses": [{"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250}"}],
        },
    }


def pod(
    name: str, namespace: str, *, node_name: str | None, group: str | None, gpus: int
) -> dict[str, Any]:
    labels = {"app": namespace, "batch.kubernetes.io/job-name": name.rsplit("-", 1)[0]}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "worker",
                "image": "registry.example/train:1.4.2",
                "command": ["python", "-m", "train"],
                "resources": {
                    "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": str(gpus)},
                    "limits": {"nvidia.com/gpu": str(gpus)},
                },
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Never",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "tolerations": [
            {
                "key": f"node.kubernetes.io/{taint}",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
            for taint in ("not-ready", "unreachable")
        ],
    }
    status: dict[str, Any] = {"phase": "Pending", "qosClass": "Burstable"}
    if node_name is not None:
        spec["nodeName"] = node_name
        status = {
            "phase": "Running",
            "qosClass": "Burstable",
            "hostIP": "10.0.0.1",
            "podIP": "10.244.0.1",
            "startTime": CREATED,
            "conditions": [
                {"type": kind, "status": "True", "lastTransitionTime": CREATED}
                for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": "worker",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "image": "registry.example/train:1.4.2",
                    "imageID": "",
                    "state": {"running": {"startedAt": CREATED}},
                }
            ],
        }
    if group is not None:
        labels[POD_GROUP_LABEL] = group
        spec["schedulingGates"] = [{"name": GANG_GATE}]
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
                "lastTransitionTime": CREATED,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"pod-{namespace}-{name}",
            "resourceVersion": "2000",
            "creationTimestamp": CREATED,
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": labels["batch.kubernetes.io/job-name"],
                    "uid": f"job-{namespace}-{labels['batch.kubernetes.io/job-name']}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": status,
    }


def pod_group(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": POD_GROUP_KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"pg-{namespace}-{name}",
            "resourceVersion": "3000",
            "creationTimestamp": CREATED,
        },
        "spec": {"schedulingPolicy": {"gang": {"minCount": GANG_SIZE}}},
    }


def objects() -> Iterator[dict[str, Any]]:
    """The dump's objects: nodes, then bound pods spread evenly, then the gangs."""
    for index in range(NODES):
        yield node(index)
    per_node = BOUND_PODS // NODES
    for index in range(BOUND_PODS):
        node_name = f"node-{index // per_node:05d}"
        yield pod(
            f"serve-{index // 8}-{index % 8}",
            f"team-{index % 20}",
            node_name=node_name,
            group=None,
            gpus=0,
        )
    for gang in range(GANGS):
        namespace = f"ml-{gang % 10}"
        group = f"train-{gang}"
        yield pod_group(group, namespace)
        for member in range(GANG_SIZE):
            yield pod(f"{group}-{member}", namespace, node_name=None, group=group, gpus=1)


def write_dumps(directory: Path) -> dict[str, Path]:
    """The same List as `kubectl get -o yaml` and `-o json` write it."""
    dump = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": list(objects()),
    }
    paths = {"yaml": directory / "cluster.yaml", "json": directory / "cluster.json"}
    paths["yaml"].write_text(yaml.dump(dump, Dumper=yaml.CSafeDumper, sort_keys=False))
    paths["json"].write_text(json.dumps(dump, indent=4))
    return paths


def command_seconds(path: Path, repetitions: int) -> list[float]:
    """Wall clock of the whole command, as a user runs it, each in a new process."""
    times = []
    for _ in range(repetitions):
        started = time.perf_counter()
        subprocess.run([str(MUSTER), "simulate", str(path)], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def phase_seconds(path: Path) -> dict[str, float]:
    """Where one run's time goes, measured in this process."""
    started = time.perf_counter()
    text = path.read_text(encoding="utf-8")
    read = time.perf_counter()
    documents = [Document(str(path), parsed.index, parsed.body) for parsed in parse_manifests(text)]
    parsed_at = time.perf_counter()
    report = simulate(documents, now=None)
    simulated = time.perf_counter()
    render_table(report)
    rendered = time.perf_counter()
    return {
        "read": round(read - started, 3),
        "parse": round(parsed_at - read, 3),
        "simulate": round(simulated - parsed_at, 3),
        "render": round(rendered - simulated, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    results: dict[str, Any] = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": describe(),
        "shape": {
            "nodes": NODES,
            "bound_pods": BOUND_PODS,
            "gangs": GANGS,
            "gang_size": GANG_SIZE,
            "gated_pods": GANGS * GANG_SIZE,
        },
        "goal_seconds": 10,
        "formats": {},
    }
    with tempfile.TemporaryDirectory(prefix="muster-simulate-bench-") as scratch:
        for fmt, path in write_dumps(Path(scratch)).items():
            times = command_seconds(path, args.repetitions)
            results["formats"][fmt] = {
                "file_mib": round(path.stat().st_size / 2**20, 1),
                "command_seconds": [round(value, 2) for value in times],
                "command_median_seconds": round(statistics.median(times), 2),
                "phases_seconds": phase_seconds(path),
            }
            print(fmt, json.dumps(results["formats"][fmt]))
    args.output.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
