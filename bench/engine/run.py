"""Decision-engine benchmark: the issue's figures, each beside a plain-Python loop.

Run with `.venv/bin/python -m bench.engine` (or `make bench-engine`). It builds a
snapshot of 5,000 nodes and 50,000 bound pods, measures the engine, measures a
straightforward pure-Python implementation of the same step in the same run, prints a
table and writes `bench/results/engine.json`.

The plain loops are the obvious code a first version would have: dictionaries per
node, every pod checked against every node. Where they would take minutes (a cycle
over 1,000 gangs) they run on a prefix of the work and the figure is scaled up; the
table says so.

The inter-pod figures (required anti-affinity, hard topology spread, self-affinity)
run on a second snapshot of the same size whose bound pods carry `app` labels and, a
quarter of them, hostname anti-affinity, so every placement consults the engine's
label and existing anti-affinity indexes. They have no plain-Python counterpart; each
scenario's decision is checked (one pod per node, balanced zones, one zone) and the
run stops if it is not the expected one. `--rules-only` measures just these and keeps
the other figures already in the results file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import signal
import statistics
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from resource import RUSAGE_SELF, getrusage
from typing import Any

import numpy as np

from muster.api.constants import GANG_GATE, POD_GROUP_LABEL
from muster.api.keys import GroupKey
from muster.api.times import rfc3339
from muster.operator.config import OperatorConfig
from muster.operator.execution.forecast_process import Budget, Child, Request
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.decisions.results import NOTHING_CARRIED, Carried, CycleResult, Reason
from muster.scheduler.forecast.forecast import forecast

NODES = 5_000
CPU_NODES = 4_000
PODS_PER_NODE = 10
RACK_SIZE = 40
ZONES = 4
GANG_SIZE = 64
PENDING_GANGS = 1_000
ESTIMATE_REPETITIONS = 12
RHYTHM_BLOCKS = 6
ESTIMATE_RUNS = 3
NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12)
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
RESULTS = Path(__file__).resolve().parents[1] / "results" / "engine.json"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"

Obj = dict[str, Any]
_CARRIED: weakref.WeakKeyDictionary[ClusterState, Carried] = weakref.WeakKeyDictionary()


def carried(state: ClusterState) -> Carried:
    """What the last cycle on the state handed on (the groups it found quiet)."""
    return _CARRIED.get(state, NOTHING_CARRIED)


def cycle(state: ClusterState) -> CycleResult:
    """One cycle as the operator's loop runs it: handed what the last one handed on."""
    result = schedule(state, now=NOW, config=CONFIG, carried=carried(state))
    _CARRIED[state] = result.carried
    return result


# ---- the synthetic cluster ---------------------------------------------------------


def node_object(index: int) -> Obj:
    gpu = index >= CPU_NODES
    allocatable = {"cpu": "96" if gpu else "64", "memory": "1Ti" if gpu else "256Gi", "pods": "110"}
    if gpu:
        allocatable["nvidia.com/gpu"] = "8"
    return {
        "metadata": {
            "name": f"node-{index:05d}",
            "labels": {
                HOSTNAME: f"node-{index:05d}",
                ZONE: f"zone-{index % ZONES}",
                "rack": f"rack-{index // RACK_SIZE:03d}",
                "pool": "gpu" if gpu else "cpu",
            },
        },
        "spec": {"taints": [GPU_TAINT] if gpu else []},
        "status": {"allocatable": allocatable},
    }


def pod_object(
    name: str,
    *,
    cpu: str,
    memory: str,
    gpu: int = 0,
    node: str | None = None,
    group: str | None = None,
    priority: int = 0,
    namespace: str = "bench",
    labels: dict[str, str] | None = None,
    rules: Obj | None = None,
) -> Obj:
    """A pod; `labels` are added to its group label, `rules` (affinity, topology spread
    constraints) to its spec."""
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    spec: Obj = {"priority": priority, **(rules or {})}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
        spec["tolerations"] = [GPU_TOLERATION]
    spec["containers"] = [{"name": "main", "resources": {"requests": requests}}]
    if node is not None:
        spec["nodeName"] = node
    elif group is not None:
        spec["schedulingGates"] = [{"name": GANG_GATE}]
    all_labels = {POD_GROUP_LABEL: group} if group is not None else {}
    all_labels.update(labels or {})
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": all_labels},
        "spec": spec,
    }


def group_object(
    name: str,
    min_count: int,
    *,
    topology: str | None = None,
    priority: int = 0,
    plan: dict[str, str] | None = None,
    created: str = "2026-01-01T00:00:00Z",
    namespace: str = "bench",
) -> Obj:
    spec: Obj = {"schedulingPolicy": {"gang": {"minCount": min_count}}, "priority": priority}
    if topology is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    status: Obj = {}
    if plan is not None:
        status = {"conditions": [{"type": "PodGroupScheduled", "status": "True"}], "plan": plan}
    return {
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": spec,
        "status": status,
    }


