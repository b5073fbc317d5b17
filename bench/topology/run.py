"""Topology-levels benchmark: gangs preferring one rack, else one block, else one zone.

Run with `.venv/bin/python -m bench.topology`. It builds the engine benchmark's
snapshot (5,000 nodes, 50,000 bound pods; `bench/engine/run.py`) with its nodes in three
levels (4 zones of 5 blocks of 10 racks of 25 nodes), declared by a Kueue `Topology`
in the state as the operator reads it, and measures in one run, each beside the same
work without a preference:

- a 64-pod GPU gang preferring a rack (one has room);
- a 64-pod gang of 2 GPUs a pod preferring a rack (none has room: one block);
- a 64-pod GPU gang preferring a block, in slices of 8 per rack;
- a cycle over 1,000 waiting gangs of which every fourth prefers a rack, and every
  eighth of those of 4 pods or more instead prefers a block in slices of 4 per rack.

Each scenario's decision is checked before its time counts. The figures go to the
`topology_levels` section of `bench/results/engine.json`; the other sections are kept.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.engine.cluster import (
    GANG_SIZE,
    NODES,
    PENDING_GANGS,
    RESULTS,
    ZONE,
    Obj,
    apply,
    bound_workload,
    cycle,
    node_object,
    pending_gang,
    pending_gangs,
    settle,
)
from bench.engine.run import machine
from muster.api.constants import (
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_SLICE_ANNOTATION,
    TOPOLOGY_SLICE_SIZE_ANNOTATION,
)
from muster.scheduler import ClusterState
from muster.scheduler.decisions.results import CycleResult

BLOCK = "example.com/block"
RACK = "example.com/rack"
LEVELS = (ZONE, BLOCK, RACK)
RACK_NODES, BLOCK_RACKS, ZONE_BLOCKS = 25, 10, 5
GOALS_MS = {
    "gang_64_pods_preferring_rack": 20.0,
    "gang_64_pods_block_in_slices_of_8_per_rack": 20.0,
    "cycle_1000_gangs_quarter_preferring": 2000.0,
}
TOPOLOGY: Obj = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Topology",
    "metadata": {"name": "bench"},
    "spec": {"levels": [{"nodeLabel": key} for key in LEVELS]},
}


def levelled_node(index: int) -> Obj:
    """The engine benchmark's node, labelled with its zone, block and rack."""
    node = node_object(index)
    rack = index // RACK_NODES
    block = rack // BLOCK_RACKS
    node["metadata"]["labels"].update(
        {
            ZONE: f"zone-{block // ZONE_BLOCKS}",
            BLOCK: f"block-{block:02d}",
            RACK: f"rack-{rack:03d}",
        }
    )
    return node


def levelled_state() -> ClusterState:
    """The snapshot, its running gangs settled as between events on a live cluster."""
    state = ClusterState()
    for index in range(NODES):
        state.apply("Node", levelled_node(index))
    state.apply("Topology", TOPOLOGY)
    objects = list(bound_workload(1.0))
    apply(state, objects)
    settle(state, objects)
    return state


def preferring(gang: list[Obj], key: str = RACK) -> list[Obj]:
    """The gang with its PodGroup preferring one domain of `key`."""
    gang[0]["metadata"]["annotations"] = {TOPOLOGY_PREFERRED_ANNOTATION: key}
    return gang


def sliced(gang: list[Obj], size: int, key: str = RACK) -> list[Obj]:
    """The gang preferring a block, every `size` members (by name) in one domain of `key`."""
    gang[0]["metadata"]["annotations"] = {
        TOPOLOGY_PREFERRED_ANNOTATION: BLOCK,
        TOPOLOGY_SLICE_ANNOTATION: key,
        TOPOLOGY_SLICE_SIZE_ANNOTATION: str(size),
    }
    return gang


def timed_ms(run: Callable[[], object], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1e3)
    return samples


def withdrawn(state: ClusterState, gangs: list[list[Obj]]) -> None:
    for gang in gangs:
        state.delete("PodGroup", "bench", gang[0]["metadata"]["name"])
        for obj in gang[1:]:
            state.delete("Pod", "bench", obj["metadata"]["name"])


def measured(
    state: ClusterState,
    gangs: list[list[Obj]],
    repeats: int,
    check: Callable[[CycleResult], None],
) -> dict[str, float]:
    """Median and p90 of a cycle over `gangs`, once its decision is checked."""
    for gang in gangs:
        apply(state, gang)
    check(cycle(state))
    samples = sorted(timed_ms(lambda: cycle(state), repeats))
    withdrawn(state, gangs)
    return {
        "engine_ms": round(statistics.median(samples), 2),
        "engine_p90_ms": round(samples[min(int(0.9 * repeats), repeats - 1)], 2),
        "samples": repeats,
    }


