"""Devices benchmark: a gang claiming GPUs through Dynamic Resource Allocation.

Run with `.venv/bin/python -m bench.devices`. It builds a cluster of 5,000 nodes, each
publishing 8 GPUs in a ResourceSlice (two products, so the DeviceClass's CEL selector
matters, and each GPU with its own UUID, as drivers publish them), every other node
with 6 of its GPUs allocated to the claim of a bound pod, and measures the scheduling
cycle that places a 64-pod gang, each pod with one GPU claim from a template:

- cold: the first cycle, which reads the slices and evaluates the selectors;
- warm: the median of the next runs, a cycle when no device object changed;
- after a claim changed: a claim's allocation changes before each run, so what the
  engine keeps of the claims is redone (not what it keeps of the slices).

Each is given in wall time and in the CPU time the process took (the machine's other
work inflates the first, not the second; the load average is recorded). Each run's
decision is checked (every pod placed, none on an A100, none beyond a node's free
H100s). It prints the figures and writes `bench/results/devices.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from muster.api.constants import GANG_GATE, POD_GROUP_LABEL
from muster.api.keys import GroupKey
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.decisions.results import CycleResult

NODES = 5_000
DEVICES = 8
GANG_SIZE = 64
DRIVER = "gpu.example.com"
NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12)
RESULTS = Path(__file__).resolve().parents[1] / "results" / "devices.json"
SELECTOR = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].product == "H100"'

Obj = dict[str, Any]


def node(index: int) -> Obj:
    name = f"node-{index:05}"
    allocatable = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": allocatable},
    }


def product(index: int) -> str:
    """Three nodes in four have H100s, the others A100s."""
    return "A100" if index % 4 == 3 else "H100"


def resource_slice(index: int) -> Obj:
    name = f"node-{index:05}"
    devices = [
        {
            "name": f"gpu-{device}",
            "attributes": {
                "product": {"string": product(index)},
                "index": {"int": device},
                "uuid": {"string": f"GPU-{index:05}-{device}"},
            },
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for device in range(DEVICES)
    ]
    return {
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def busy(index: int) -> Iterator[Obj]:
    """On every other node, a bound pod whose claim holds 6 of its 8 GPUs: the
    nodes with room for a gang's pods are those the cycle must find."""
    if index % 2:
        return
    name = f"node-{index:05}"
    claim_name = f"busy-{index:05}"
    results = [
        {"request": "gpu", "driver": DRIVER, "pool": name, "device": f"gpu-{device}"}
        for device in range(DEVICES - 2)
    ]
    yield {
        "kind": "ResourceClaim",
        "metadata": {"name": claim_name, "namespace": "work"},
        "spec": {"devices": {"requests": [request(DEVICES - 2)]}},
        "status": {"allocation": {"devices": {"results": results}}},
    }
    yield {
        "kind": "Pod",
        "metadata": {"name": claim_name, "namespace": "work"},
        "spec": {
            "nodeName": name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
        },
        "status": {"phase": "Running"},
    }


def request(count: int) -> Obj:
    return {"name": "gpu", "exactly": {"deviceClassName": "h100", "count": count}}


def gang() -> Iterator[Obj]:
    yield {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"schedulingPolicy": {"gang": {"minCount": GANG_SIZE}}},
    }
    for index in range(GANG_SIZE):
        yield {
            "kind": "Pod",
            "metadata": {
                "name": f"train-{index}",
                "namespace": "ml",
                "labels": {POD_GROUP_LABEL: "train"},
            },
            "spec": {
                "schedulingGates": [{"name": GANG_GATE}],
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "8"}}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            },
        }


def cluster() -> ClusterState:
    state = ClusterState()
    objects: list[Obj] = [
        {
            "kind": "DeviceClass",
            "metadata": {"name": "h100"},
            "spec": {"selectors": [{"cel": {"expression": SELECTOR}}]},
        },
        {
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [request(1)]}}},
        },
    ]
    for index in range(NODES):
        objects += [node(index), resource_slice(index), *busy(index)]
    objects += list(gang())
    for obj in objects:
        rejected = state.apply(obj["kind"], obj).rejected
        assert rejected is None, rejected
    state.devices.judge_in_place()  # the operator judges selectors beside its cycles
    return state


def checked(result: CycleResult) -> None:
    """Every pod placed, none on an A100, none beyond a node's free H100s (2 on a busy
    node, 8 on the others)."""
    (admission,) = result.admissions
    assert admission.group == GroupKey("ml", "train")
    per_node = Counter(admission.placements.values())
    assert sum(per_node.values()) == GANG_SIZE
    for name, pods in per_node.items():
        index = int(name.removeprefix("node-"))
        assert product(index) == "H100", name
        busy_node = index % 2 == 0 and index > 0  # node 0's claim changes in the runs
        assert pods <= (2 if busy_node else DEVICES), (name, pods)


def timed(state: ClusterState) -> tuple[float, float, CycleResult]:
    """One cycle: its wall time, the CPU time it took (what another process on the
    machine does not inflate), and its decision."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = schedule(state, now=NOW, config=CONFIG)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def measure(runs: int) -> dict[str, Any]:
    started = time.perf_counter()
    state = cluster()
    built = time.perf_counter() - started
    cold = timed(state)
    checked(cold[2])
    warm, changed = [], []
    for _ in range(runs):
        warm.append(timed(state))
        checked(warm[-1][2])
    for run in range(runs):
        claim = next(busy(0))  # a claim's allocation changes: what the book keeps is redone
        del claim["status"]["allocation"]["devices"]["results"][run % 2 :]
        state.apply("ResourceClaim", claim)
        changed.append(timed(state))
        checked(changed[-1][2])

    def ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 1)

    return {
        "nodes": NODES,
        "devices_per_node": DEVICES,
        "gang_size": GANG_SIZE,
        "build_seconds": round(built, 2),
        "cycle_cold_ms": round(cold[0] * 1000, 1),
        "cycle_cold_cpu_ms": round(cold[1] * 1000, 1),
        "cycle_warm_ms_median": ms([run[0] for run in warm]),
        "cycle_warm_cpu_ms_median": ms([run[1] for run in warm]),
        "cycle_after_a_claim_changed_ms_median": ms([run[0] for run in changed]),
        "cycle_after_a_claim_changed_cpu_ms_median": ms([run[1] for run in changed]),
        "load_average_1m": round(os.getloadavg()[0], 1),
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="warm cycles measured")
    figures = measure(parser.parse_args().runs)
    for key, value in figures.items():
        print(f"{key:>42}  {value}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