def anti_affinity(app: str, key: str = HOSTNAME) -> Obj:
    """Required anti-affinity to the pods of one's own app: at most one per domain."""
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"affinity": {"podAntiAffinity": {REQUIRED: [term]}}}


def affinity(app: str, key: str = ZONE) -> Obj:
    """Required affinity to the pods of one's own app: all in one domain."""
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"affinity": {"podAffinity": {REQUIRED: [term]}}}


def spread(app: str, key: str = ZONE) -> Obj:
    """A hard topology spread constraint over one's own app: maxSkew 1."""
    constraint = {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": app}},
    }
    return {"topologySpreadConstraints": [constraint]}


def bound_workload(fill: float, *, labelled: bool = False) -> Iterator[Obj]:
    """50,000 bound pods: 2,000 admitted 8-pod gangs (priority 100) and plain pods.

    `fill` scales the plain pods' cpu (1.0 leaves ~40% of each CPU node free).
    `labelled`: every pod carries `app: <its Job>` (a training gang, or a run of 8 plain
    pods), and the pods of every fourth Job (25%) carry required anti-affinity to
    their own app by hostname, as replicated services do; the Jobs' pods sit on
    distinct nodes, so the rule holds. Same nodes and amounts either way.
    """
    rng = random.Random(7)
    for gang in range(2_000):
        plan = {}
        pods = []
        app = f"train-{gang:04d}"
        labels = {"app": app} if labelled else None
        rules = anti_affinity(app) if labelled and gang % 4 == 0 else None
        for member in range(8):
            index = (gang * 8 + member) * 7 % NODES
            node = f"node-{index:05d}"
            name = f"train-{gang:04d}-{member}"
            plan[name] = node
            gpu = 1 if index >= CPU_NODES else 0
            pods.append(
                pod_object(
                    name,
                    cpu="4",
                    memory="16Gi",
                    gpu=gpu,
                    node=node,
                    group=f"train-{gang:04d}",
                    priority=100,
                    labels=labels,
                    rules=rules,
                )
            )
        yield group_object(f"train-{gang:04d}", 8, plan=plan, priority=100)
        yield from pods
    plain = NODES * PODS_PER_NODE - 16_000
    for number in range(plain):
        index = number % NODES
        cores = rng.choice((1, 2, 3)) * fill
        gpu = 1 if index >= CPU_NODES and number % 3 == 0 else 0
        job = number // 8
        app = f"svc-{job:04d}"
        yield pod_object(
            f"svc-{number:05d}",
            cpu=f"{round(cores * 1000)}m",
            memory=f"{rng.choice((2, 4, 8))}Gi",
            gpu=gpu,
            node=f"node-{index:05d}",
            priority=rng.choice((0, 0, 0, 10)),
            labels={"app": app} if labelled else None,
            rules=anti_affinity(app) if labelled and job % 4 == 0 else None,
        )


def apply(state: ClusterState, objects: Iterator[Obj] | list[Obj]) -> None:
    for obj in objects:
        if "schedulingPolicy" in obj.get("spec", {}):
            state.apply("PodGroup", obj)
        else:
            state.apply("Pod", obj)


def settle(state: ClusterState, objects: list[Obj]) -> None:
    """Write the first cycle's statuses back, as the operator's writer would: every
    running gang then has the status it should, and the cycles after find nothing to
    do for it (`Carried.quiet`), as on a live cluster between events."""
    written = cycle(state).plan.statuses
    for obj in objects:
        metadata = obj.get("metadata") or {}
        key = GroupKey(metadata.get("namespace", ""), metadata.get("name", ""))
        if "schedulingPolicy" in obj.get("spec", {}) and key in written:
            state.apply("PodGroup", {**obj, "status": written[key]})


def base_state(fill: float = 1.0, *, labelled: bool = False) -> tuple[ClusterState, list[Obj]]:
    """The snapshot, its running gangs settled (`settle`)."""
    state = ClusterState()
    nodes = [node_object(index) for index in range(NODES)]
    for obj in nodes:
        state.apply("Node", obj)
    objects = list(bound_workload(fill, labelled=labelled))
    apply(state, objects)
    settle(state, objects)
    return state, [*nodes, *objects]


RULES: dict[str, Callable[[str], Obj]] = {
    "hostname_anti_affinity": anti_affinity,
    "zone_spread": spread,
    "zone_affinity": affinity,
}


def pending_gang(
    name: str,
    size: int,
    *,
    cpu: str,
    memory: str,
    gpu: int = 0,
    rule: str | None = None,
    **group: Any,
) -> list[Obj]:
    """A PodGroup and its gated pods, labelled `app: <name>`; `rule` names one of
    `RULES`, applied by every member to the gang's own pods."""
    members = [
        pod_object(
            f"{name}-{index}",
            cpu=cpu,
            memory=memory,
            gpu=gpu,
            group=name,
            priority=group.get("priority", 0),
            labels={"app": name},
            rules=RULES[rule](name) if rule is not None else None,
        )
        for index in range(size)
    ]
    return [group_object(name, size, **group), *members]


