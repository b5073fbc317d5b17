"""Kept verdicts decide exactly as deciding every gang in every cycle (hypothesis).

Two twins take the same random sequence of events (gangs arriving and leaving, pods
binding and finishing, nodes added, removed, relabelled, tainted and resized,
priorities changed, repelling pods, the clock moving past starvation and the safety
flush) and each runs a cycle after each event: one keeps verdicts (`cycle.memo`), the
other decides every gang every cycle. Every cycle's admissions, growths, verdicts and
plan (statuses, events, releases, evictions) must be the same; the plan is then
carried out on both, as `muster simulate` carries it out. The twin keeping verdicts
leaves out of its plan the statuses of waiting gangs that already say what it would
write (a status nothing writes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.api.keys import GroupKey, PodKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import NOTHING_CARRIED, Carried, CycleResult
from muster.simulation.cluster import SimulatedCluster
from tests.unit.scheduler.builders import Obj, node, pod, pod_group, taint
from tests.unit.scheduler.cycle.test_engine_properties import SHAPES, members

START = 1_767_225_605.0  # five seconds after the gangs were created
# CI replays a fixed set of examples: thousands there, fewer on each developer run.
EXAMPLES = 2000 if os.environ.get("MUSTER_HYPOTHESIS_PROFILE") == "ci" else 150
REPEL = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "zone"}
        ]
    }
}


@dataclass
class Twin:
    """One cluster, with or without kept verdicts, and what its last cycle handed on."""

    config: EngineConfig
    cluster: SimulatedCluster = field(default_factory=SimulatedCluster)
    carried: Carried = NOTHING_CARRIED

    def apply(self, kind: str, obj: Obj) -> None:
        namespace = obj["metadata"].get("namespace", "default")
        name = obj["metadata"]["name"]
        if kind == "Pod":
            self.cluster.pods[PodKey(namespace, name)] = obj
        elif kind == "PodGroup":
            self.cluster.pod_groups[GroupKey(namespace, name)] = obj
        self.cluster.state.apply(kind, obj)

    def delete(self, kind: str, name: str) -> None:
        if kind == "Pod":
            self.cluster.pods.pop(PodKey("default", name), None)
        elif kind == "PodGroup":
            self.cluster.pod_groups.pop(GroupKey("default", name), None)
        self.cluster.state.delete(kind, "" if kind == "Node" else "default", name)

    def cycle(self, now: float) -> CycleResult:
        result = schedule(self.cluster.state, now=now, config=self.config, carried=self.carried)
        self.carried = result.carried
        self.cluster.execute(result.plan)
        return result


class World:
    """The events, told to both twins alike."""

    def __init__(self, config: EngineConfig) -> None:
        self.twins = (Twin(config), Twin(replace(config, keep_verdicts=False)))
        self.now = START
        self.nodes: dict[str, Obj] = {}
        self.gangs: dict[str, int] = {}  # name -> members made
        self.made = 0

    def apply(self, kind: str, obj: Obj) -> None:
        for twin in self.twins:
            twin.apply(kind, obj)

    def delete(self, kind: str, name: str) -> None:
        for twin in self.twins:
            twin.delete(kind, name)

    def cycle(self) -> None:
        kept, every = (twin.cycle(self.now) for twin in self.twins)
        assert (kept.admissions, kept.growths, kept.verdicts) == (
            every.admissions,
            every.growths,
            every.verdicts,
        )
        plan = replace(kept.plan, statuses={}, versions={})
        assert plan == replace(every.plan, statuses={}, versions={})
        # A status is left out only where nothing is written: the group has no step.
        stepped = {step.group for step in every.plan.steps}
        for key, status in every.plan.statuses.items():
            assert kept.plan.statuses.get(key, status) == status
            assert key in kept.plan.statuses or key not in stepped

    def manifests(self, kind: str) -> dict[Any, Obj]:
        cluster = self.twins[1].cluster
        return dict(cluster.pods if kind == "Pod" else cluster.pod_groups)


def _name(world: World, prefix: str) -> str:
    world.made += 1
    return f"{prefix}{world.made}"


def add_node(world: World, data: st.DataObject) -> None:
    name = _name(world, "n")
    labels = {"zone": data.draw(st.sampled_from("ab"))}
    if data.draw(st.booleans()):
        labels["pool"] = "reserved"
    taints = [taint("gpu")] if data.draw(st.integers(0, 4)) == 0 else []
    world.nodes[name] = node(
        name,
        cpu=str(data.draw(st.integers(2, 12))),
        gpu=str(data.draw(st.integers(0, 4))),
        labels=labels,
        taints=taints,
    )
    world.apply("Node", world.nodes[name])


def change_node(world: World, data: st.DataObject) -> None:
    if not world.nodes:
        return
    name = data.draw(st.sampled_from(sorted(world.nodes)))
    what = data.draw(st.sampled_from(["remove", "relabel", "taint", "resize", "cordon"]))
    if what == "remove":
        del world.nodes[name]
        world.delete("Node", name)
        return
    changed: Obj = {**world.nodes[name], "metadata": dict(world.nodes[name]["metadata"])}
    if what == "relabel":
        labels = dict(changed["metadata"]["labels"])
        labels["zone"] = data.draw(st.sampled_from("ab"))
        if labels.pop("pool", None) is None:
            labels["pool"] = "reserved"
        changed["metadata"]["labels"] = labels
    elif what == "taint":
        taints = changed["spec"]["taints"]
        changed["spec"] = {**changed["spec"], "taints": [] if taints else [taint("gpu")]}
    elif what == "cordon":
        changed["spec"] = {**changed["spec"], "unschedulable": not changed["spec"]["unschedulable"]}
    else:
        cpu, gpu = str(data.draw(st.integers(2, 12))), str(data.draw(st.integers(0, 4)))
        resized = node(name, cpu=cpu, gpu=gpu)["status"]
        changed["status"] = resized
    world.nodes[name] = changed
    world.apply("Node", changed)


def add_gang(world: World, data: st.DataObject) -> None:
    name = _name(world, "g")
    shapes = data.draw(st.lists(st.integers(0, len(SHAPES) - 1), min_size=1, max_size=4))
    priority = data.draw(st.integers(0, 3))
    spec: Obj = {}
    if data.draw(st.integers(0, 2)) == 0:
        spec["nodeSelector"] = {"pool": "reserved"}
    if data.draw(st.integers(0, 3)) == 0:
        spec["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    if data.draw(st.integers(0, 5)) == 0:
        spec["affinity"] = REPEL
    labels = {"app": "solo"} if data.draw(st.integers(0, 4)) == 0 else {}
    group = pod_group(
        name,
        min_count=data.draw(st.integers(1, len(shapes))),
        topology_key="zone" if data.draw(st.integers(0, 3)) == 0 else None,
        priority=priority,
        preemption_policy=data.draw(st.sampled_from([None, "Never"])),
        created="2026-01-01T00:00:00Z",
    )
    world.apply("PodGroup", group)
    for member in members(name, shapes, priority, spec=spec, labels=labels):
        world.apply("Pod", member)
    world.gangs[name] = len(shapes)


def add_bound_pod(world: World, data: st.DataObject) -> None:
    if not world.nodes:
        return
    on = data.draw(st.sampled_from(sorted(world.nodes)))
    cpu, gpu = SHAPES[data.draw(st.integers(0, len(SHAPES) - 1))]
    repels = data.draw(st.integers(0, 4)) == 0
    world.apply(
        "Pod",
        pod(
            _name(world, "p"),
            cpu=str(cpu),
            gpu=str(gpu),
            node_name=on,
            priority=data.draw(st.integers(0, 3)),
            phase="Running",
            spec={"affinity": REPEL} if repels else None,
            labels={"app": "solo"} if data.draw(st.booleans()) else None,
        ),
    )


def finish_pod(world: World, data: st.DataObject) -> None:
    bound = sorted(
        key.name for key, obj in world.manifests("Pod").items() if obj["spec"].get("nodeName")
    )
    if bound:
        world.delete("Pod", data.draw(st.sampled_from(bound)))


def change_gang(world: World, data: st.DataObject) -> None:
    groups = world.manifests("PodGroup")
    if not groups:
        return
    key = data.draw(st.sampled_from(sorted(groups)))
    what = data.draw(st.sampled_from(["priority", "delete", "member"]))
    if what == "delete":
        world.delete("PodGroup", key.name)
        for pod_key in sorted(world.manifests("Pod")):
            if pod_key.name.startswith(f"{key.name}-"):
                world.delete("Pod", pod_key.name)
        return
    if what == "member":
        made = world.gangs.get(key.name, 0)
        world.gangs[key.name] = made + 1
        world.apply("Pod", pod(f"{key.name}-{made}", group=key.name, cpu="1"))
        return
    group = groups[key]
    spec = {**group["spec"], "priority": data.draw(st.integers(0, 3))}
    world.apply("PodGroup", {**group, "spec": spec})


def tick(world: World, data: st.DataObject) -> None:
    world.now += data.draw(st.sampled_from([1.0, 30.0, 200.0, 400.0]))


EVENTS = [add_node, change_node, add_gang, add_bound_pod, finish_pod, change_gang, tick, tick]


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.data(), st.sampled_from([10**9, 100.0]))
def test_kept_verdicts_decide_as_every_gang_decided_every_cycle(
    data: st.DataObject, starvation: float
) -> None:
    world = World(EngineConfig(starvation_seconds=starvation))
    for _ in range(data.draw(st.integers(1, 4))):
        add_node(world, data)
    for _ in range(data.draw(st.integers(1, 4))):
        add_gang(world, data)
    world.cycle()
    for _ in range(data.draw(st.integers(1, 14))):
        event = data.draw(st.sampled_from(EVENTS))
        event(world, data)
        world.cycle()
        world.cycle()  # the twin keeping verdicts now gives kept ones
