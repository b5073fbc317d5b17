"""The engine benchmark's synthetic cluster: 5,000 nodes, 50,000 bound pods, and the
waiting gangs, as the objects the operator's informers would deliver."""

from __future__ import annotations

import random
import weakref
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from muster.api.constants import GANG_GATE, POD_GROUP_LABEL
from muster.api.keys import GroupKey
from muster.api.times import rfc3339
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.decisions.results import NOTHING_CARRIED, Carried, CycleResult

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