def timestamp(seconds: int) -> str:
    return rfc3339(datetime(2026, 1, 1, tzinfo=UTC).timestamp() + seconds)


def queue_rule(number: int) -> str | None:
    """The rule of the ruled queue's gang `number`: every fourth gang, kinds in turn."""
    kinds = list(RULES)
    return kinds[number // 4 % len(kinds)] if number % 4 == 3 else None


def pending_gangs(
    count: int, priorities: tuple[int, ...] = (0,), *, ruled: bool = False
) -> list[list[Obj]]:
    """A mixed queue: CPU and GPU gangs of 1-32 pods, half with a zone or rack key.

    With priorities above those of the bound pods (0, 10 and the training gangs' 100)
    the gangs that do not fit search for victims. With `ruled`, every fourth gang
    instead carries an inter-pod rule (hostname anti-affinity, zone spread and zone
    self-affinity in turn) and no topology key; the random draws are the same, so the
    other gangs are those of the plain queue.
    """
    rng = random.Random(11)
    gangs = []
    for number in range(count):
        size = rng.choice((1, 2, 4, 8, 16, 32))
        gpu = rng.choice((0, 0, 1, 2, 8))
        topology = rng.choice((None, None, ZONE, "rack"))
        rule = queue_rule(number) if ruled else None
        gangs.append(
            pending_gang(
                f"queue-{number:04d}",
                size,
                cpu=rng.choice(("500m", "2", "8", "16")),
                memory=rng.choice(("1Gi", "8Gi", "32Gi")),
                gpu=gpu,
                rule=rule,
                topology=None if rule is not None else topology,
                priority=rng.choice(priorities),
                created=timestamp(number),
            )
        )
    return gangs


# ---- the plain-Python baseline -------------------------------------------------------


def quantity(text: str) -> float:
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


def requests_of(obj: Obj) -> dict[str, float]:
    totals: dict[str, float] = {"pods": 1}
    for container in obj["spec"]["containers"]:
        for resource, raw in container["resources"]["requests"].items():
            totals[resource] = totals.get(resource, 0) + quantity(raw)
    return totals


class PlainCluster:
    """Nodes as dictionaries; usage recomputed from all pods, as a first version would."""

    def __init__(self, objects: list[Obj]) -> None:
        self.nodes = [obj for obj in objects if "allocatable" in obj.get("status", {})]
        self.pods = [obj for obj in objects if "containers" in obj.get("spec", {})]
        self.free: dict[str, dict[str, float]] = {}
        self.recompute()

    def recompute(self, without: set[str] | None = None) -> None:
        self.free = {
            node["metadata"]["name"]: {
                res: quantity(v) for res, v in node["status"]["allocatable"].items()
            }
            for node in self.nodes
        }
        for obj in self.pods:
            on = obj["spec"].get("nodeName")
            if on is None or (without and obj["metadata"]["name"] in without):
                continue
            for resource, amount in requests_of(obj).items():
                self.free[on][resource] = self.free[on].get(resource, 0) - amount

    def allowed(self, node: Obj, pod: Obj) -> bool:
        tolerations = pod["spec"].get("tolerations", [])
        for taint in node["spec"].get("taints", []):
            if not any(t.get("key") == taint["key"] for t in tolerations):
                return False
        return True

    def place(
        self, gang: list[Obj], free: dict[str, dict[str, float]], nodes: list[Obj]
    ) -> dict[str, str] | None:
        """Best fit, pod by pod: the allowed node with the least room left after it."""
        free = {name: dict(room) for name, room in free.items()}
        placed = {}
        for pod in gang:
            want = requests_of(pod)
            best, best_left = None, float("inf")
            for node in nodes:
                name = node["metadata"]["name"]
                room = free[name]
                if not self.allowed(node, pod):
                    continue
                if all(room.get(res, 0) >= amount for res, amount in want.items()):
                    left = room["cpu"] - want.get("cpu", 0)
                    if left < best_left:
                        best, best_left = name, left
            if best is None:
                return None
            for res, amount in want.items():
                free[best][res] -= amount
            placed[pod["metadata"]["name"]] = best
        return placed

    def decide(self, gang: list[Obj], topology: str | None) -> dict[str, str] | None:
        members = [obj for obj in gang if "containers" in obj.get("spec", {})]
        if topology is None:
            return self.place(members, self.free, self.nodes)
        domains: dict[str, list[Obj]] = {}
        for node in self.nodes:
            value = node["metadata"]["labels"].get(topology)
            if value is not None:
                domains.setdefault(value, []).append(node)
        for value in sorted(domains):
            placed = self.place(members, self.free, domains[value])
            if placed is not None:
                return placed
        return None

    def preempt(self, gang: list[Obj], priority: int) -> dict[str, str] | None:
        """Remove lower priorities level by level until the gang fits."""
        levels = sorted(
            {
                obj["spec"].get("priority", 0)
                for obj in self.pods
                if obj["spec"].get("priority", 0) < priority
            }
        )
        for level in levels:
            gone = {
                obj["metadata"]["name"]
                for obj in self.pods
                if obj["spec"].get("priority", 0) <= level
            }
            self.recompute(without=gone)
            placed = self.decide(gang, None)
            self.recompute()
            if placed is not None:
                return placed
        return None


# ---- measuring -------------------------------------------------------------------------


def timed(run: Callable[[], object], repeats: int) -> tuple[float, list[float]]:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), samples


