"""The three-level benchmark's cluster, its burst, and what a placement is worth.

The cluster (`Shape`): zones of blocks of racks of GPU nodes, every level a node
label (`LEVELS`, widest first; racks and blocks named uniquely in the cluster). The
burst (`make_workload`): gang Jobs that all prefer one rack, some small enough for a
rack, some only for a block. Two things are judged from the pods and nodes once the
burst has settled (`placement`):

- how close each gang sits: the narrowest level at which all its pods share one
  domain, against the narrowest level at which it could have (one domain of that
  level, empty, has room for it);
- how fragmented the cluster is left: the GPUs that are still free in racks with
  nothing on them, which a later rack-sized gang can use; GPUs free in racks partly
  used are lost to it.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hack.nodes import gpu_node, to_yaml

from bench.e2e.workload import GPU, HOSTNAME_KEY, JOB_NAME_LABEL, ZONE_KEY, GangJob
from muster.operator.execution.pods import NODE_NAME_FIELD
from muster.scheduler.objects.quantity import parse_quantity

BLOCK_KEY = "example.com/block"
RACK_KEY = "example.com/rack"
LEVELS = (ZONE_KEY, BLOCK_KEY, RACK_KEY, HOSTNAME_KEY)
# The levels a gang's place is judged at, narrowest first: the preferred one and wider.
JUDGED = (RACK_KEY, BLOCK_KEY, ZONE_KEY)
ANYWHERE = "wider"  # a gang whose pods span zones
NOT_BOUND = "not all bound"
TERMINAL = ("Succeeded", "Failed")
REQUIRED_AFFINITY = "requiredDuringSchedulingIgnoredDuringExecution"

# Gang shapes (pods, GPUs a pod) of one round of the burst: six fit a rack of 4 x 8
# GPUs, two only a block; 172 GPUs a round, two rounds 67% of the default Shape's.
GANG_MIX: tuple[tuple[int, int], ...] = (
    (2, 4),
    (4, 2),
    (2, 8),
    (4, 4),
    (6, 2),
    (8, 4),
    (5, 8),
    (10, 4),
)


@dataclass(frozen=True, slots=True)
class Shape:
    """How many of each level sit in the one above, and the GPUs of a node."""

    zones: int = 2
    blocks_per_zone: int = 2
    racks_per_block: int = 4
    nodes_per_rack: int = 4
    gpus_per_node: int = 8

    @property
    def nodes(self) -> int:
        return self.zones * self.blocks_per_zone * self.racks_per_block * self.nodes_per_rack

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


def make_nodes(shape: Shape) -> list[dict[str, Any]]:
    """The KWOK nodes of ``shape``, labelled with every level."""
    made = []
    for index in range(shape.nodes):
        host = index % shape.nodes_per_rack
        rack_index = index // shape.nodes_per_rack
        block_index = rack_index // shape.racks_per_block
        zone = f"zone-{chr(ord('a') + block_index // shape.blocks_per_zone)}"
        block = f"{zone}-b{block_index % shape.blocks_per_zone}"
        rack = f"{block}-r{rack_index % shape.racks_per_block}"
        labels = {BLOCK_KEY: block, RACK_KEY: rack}
        name = f"gpu-{rack.removeprefix('zone-')}-n{host}"
        made.append(gpu_node(name, zone=zone, rack=rack, gpus=shape.gpus_per_node, labels=labels))
    return made


def nodes_yaml(shape: Shape) -> str:
    """``make_nodes`` as the YAML stream hack/cluster.py loads."""
    return "".join(f"---\n{to_yaml(node)}\n" for node in make_nodes(shape))


def make_workload(*, rounds: int, seed: int, prefix: str = "gang") -> list[GangJob]:
    """``rounds`` of GANG_MIX, shuffled; every gang prefers one rack. The same
    arguments give the same Jobs, so the modes are compared on the same demand;
    ``prefix`` keeps the names of two such bursts apart."""
    shapes = list(GANG_MIX * rounds)
    random.Random(seed).shuffle(shapes)
    width = len(str(max(len(shapes) - 1, 0)))
    return [
        GangJob(
            name=f"{prefix}-{index:0{width}d}",
            size=size,
            gpus_per_pod=gpus,
            topology_key=None,
            preferred_key=RACK_KEY,
        )
        for index, (size, gpus) in enumerate(shapes)
    ]


def node_labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = node["metadata"].get("labels") or {}
    return labels


def _gpus(resources: Mapping[str, Any]) -> int:
    return int(parse_quantity(str(resources.get(GPU, "0"))))


def narrowest_feasible(
    job: GangJob, nodes: Sequence[Mapping[str, Any]], used: Mapping[str, int] | None = None
) -> str:
    """The narrowest judged level one of whose domains takes the whole gang: empty,
    or with ``used`` GPUs of each node (by name) taken by others."""
    taken = used or {}
    for level in JUDGED:
        room: Counter[str] = Counter()
        for node in nodes:
            free = _gpus(node["status"]["allocatable"]) - taken.get(node["metadata"]["name"], 0)
            room[node_labels(node).get(level, "")] += max(free, 0) // job.gpus_per_pod
        if any(pods >= job.size for domain, pods in room.items() if domain):
            return level
    return ANYWHERE


def placed_level(job: GangJob, hosts: Sequence[Mapping[str, str]]) -> str:
    """The narrowest judged level at which the gang's pods (their nodes' labels) share
    one domain; NOT_BOUND unless every pod of it is bound."""
    if len(hosts) < job.size:
        return NOT_BOUND
    for level in JUDGED:
        if len({labels.get(level) for labels in hosts}) == 1:
            return level
    return ANYWHERE


@dataclass(frozen=True, slots=True)
class Held:
    """GPUs a live pod of a Job holds on a node."""

    job: str
    node: str
    gpus: int


def holding(pods: Iterable[Mapping[str, Any]], *, pinned: bool = False) -> list[Held]:
    """The pods bound and not finished, each with the GPUs it holds where; with
    ``pinned``, also those not bound yet whose node is already decided."""
    held = []
    for pod in pods:
        spec = pod.get("spec", {})
        node = spec.get("nodeName") or (pinned_node(spec) if pinned else None)
        if not node or pod.get("status", {}).get("phase") in TERMINAL:
            continue
        gpus = sum(
            _gpus(container.get("resources", {}).get("requests", {}))
            for container in pod["spec"].get("containers", [])
        )
        held.append(Held(pod["metadata"].get("labels", {}).get(JOB_NAME_LABEL, ""), node, gpus))
    return held


def pinned_node(spec: Mapping[str, Any]) -> str | None:
    """The one node a pod not bound yet may go to, as its scheduler wrote it: Kueue's
    topology-aware scheduling in a hostname nodeSelector, Muster in a required node
    affinity on the node's name."""
    host = (spec.get("nodeSelector") or {}).get(HOSTNAME_KEY)
    if host:
        return str(host)
    required = (spec.get("affinity") or {}).get("nodeAffinity", {}).get(REQUIRED_AFFINITY) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            values = field.get("values") or []
            if (field.get("key"), field.get("operator"), len(values)) == (NODE_NAME_FIELD, "In", 1):
                return str(values[0])
    return None