def one_domain(level: str) -> Callable[[CycleResult], None]:
    def check(result: CycleResult) -> None:
        (admission,) = result.admissions
        assert len(admission.placements) == GANG_SIZE, result.verdicts
        assert admission.domain is not None and admission.domain[0] == level, admission.domain

    return check


def in_slices(size: int) -> Callable[[CycleResult], None]:
    """One block, and every rack holding whole slices of `size`."""

    def check(result: CycleResult) -> None:
        one_domain(BLOCK)(result)
        racks: dict[str, int] = {}
        for node in result.admissions[0].placements.values():
            rack = levelled_node(int(node.rsplit("-", 1)[1]))["metadata"]["labels"][RACK]
            racks[rack] = racks.get(rack, 0) + 1
        assert all(count % size == 0 for count in racks.values()), racks

    return check


def anywhere(result: CycleResult) -> None:
    (admission,) = result.admissions
    assert len(admission.placements) == GANG_SIZE, result.verdicts


def measure_gangs(state: ClusterState, figures: dict[str, Any]) -> None:
    for label, gpu, level in (
        ("gang_64_pods_preferring_rack", 1, RACK),
        ("gang_64_pods_preferring_rack_given_a_block", 2, BLOCK),
    ):

        def gang(name: str, gpus: int = gpu) -> list[Obj]:
            return pending_gang(name, GANG_SIZE, cpu="8", memory="32Gi", gpu=gpus)

        preferred = measured(state, [preferring(gang("preferring"))], 20, one_domain(level))
        plain = measured(state, [gang("plain")], 20, anywhere)
        figures[label] = {
            **preferred,
            "without_preference_ms": plain["engine_ms"],
            "ratio_to_without": round(preferred["engine_ms"] / plain["engine_ms"], 2),
            "placed_in": level,
        }


def measure_sliced_gang(state: ClusterState, figures: dict[str, Any]) -> None:
    def gang(name: str) -> list[Obj]:
        return pending_gang(name, GANG_SIZE, cpu="8", memory="32Gi", gpu=1)

    slices = measured(state, [sliced(gang("sliced"), 8)], 20, in_slices(8))
    plain = measured(state, [gang("plain")], 20, anywhere)
    figures["gang_64_pods_block_in_slices_of_8_per_rack"] = {
        **slices,
        "without_preference_ms": plain["engine_ms"],
        "ratio_to_without": round(slices["engine_ms"] / plain["engine_ms"], 2),
        "placed_in": BLOCK,
    }


def measure_queue(state: ClusterState, figures: dict[str, Any]) -> None:
    admitted: dict[str, int] = {}

    def counted(label: str) -> Callable[[CycleResult], None]:
        def check(result: CycleResult) -> None:
            admitted[label] = len(result.admissions)
            assert result.admissions, "no gang of the queue was admitted"

        return check

    queue = pending_gangs(PENDING_GANGS)
    for number, gang in enumerate(queue):
        if number % 8 == 5 and len(gang) > 4:
            sliced(gang, 4)
        elif number % 4 == 1:
            preferring(gang)
    preferred = measured(state, queue, 3, counted("preferring"))
    plain = measured(state, pending_gangs(PENDING_GANGS), 3, counted("plain"))
    figures["cycle_1000_gangs_quarter_preferring"] = {
        **preferred,
        "preferring_gangs": PENDING_GANGS // 4,
        "of_them_in_slices": sum(
            TOPOLOGY_SLICE_ANNOTATION in gang[0]["metadata"].get("annotations", {})
            for gang in queue
        ),
        "admitted": admitted["preferring"],
        "without_preference_ms": plain["engine_ms"],
        "without_preference_admitted": admitted["plain"],
        "ratio_to_without": round(preferred["engine_ms"] / plain["engine_ms"], 2),
    }


def main() -> int:
    load = os.getloadavg()
    started = time.perf_counter()
    state = levelled_state()
    figures: dict[str, Any] = {
        "snapshot": {
            "nodes": NODES,
            "bound_pods": len(state.pods),
            "levels": {"zones": 4, "blocks": 20, "racks": 200, "nodes_per_rack": RACK_NODES},
            "build_s": round(time.perf_counter() - started, 2),
        }
    }
    measure_gangs(state, figures)
    measure_sliced_gang(state, figures)
    measure_queue(state, figures)
    for name, goal in GOALS_MS.items():
        figures[name]["goal_ms"] = goal
        figures[name]["goal_met"] = figures[name]["engine_ms"] <= goal
    figures["load_average_at_start"] = [round(x, 2) for x in load]
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"machine": machine()}
    results["topology_levels"] = figures
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