def measure_gang(
    state: ClusterState,
    plain: PlainCluster,
    topology: str | None,
    figures: dict[str, Any],
    label: str,
) -> None:
    gang = pending_gang(f"gang-{label}", GANG_SIZE, cpu="8", memory="32Gi", topology=topology)
    apply(state, gang)
    cold, _ = timed(lambda: cycle(state), 1)
    warm, samples = timed(lambda: cycle(state), 20)
    result = cycle(state)
    assert len(result.admissions) == 1 and len(result.admissions[0].placements) == GANG_SIZE, (
        result.verdicts
    )
    baseline, _ = timed(lambda: plain.decide(gang, topology), 3)
    figures[label] = {
        "engine_ms": round(warm * 1e3, 3),
        "engine_first_call_ms": round(cold * 1e3, 3),
        "engine_p90_ms": round(sorted(samples)[int(0.9 * len(samples))] * 1e3, 3),
        "plain_python_ms": round(baseline * 1e3, 1),
        "speedup": round(baseline / warm, 1),
    }
    if topology is not None:
        figures[label]["plain_python_note"] = "stops at the first domain, in name order, that fits"
    state.delete("PodGroup", "bench", f"gang-{label}")
    for obj in gang[1:]:
        state.delete("Pod", "bench", obj["metadata"]["name"])


def measure_queue(
    state: ClusterState,
    plain: PlainCluster,
    figures: dict[str, Any],
    label: str,
    priorities: tuple[int, ...],
) -> None:
    gangs = pending_gangs(PENDING_GANGS, priorities)
    for gang in gangs:
        apply(state, gang)
    cold, _ = timed(lambda: cycle(state), 1)
    warm, _ = timed(lambda: cycle(state), 3)
    result: CycleResult = cycle(state)
    prefix = 10
    started = time.perf_counter()
    for gang in gangs[:prefix]:
        spec = gang[0]["spec"]
        topology = spec.get("schedulingConstraints", {}).get("topology", [{}])[0].get("key")
        if plain.decide(gang, topology) is None and spec["priority"] > 0:
            plain.preempt(gang, spec["priority"])
    baseline = (time.perf_counter() - started) * PENDING_GANGS / prefix
    figures[label] = {
        "engine_ms": round(warm * 1e3, 1),
        "engine_first_call_ms": round(cold * 1e3, 1),
        "admitted": len(result.admissions),
        "admitted_with_victims": sum(bool(admission.victims) for admission in result.admissions),
        "unschedulable": len(result.verdicts),
        "plain_python_ms": round(baseline * 1e3, 1),
        "plain_python_note": f"scaled up from the first {prefix} gangs",
        "speedup": round(baseline / warm, 1),
    }
    for gang in gangs:
        state.delete("PodGroup", "bench", gang[0]["metadata"]["name"])
        for obj in gang[1:]:
            state.delete("Pod", "bench", obj["metadata"]["name"])


def measure_estimates(state: ClusterState, figures: dict[str, Any]) -> None:
    """The scheduling cycle with start-time estimates off and on, side by side.

    As the operator runs them: each forecast in a child process forked from the state
    (`forecast_process.Child`), at idle CPU priority, on the operator's default budget.
    Off and on alternate, so both see the same load on a shared machine; each figure
    is a median of several, and the whole is run `ESTIMATE_RUNS` times (the machine's
    noise changes from minute to minute); a cycle's CPU time (the process's own, which other
    people's load on the machine hardly changes) is given beside its wall time.

    - `worst_case`: a cycle alone, then a fork and a cycle while that child forecasts,
      `ESTIMATE_REPETITIONS` times. The first cycle after a fork pays for the pages
      it writes that the child still shares (copy on write); the figure counts the
      fork itself too, which holds the event loop.
    - `worst_case_child_stopped`: the same with the child stopped during the cycle,
      which leaves only the cost of copy on write (with the page faults it takes).
    - `operator_rhythm`: blocks of the cycles that fit in one `--estimate-interval`
      back to back (a burst), without estimates and with a fork after the block's
      first cycle, as the estimate writer forks after a cycle ends.
    """
    gangs = pending_gangs(PENDING_GANGS)
    for gang in gangs:
        apply(state, gang)
    budget = OperatorConfig().estimate_budget
    started = time.perf_counter()
    ahead = forecast(
        state, now=NOW, config=CONFIG, keep_going=Budget(budget), carried=carried(state)
    )
    forecast_s = time.perf_counter() - started
    cycle(state)  # warm
    forecaster = _Forecaster(state, budget)
    runs = [_estimate_run(state, forecaster) for _ in range(ESTIMATE_RUNS)]
    figures["estimates"] = {
        "state": f"{len(state.pods)} pods, {PENDING_GANGS} gangs waiting",
        "forecast_in_process_ms": round(forecast_s * 1e3, 1),
        "forecast_cycles": ahead.cycles,
        "forecast_complete": ahead.complete,
        "forecast_budget_cpu_s": budget,
        "forecasts_in_child": len(forecaster.cycles),
        "forecast_child_cycles_median": statistics.median(forecaster.cycles),
        "fork_ms": round(statistics.median(forecaster.forks) * 1e3, 1),
        "ratio_cpu_median_of_runs": {
            name: statistics.median(run[name]["ratio_cpu"] for run in runs)
            for name in ("worst_case", "worst_case_child_stopped", "operator_rhythm")
        },
        "goal": "cycle within 10% of its time without estimates (ratio <= 1.10)",
        "runs": runs,
    }
    for gang in gangs:
        state.delete("PodGroup", "bench", gang[0]["metadata"]["name"])
        for obj in gang[1:]:
            state.delete("Pod", "bench", obj["metadata"]["name"])