def share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def placement(
    jobs: Sequence[GangJob],
    pods: Iterable[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Where the gangs sit and what is left free, from the cluster's pods and nodes."""
    labels = {node["metadata"]["name"]: node_labels(node) for node in nodes}
    used: Counter[str] = Counter()
    hosts: defaultdict[str, list[Mapping[str, str]]] = defaultdict(list)
    for held in holding(pods):
        used[held.node] += held.gpus
        hosts[held.job].append(labels[held.node])
    feasible = {job.name: narrowest_feasible(job, nodes) for job in jobs}
    placed = {job.name: placed_level(job, hosts[job.name]) for job in jobs}
    figures = judge(feasible, placed)
    # Which domain each gang got, to tell one run's choices from another's.
    figures["domains"] = {
        name: f"{level}={hosts[name][0][level]}" if level in JUDGED else level
        for name, level in placed.items()
    }
    return figures | fragmentation(nodes, used)


def _rank(level: str) -> int:
    """Narrowest first: the judged levels, then anywhere, then not bound at all."""
    return (*JUDGED, ANYWHERE, NOT_BOUND).index(level)


def judge(feasible: Mapping[str, str], placed: Mapping[str, str]) -> dict[str, Any]:
    """How close the gangs sit against how close they could have: the level each
    could have had (`feasible`) and the one it got (`placed`), by gang name."""
    figures: dict[str, Any] = {"gangs": len(placed), "placed_at": dict(Counter(placed.values()))}
    for level, name in ((RACK_KEY, "one_rack"), (BLOCK_KEY, "one_block")):
        could = [gang for gang, fits in feasible.items() if _rank(fits) <= _rank(level)]
        at = [gang for gang in could if _rank(placed[gang]) <= _rank(level)]
        figures[name] = {
            "could": len(could),
            "placed": len(at),
            "share": share(len(at), len(could)),
        }
    narrowest = sum(placed[gang] == level for gang, level in feasible.items())
    figures["at_narrowest_feasible"] = {
        "placed": narrowest,
        "share": share(narrowest, len(placed)),
    }
    figures["not_all_bound"] = sum(level == NOT_BOUND for level in placed.values())
    return figures


def fragmentation(nodes: Sequence[Mapping[str, Any]], used: Mapping[str, int]) -> dict[str, int]:
    """GPUs free in all, and in racks none of whose nodes runs a GPU pod."""
    free: Counter[str] = Counter()
    busy: set[str] = set()
    total = 0
    for node in nodes:
        name, rack = node["metadata"]["name"], node_labels(node)[RACK_KEY]
        left = _gpus(node["status"]["allocatable"]) - used.get(name, 0)
        total += left
        free[rack] += left
        if used.get(name, 0):
            busy.add(rack)
    whole = [rack for rack in free if rack not in busy]
    return {
        "free_gpus": total,
        "free_gpus_in_free_racks": sum(free[rack] for rack in whole),
        "free_racks": len(whole),
        "racks": len(free),
    }