def _estimate_run(state: ClusterState, forecaster: _Forecaster) -> dict[str, Any]:
    """One run of the three comparisons (see `measure_estimates`)."""
    load = os.getloadavg()
    alone, beside, stopped, faults = [], [], [], []
    for _ in range(ESTIMATE_REPETITIONS):
        alone.append(_cycle(state))
        forecaster.fork()
        wall, cpu = _cycle(state)
        beside.append((wall + forecaster.forks[-1], cpu + forecaster.forks[-1]))
        forecaster.collect()
        forecaster.fork()
        with forecaster.stopped():
            before = getrusage(RUSAGE_SELF).ru_minflt
            stopped.append(_cycle(state))
            faults.append(getrusage(RUSAGE_SELF).ru_minflt - before)
        forecaster.collect()
    typical = statistics.median(wall for wall, _ in alone)
    per_block = max(2, round(OperatorConfig().estimate_interval / typical))
    quiet, busy = [], []
    for _ in range(RHYTHM_BLOCKS):
        quiet.append(_block(state, per_block, None))
        busy.append(_block(state, per_block, forecaster))
    return {
        "load_average_at_start": [round(x, 2) for x in load],
        "worst_case": _compared(alone, beside, ESTIMATE_REPETITIONS),
        "worst_case_child_stopped": {
            "page_faults_median": statistics.median(faults),
            **_compared(alone, stopped, ESTIMATE_REPETITIONS),
        },
        "operator_rhythm": {
            "cycles_per_block": per_block,
            **_compared(quiet, busy, RHYTHM_BLOCKS),
        },
    }


class _Forecaster:
    """Forecasts in child processes, as the estimate writer starts them."""

    def __init__(self, state: ClusterState, budget: float) -> None:
        self.state = state
        self.budget = budget
        self.child: Child | None = None
        self.forks: list[float] = []
        self.cycles: list[int] = []

    def fork(self) -> None:
        started = time.perf_counter()
        self.child = Child(
            self.state, Request(NOW, CONFIG, 86400.0, self.budget, carried(self.state))
        )
        self.forks.append(time.perf_counter() - started)

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """The child stopped meanwhile (SIGSTOP): what copy on write alone costs."""
        assert self.child is not None
        pid = self.child._process.pid or 0
        os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(pid, signal.SIGCONT)

    def collect(self) -> None:
        assert self.child is not None
        self.cycles.append(self.child.answer().forecast.cycles)
        self.child = None


def _cycle(state: ClusterState) -> tuple[float, float]:
    """One cycle's wall and CPU time."""
    wall, cpu = time.perf_counter(), time.process_time()
    cycle(state)
    return time.perf_counter() - wall, time.process_time() - cpu


def _block(state: ClusterState, cycles: int, forecaster: _Forecaster | None) -> tuple[float, float]:
    """Cycles back to back, a fork after the first when `forecaster` is given (counted):
    the mean wall and CPU time of a cycle."""
    walls, cpus = [], []
    for index in range(cycles):
        wall, cpu = _cycle(state)
        if index == 0 and forecaster is not None:
            forecaster.fork()
            wall, cpu = wall + forecaster.forks[-1], cpu + forecaster.forks[-1]
        walls.append(wall)
        cpus.append(cpu)
    if forecaster is not None:
        forecaster.collect()
    return statistics.mean(walls), statistics.mean(cpus)


def _compared(
    off: list[tuple[float, float]], on: list[tuple[float, float]], repetitions: int
) -> dict[str, Any]:
    """Medians of (wall, CPU) samples without and with estimates, and their ratios."""
    wall_off, wall_on = (statistics.median(sample[0] for sample in run) for run in (off, on))
    cpu_off, cpu_on = (statistics.median(sample[1] for sample in run) for run in (off, on))
    return {
        "repetitions": repetitions,
        "cycle_without_estimates_ms": round(wall_off * 1e3, 1),
        "cycle_with_estimates_ms": round(wall_on * 1e3, 1),
        "cycle_cpu_without_estimates_ms": round(cpu_off * 1e3, 1),
        "cycle_cpu_with_estimates_ms": round(cpu_on * 1e3, 1),
        "ratio_wall": round(wall_on / wall_off, 3),
        "ratio_cpu": round(cpu_on / cpu_off, 3),
        "goal_met_cpu": cpu_on / cpu_off <= 1.10,
    }


def measure_preemption(figures: dict[str, Any]) -> None:
    state, objects = base_state(fill=1.5)
    gang = pending_gang("urgent", GANG_SIZE, cpu="40", memory="32Gi", priority=1000)
    apply(state, gang)
    cold, _ = timed(lambda: cycle(state), 1)
    warm, _ = timed(lambda: cycle(state), 10)
    result = cycle(state)
    (admission,) = result.admissions
    plain = PlainCluster([*objects, *gang])
    baseline, _ = timed(lambda: plain.preempt(gang, 1000), 1)
    figures["preemption_64_pod_gang"] = {
        "engine_ms": round(warm * 1e3, 3),
        "engine_first_call_ms": round(cold * 1e3, 3),
        "victims": len(admission.victims),
        "highest_victim_priority": max(victim.priority for victim in admission.victims),
        "plain_python_ms": round(baseline * 1e3, 1),
        "speedup": round(baseline / warm, 1),
    }


# ---- inter-pod rules -------------------------------------------------------------------


class WrongDecisionError(AssertionError):
    """A scenario's decision is not the one it was built to produce: its timing means
    nothing, so the benchmark stops."""


def zone_of(node: str) -> int:
    return int(node.rsplit("-", 1)[1]) % ZONES


def check_rule(rule: str, placements: dict[str, str], where: str) -> None:
    """Whether a gang's own placements keep its rule (no other pod carries its app)."""
    nodes = list(placements.values())
    if rule == "hostname_anti_affinity" and len(set(nodes)) != len(nodes):
        raise WrongDecisionError(f"{where}: {len(nodes)} pods on {len(set(nodes))} nodes")
    zones = [zone_of(node) for node in nodes]
    if rule == "zone_affinity" and len(set(zones)) > 1:
        raise WrongDecisionError(f"{where}: pods in zones {sorted(set(zones))}")
    if rule == "zone_spread":
        per_zone = [zones.count(zone) for zone in range(ZONES)]
        if max(per_zone) - min(per_zone) > 1:
            raise WrongDecisionError(f"{where}: pods per zone {per_zone}, skew above 1")


def no_errors(result: CycleResult, where: str) -> None:
    failed = {
        str(key): verdict.message
        for key, verdict in result.verdicts.items()
        if verdict.reason is Reason.SCHEDULER_ERROR
    }
    if failed:
        raise WrongDecisionError(f"{where}: the engine failed on {len(failed)} gang(s): {failed}")


def sampled(run: Callable[[], object], repeats: int, digits: int) -> dict[str, Any]:
    """Median and p90 (nearest rank) of `repeats` runs, in milliseconds."""
    _, samples = timed(run, repeats)

    def ms(value: float) -> float:
        return round(value * 1e3, digits)

    return {
        "engine_ms": ms(statistics.median(samples)),
        "engine_p90_ms": ms(sorted(samples)[min(int(0.9 * repeats), repeats - 1)]),
        "samples": repeats,
    }


def measure_quiet_cycle(figures: dict[str, Any], repeats: int = 9) -> None:
    """A cycle with little to decide on a full cluster: 2,000 admitted gangs running,
    one small gang waiting. Measured as it comes, and as the first cycle after a node
    is added (the node table is rebuilt).

    The running gangs are settled (`base_state`)."""
    state, _ = base_state()
    apply(state, pending_gang("quiet", 8, cpu="1", memory="1Gi"))
    admitted = sum(group.admitted for group in state.groups.values())
    cycle(state)  # warm

    steady = sampled(lambda: cycle(state), repeats, 1)
    after: list[float] = []
    for extra in range(repeats):
        state.apply("Node", node_object(NODES + extra))
        started = time.perf_counter()
        cycle(state)
        after.append(time.perf_counter() - started)
    figures["cycle_quiet_admitted_gangs"] = {
        "admitted_gangs": admitted,
        "pending_gangs": 1,
        **steady,
        "after_node_added_ms": round(statistics.median(after) * 1e3, 1),
    }


def measure_ruled_gang(state: ClusterState, figures: dict[str, Any], label: str, rule: str) -> None:
    """One 64-pod CPU gang whose pods keep `rule` among themselves, alone in the queue."""
    name = f"gang-{rule.replace('_', '-')}"
    gang = pending_gang(name, GANG_SIZE, cpu="8", memory="32Gi", rule=rule)
    apply(state, gang)
    cold, _ = timed(lambda: cycle(state), 1)
    timings = sampled(lambda: cycle(state), 50, 3)
    result = cycle(state)
    no_errors(result, label)
    if len(result.admissions) != 1 or len(result.admissions[0].placements) != GANG_SIZE:
        raise WrongDecisionError(f"{label}: not admitted whole: {result.verdicts}")
    placements = result.admissions[0].placements
    check_rule(rule, placements, label)
    zones = [zone_of(node) for node in placements.values()]
    figures[label] = {
        **timings,
        "engine_first_call_ms": round(cold * 1e3, 3),
        "distinct_nodes": len(set(placements.values())),
        "pods_per_zone": [zones.count(zone) for zone in range(ZONES)],
    }
    state.delete("PodGroup", "bench", name)
    for obj in gang[1:]:
        state.delete("Pod", "bench", obj["metadata"]["name"])


def measure_ruled_queue(state: ClusterState, figures: dict[str, Any], label: str) -> None:
    """1,000 pending gangs, a quarter of them with inter-pod rules, in one cycle."""
    gangs = pending_gangs(PENDING_GANGS, ruled=True)
    for gang in gangs:
        apply(state, gang)
    cold, _ = timed(lambda: cycle(state), 1)
    timings = sampled(lambda: cycle(state), 9, 1)
    result = cycle(state)
    no_errors(result, label)
    rule_of = {gang[0]["metadata"]["name"]: queue_rule(number) for number, gang in enumerate(gangs)}
    per_rule: dict[str, dict[str, int]] = {
        kind: {"gangs": 0, "admitted": 0} for kind in [*RULES, "none"]
    }
    for kind in rule_of.values():
        per_rule[kind or "none"]["gangs"] += 1
    for admission in result.admissions:
        kind = rule_of[admission.group.name]
        per_rule[kind or "none"]["admitted"] += 1
        if kind is not None:
            check_rule(kind, admission.placements, f"{label}: {admission.group.name}")
    for kind in RULES:
        if not per_rule[kind]["admitted"]:
            raise WrongDecisionError(f"{label}: no {kind} gang admitted: the rule is not exercised")
    figures[label] = {
        **timings,
        "engine_first_call_ms": round(cold * 1e3, 1),
        "admitted": len(result.admissions),
        "unschedulable": len(result.verdicts),
        "by_rule": per_rule,
    }
    remove(state, gangs)
    plain = pending_gangs(PENDING_GANGS)
    for gang in plain:
        apply(state, gang)
    without, _ = timed(lambda: cycle(state), 3)
    figures[label]["same_queue_without_rules_ms"] = round(without * 1e3, 1)
    remove(state, plain)


def remove(state: ClusterState, gangs: list[list[Obj]]) -> None:
    for gang in gangs:
        state.delete("PodGroup", "bench", gang[0]["metadata"]["name"])
        for obj in gang[1:]:
            state.delete("Pod", "bench", obj["metadata"]["name"])


def measure_rules(figures: dict[str, Any]) -> None:
    """The inter-pod figures, on a cluster whose bound pods carry app labels and, a
    quarter of them, hostname anti-affinity (so placing any pod asks which of them
    repel it)."""
    started = time.perf_counter()
    state, objects = base_state(labelled=True)
    bound = [obj for obj in objects if "containers" in obj.get("spec", {})]
    figures["inter_pod_snapshot"] = {
        "nodes": NODES,
        "bound_pods": len(state.pods),
        "labelled": sum("app" in obj["metadata"]["labels"] for obj in bound),
        "with_anti_affinity": sum("affinity" in obj["spec"] for obj in bound),
        "build_s": round(time.perf_counter() - started, 2),
    }
    measure_ruled_gang(
        state, figures, "gang_64_pods_hostname_anti_affinity", "hostname_anti_affinity"
    )
    measure_ruled_gang(state, figures, "gang_64_pods_zone_spread", "zone_spread")
    measure_ruled_queue(state, figures, "cycle_1000_gangs_inter_pod_rules")


def measure_updates(state: ClusterState, plain: PlainCluster, figures: dict[str, Any]) -> None:
    """Per-event cost of creating and deleting bound pods: best of five rounds of 10,000.

    The best round is reported because the machine is shared: a slower round measures
    the neighbours, not the code.
    """
    events = [
        pod_object(f"event-{n:05d}", cpu="250m", memory="512Mi", node=f"node-{n % NODES:05d}")
        for n in range(10_000)
    ]
    creates, deletes = [], []
    for _ in range(5):
        started = time.perf_counter()
        for obj in events:
            state.apply("Pod", obj)
        creates.append((time.perf_counter() - started) / len(events))
        started = time.perf_counter()
        for obj in events:
            state.delete("Pod", "bench", obj["metadata"]["name"])
        deletes.append((time.perf_counter() - started) / len(events))
    create, delete = min(creates), min(deletes)
    rebuild, _ = timed(plain.recompute, 3)
    figures["update_per_pod_event"] = {
        "engine_create_us": round(create * 1e6, 2),
        "engine_delete_us": round(delete * 1e6, 2),
        "engine_create_median_us": round(statistics.median(creates) * 1e6, 2),
        "plain_python_rebuild_us": round(rebuild * 1e6, 1),
        "plain_python_note": "recomputing every node's usage from all pods after an event",
        "speedup": round(rebuild / max(create, delete), 1),
    }


def machine() -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if "model name" in line),
        platform.processor(),
    )
    return {
        "cpu_model": model,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


TARGETS_MS = {
    "gang_64_pods_no_topology": 5.0,
    "gang_64_pods_zone_key": 20.0,
    "gang_64_pods_rack_key": 20.0,
    "cycle_1000_gangs": 1000.0,
    "cycle_1000_gangs_preempting": 1000.0,
    "preemption_64_pod_gang": 50.0,
}
RULE_GOALS_MS = {
    "gang_64_pods_hostname_anti_affinity": 20.0,
    "gang_64_pods_zone_spread": 20.0,
    "cycle_1000_gangs_inter_pod_rules": 2000.0,
}


def _row(
    name: str, engine: float, target: float, plain: float, *, speedup: float, unit: str
) -> str:
    return (
        f"{name:30} {engine:>10.2f} {unit} {target:>7.0f} {unit} "
        f"{plain:>12.1f} {unit} {speedup:>9.1f}x"
    )


def print_table(figures: dict[str, Any]) -> None:
    print(f"{'figure':30} {'engine':>13} {'target':>10} {'plain Python':>15} {'speedup':>10}")
    for name, target in TARGETS_MS.items():
        row = figures[name]
        print(
            _row(
                name,
                row["engine_ms"],
                target,
                row["plain_python_ms"],
                speedup=row["speedup"],
                unit="ms",
            )
        )
    update = figures["update_per_pod_event"]
    engine_us = max(update["engine_create_us"], update["engine_delete_us"])
    rebuild_us = update["plain_python_rebuild_us"]
    print(
        _row(
            "update_per_pod_event",
            engine_us,
            20,
            rebuild_us,
            speedup=update["speedup"],
            unit="us",
        )
    )


def print_rules(figures: dict[str, Any]) -> None:
    print(f"{'inter-pod figure':38} {'median':>13} {'p90':>10} {'goal':>10}")
    for name, target in RULE_GOALS_MS.items():
        row = figures[name]
        verdict = "met" if row["goal_met"] else "MISSED"
        print(
            f"{name:38} {row['engine_ms']:>10.2f} ms {row['engine_p90_ms']:>7.2f} ms"
            f" {target:>7.0f} ms  {verdict}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--estimates-only",
        action="store_true",
        help="measure only the start-time estimate figures; keep the others in the results",
    )
    parser.add_argument(
        "--quiet-cycle-only",
        action="store_true",
        help="measure only the cycle with little to decide; keep the others in the results",
    )
    parser.add_argument(
        "--rules-only",
        action="store_true",
        help="measure only the inter-pod figures; keep the others already in the results",
    )
    args = parser.parse_args(argv)
    load = os.getloadavg()
    figures: dict[str, Any]
    if args.estimates_only:
        figures = json.loads(RESULTS.read_text())
        measure_estimates(base_state()[0], figures)
        figures["estimates"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
        print(json.dumps(figures["estimates"], indent=2))
        return 0
    if args.quiet_cycle_only:
        figures = json.loads(RESULTS.read_text())
        measure_quiet_cycle(figures)
        RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
        print(json.dumps(figures["cycle_quiet_admitted_gangs"], indent=2))
        return 0
    figures = json.loads(RESULTS.read_text()) if args.rules_only else measure_all()
    measure_rules(figures)
    for name, target in RULE_GOALS_MS.items():
        figures[name]["target_ms"] = target
        figures[name]["goal_met"] = figures[name]["engine_ms"] <= target
    figures["inter_pod_snapshot"]["load_average_at_start"] = [round(x, 2) for x in load]
    figures["machine"] = machine()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    print_table(figures)
    print_rules(figures)
    return 0


def measure_all() -> dict[str, Any]:
    """Every figure but the inter-pod ones, on the cluster without app labels."""
    started = time.perf_counter()
    state, objects = base_state()
    build = time.perf_counter() - started
    plain = PlainCluster(objects)
    figures: dict[str, Any] = {
        "snapshot": {"nodes": NODES, "bound_pods": len(state.pods), "build_s": round(build, 2)},
    }
    measure_gang(state, plain, None, figures, "gang_64_pods_no_topology")
    measure_gang(state, plain, ZONE, figures, "gang_64_pods_zone_key")
    measure_gang(state, plain, "rack", figures, "gang_64_pods_rack_key")
    measure_queue(state, plain, figures, "cycle_1000_gangs", (0,))
    measure_queue(state, plain, figures, "cycle_1000_gangs_preempting", (0, 0, 50, 200))
    measure_updates(state, plain, figures)
    measure_estimates(state, figures)
    measure_preemption(figures)
    measure_quiet_cycle(figures)
    for name, target in TARGETS_MS.items():
        figures[name]["target_ms"] = target
    figures["update_per_pod_event"]["target_us"] = 20.0
    return figures


if __name__ == "__main__":
    sys.exit(main())
