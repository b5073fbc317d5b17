"""Muster's plans against kube-scheduler's verdicts, on random gangs with inter-pod rules.

Seeded random gang Jobs mix hostname and zone anti-affinity, zone spread, required
affinity (to anchor pods, or of a gang to itself), nodeSelectors, taints and
tolerations, PodGroup zone constraints, preferred topology levels (one block, or one
node) and slices (every N consecutive workers of an Indexed Job on one node, or in one
block), on twelve simulated nodes in three zones of two blocks.
They run in batches; in each, every gang Muster releases must bind exactly where its
plan (`status.plan`) put it, with no FailedScheduling event for any pinned pod, no
rollback, and no partially bound gang (the gang observer watches throughout). The final
placement is also checked against the rules directly, because kube-scheduler cannot
check zone spread on pinned pods (it measures skew over the nodes the pod's own
node affinity admits: with the pin to the node's name, that is one node, one domain). Gangs Muster
holds back are recorded, and each is confirmed infeasible by the unit tests'
independent checker (`confirm_infeasible`).
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import pytest
from devtools.factories import GPU, NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import GROUP_LABEL, POD_GROUPS, is_gated
from tests.unit.scheduler.interpod_checker import find_order

pytestmark = pytest.mark.e2e

SEED = 20370
GANGS = 50
BATCH = 10
ZONES = 3
NODES_PER_ZONE = 4
GPUS_PER_NODE = 4
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DISK = "e2e.muster.dev/disk"
DEDICATED = "e2e.muster.dev/dedicated"
ANCHOR = "e2e.muster.dev/anchor"
BLOCK = "e2e.muster.dev/block"
LEVELS = (ZONE, BLOCK, HOSTNAME)
PREFERRED_ANNOTATION = "scheduling.muster.dev/topology-preferred"
SLICE_ANNOTATION = "scheduling.muster.dev/topology-slice"
SLICE_SIZE_ANNOTATION = "scheduling.muster.dev/topology-slice-size"
INDEX = "batch.kubernetes.io/job-completion-index"
TOPOLOGY_ANNOTATION = "scheduling.muster.dev/topology-key"
MIN_COUNT_ANNOTATION = "scheduling.muster.dev/min-count"


# ---- the cluster ----------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """The nodes: zone, labels and taints of each, and where the anchor pods run."""

    zone_of: dict[str, str]
    labels_of: dict[str, dict[str, str]]
    dedicated: frozenset[str]
    anchored: frozenset[str]  # nodes with an anchor pod

    def zones(self) -> set[str]:
        return set(self.zone_of.values())


def build_layout(kubectl: Kubectl, namespace: str, pool: NodePool) -> Layout:
    """3 zones x 2 blocks x 2 nodes of 4 GPUs; 2 SSD nodes and 1 dedicated (tainted)
    node per zone; anchor pods on one node of the first zone and one of the second."""
    zone_of: dict[str, str] = {}
    labels_of: dict[str, dict[str, str]] = {}
    dedicated: set[str] = set()
    for z in range(ZONES):
        zone = f"{pool.name}-z{z}"
        for j in range(NODES_PER_ZONE):
            labels = {DISK: "ssd"} if j % 2 == 0 else {}
            labels[BLOCK] = f"{zone}-b{j // 2}"
            taints = (
                [{"key": DEDICATED, "value": "infer", "effect": "NoSchedule"}] if j == 3 else []
            )
            node = pool.add(gpus=GPUS_PER_NODE, zone=zone, labels=labels, taints=taints)
            zone_of[node] = zone
            labels_of[node] = {**labels, HOSTNAME: node, ZONE: zone}
            if taints:
                dedicated.add(node)
    nodes = list(zone_of)
    anchored = {nodes[1], nodes[NODES_PER_ZONE + 2]}
    for i, node in enumerate(sorted(anchored)):
        kubectl.apply(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"anchor-{i}", "labels": {ANCHOR: "db"}},
                "spec": {
                    "nodeName": node,
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": "db", "image": "db"}],
                },
            },
            namespace,
        )
    wait_until(
        "the anchor pods to run",
        lambda: all(
            kubectl.json("get", "pod", f"anchor-{i}", "-n", namespace)
            .get("status", {})
            .get("phase")
            == "Running"
            for i in range(len(anchored))
        ),
    )
    return Layout(zone_of, labels_of, frozenset(dedicated), frozenset(anchored))


# ---- the gangs --------------------------------------------------------------------------


@dataclass(frozen=True)
class Gang:
    name: str
    workers: int
    gpus: int
    min_count: int
    host_anti: bool  # one pod per node
    zone_anti: bool  # one pod per zone
    spread_skew: int | None  # zone spread, DoNotSchedule, this maxSkew
    anchor_key: str | None  # must share this domain with an anchor pod
    together: bool  # required affinity to itself by zone: all in one zone
    ssd: bool  # nodeSelector disk=ssd
    tolerates: bool  # tolerates the dedicated taint
    one_zone: bool  # PodGroup zone constraint
    preferred: str | None = None  # the narrowest topology level it prefers
    slicing: tuple[str, int] | None = None  # slices: level and size (an Indexed Job)

    def features(self) -> str:
        parts = [f"{self.workers}x{self.gpus}gpu"]
        if self.min_count != self.workers:
            parts.append(f"min{self.min_count}")
        for flag, text in (
            (self.host_anti, "host-anti"),
            (self.zone_anti, "zone-anti"),
            (self.together, "together"),
            (self.ssd, "ssd"),
            (self.tolerates, "tolerates"),
            (self.one_zone, "one-zone"),
        ):
            if flag:
                parts.append(text)
        if self.spread_skew is not None:
            parts.append(f"spread{self.spread_skew}")
        if self.anchor_key is not None:
            parts.append(f"anchor-{'host' if self.anchor_key == HOSTNAME else 'zone'}")
        if self.preferred is not None:
            parts.append(f"prefers-{_level_word(self.preferred)}")
        if self.slicing is not None:
            parts.append(f"slices-{self.slicing[1]}-per-{_level_word(self.slicing[0])}")
        return " ".join(parts)

    def job(self, pool: NodePool) -> dict[str, Any]:
        own = {"labelSelector": {"matchLabels": {"app": self.name}}}
        anti = [{**own, "topologyKey": HOSTNAME}] if self.host_anti else []
        anti += [{**own, "topologyKey": ZONE}] if self.zone_anti else []
        near = [{**own, "topologyKey": ZONE}] if self.together else []
        if self.anchor_key is not None:
            near.append(
                {"labelSelector": {"matchLabels": {ANCHOR: "db"}}, "topologyKey": self.anchor_key}
            )
        affinity: dict[str, Any] = {}
        if anti:
            affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
        if near:
            affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": near}
        spread = (
            [
                {
                    "maxSkew": self.spread_skew,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    **own,
                }
            ]
            if self.spread_skew is not None
            else None
        )
        annotations = {}
        if self.one_zone:
            annotations[TOPOLOGY_ANNOTATION] = ZONE
        if self.min_count != self.workers:
            annotations[MIN_COUNT_ANNOTATION] = str(self.min_count)
        if self.preferred is not None:
            annotations[PREFERRED_ANNOTATION] = self.preferred
        if self.slicing is not None:
            annotations[SLICE_ANNOTATION] = self.slicing[0]
            annotations[SLICE_SIZE_ANNOTATION] = str(self.slicing[1])
        job = gang_job(
            self.name,
            pool,
            workers=self.workers,
            gpus=self.gpus,
            annotations=annotations,
            pod_labels={"app": self.name},
            node_selector={DISK: "ssd"} if self.ssd else None,
            tolerations=(
                [{"key": DEDICATED, "operator": "Equal", "value": "infer"}]
                if self.tolerates
                else None
            ),
            affinity=affinity or None,
            topology_spread=spread,
        )
        if self.slicing is not None:
            job["spec"]["completionMode"] = "Indexed"
        return job


def _level_word(key: str) -> str:
    return {ZONE: "zone", BLOCK: "block", HOSTNAME: "node"}[key]


def random_gangs(seed: int, count: int) -> list[Gang]:
    """The gangs; their preferred levels and slices are drawn apart (`levels`), so the
    rest of each gang is as the seed always made it."""
    rng = random.Random(seed)
    levels = random.Random(seed + 1)
    gangs = []
    for i in range(count):
        workers = rng.randint(2, 5)
        elastic = workers > 2 and rng.random() < 0.15
        gangs.append(
            Gang(
                name=f"g{i:02d}",
                workers=workers,
                gpus=rng.choice((1, 1, 2)),
                min_count=workers - 1 if elastic else workers,
                host_anti=rng.random() < 0.35,
                zone_anti=rng.random() < 0.12,
                spread_skew=rng.choice((1, 1, 2)) if rng.random() < 0.25 else None,
                anchor_key=rng.choice((HOSTNAME, ZONE)) if rng.random() < 0.2 else None,
                together=rng.random() < 0.12,
                ssd=rng.random() < 0.3,
                tolerates=rng.random() < 0.3,
                one_zone=rng.random() < 0.25,
            )
        )
        gangs[-1] = with_levels(gangs[-1], levels)
    return gangs


def with_levels(gang: Gang, rng: random.Random) -> Gang:
    """The gang with, sometimes, a preferred level (one block or one node) and slices
    (of a size dividing minCount, per node or per block, no wider than the preference)."""
    preferred = rng.choice((BLOCK, HOSTNAME)) if rng.random() < 0.35 else None
    sizes = [size for size in range(2, gang.min_count + 1) if gang.min_count % size == 0]
    slicing = None
    if sizes and rng.random() < 0.35:
        key = HOSTNAME if preferred == HOSTNAME else rng.choice((BLOCK, HOSTNAME))
        slicing = (key, rng.choice(sizes))
    return replace(gang, preferred=preferred, slicing=slicing)


# ---- what the placement must satisfy, checked directly --------------------------------


def placement_problems(
    gang: Gang, placement: dict[str, str], layout: Layout, indexes: dict[str, int]
) -> list[str]:
    """The gang's rules, on the nodes its bound pods are on (pod -> node); `indexes`:
    each pod's completion index (for slices)."""
    problems = slice_problems(gang, placement, layout, indexes)
    nodes = list(placement.values())
    zones = [layout.zone_of[node] for node in nodes]
    for pod, node in placement.items():
        labels = layout.labels_of[node]
        if gang.ssd and labels.get(DISK) != "ssd":
            problems.append(f"{pod} on {node}, which has no SSD")
        if node in layout.dedicated and not gang.tolerates:
            problems.append(f"{pod} on the dedicated node {node} without tolerating it")
        if gang.anchor_key == HOSTNAME and node not in layout.anchored:
            problems.append(f"{pod} on {node}, which has no anchor pod")
        anchor_zones = {layout.zone_of[n] for n in layout.anchored}
        if gang.anchor_key == ZONE and layout.zone_of[node] not in anchor_zones:
            problems.append(f"{pod} in zone {layout.zone_of[node]}, which has no anchor pod")
    if gang.host_anti and len(set(nodes)) != len(nodes):
        problems.append(f"anti-affine pods share nodes: {sorted(nodes)}")
    if gang.zone_anti and len(set(zones)) != len(zones):
        problems.append(f"zone-anti-affine pods share zones: {sorted(zones)}")
    if (gang.together or gang.one_zone) and len(set(zones)) > 1:
        problems.append(f"pods meant for one zone are in {sorted(set(zones))}")
    skew = skew_problem(gang, zones, layout)
    return problems if skew is None else [*problems, skew]


def skew_problem(gang: Gang, zones: list[str], layout: Layout) -> str | None:
    """The gang's zone spread, as written, over the zones its pods are in. Every zone
    has nodes the pods' nodeSelector admits (taints are ignored by default in the
    skew), so every zone is a domain."""
    if gang.spread_skew is None or not zones:
        return None
    per_zone = Counter(zones)
    counts = [per_zone.get(zone, 0) for zone in sorted(layout.zones())]
    if max(counts) - min(counts) > gang.spread_skew:
        return f"zone skew {max(counts) - min(counts)} > {gang.spread_skew}: {counts}"
    return None


def slice_problems(
    gang: Gang, placement: dict[str, str], layout: Layout, indexes: dict[str, int]
) -> list[str]:
    """Each slice of the gang's bound pods (by completion index) on one node or block."""
    if gang.slicing is None:
        return []
    key, size = gang.slicing
    domains: dict[int, set[str]] = {}
    for pod, node in placement.items():
        domains.setdefault(indexes[pod] // size, set()).add(layout.labels_of[node][key])
    return [
        f"slice {index} ({size} per {_level_word(key)}) spans {sorted(found)}"
        for index, found in sorted(domains.items())
        if len(found) > 1
    ]


def whole_slices(gang: Gang, chosen: tuple[str, ...], layout: Layout) -> bool:
    """Whether minCount pods on these nodes can be cut into the gang's slices, each on
    one node or in one block: every domain holds whole slices."""
    if gang.slicing is None:
        return True
    key, size = gang.slicing
    per_domain = Counter(layout.labels_of[name][key] for name in chosen)
    return all(count % size == 0 for count in per_domain.values())


def confirm_infeasible(
    gang: Gang,
    group: dict[str, Any],
    pods: list[dict[str, Any]],
    layout: Layout,
    bound: list[dict[str, Any]],
) -> None:
    """A gang Muster holds back (Unschedulable): confirm that holding it was right.

    The gang is wholly gated, with no pod bound; and a brute force over the nodes, judged
    by the unit tests' independent reading of kube-scheduler's filters (GPUs, taints,
    selector, the PodGroup's zone, then inter-pod rules by `find_order`), finds no
    placement of minCount of its pods beside the pods bound in the namespace, in whole
    slices for a sliced gang (its pods are alike: which goes where is immaterial) and
    within its zone spread as written (see `placement_problems`). Pods that
    have finished since are counted as running: they were when Muster decided.
    """
    assert pods, f"{gang.name} has no pods"
    assert all(is_gated(pod) for pod in pods), f"{gang.name} is held but not wholly gated"
    assert not any(pod["spec"].get("nodeName") for pod in pods), f"{gang.name} is held, bound"
    nodes = node_objects(layout)
    running = [{**pod, "status": {"phase": "Running"}} for pod in bound]
    free = {name: GPUS_PER_NODE for name in layout.zone_of}
    for pod in bound:
        free[pod["spec"]["nodeName"]] -= gpus_of(pod)
    member = pods[0]
    usable = [
        name
        for name in sorted(layout.zone_of)
        if free[name] >= gang.gpus
        and (not gang.ssd or layout.labels_of[name].get(DISK) == "ssd")
        and (gang.tolerates or name not in layout.dedicated)
    ]
    for chosen in itertools.combinations_with_replacement(usable, gang.min_count):
        if gang.one_zone and len({layout.zone_of[name] for name in chosen}) > 1:
            continue
        if not whole_slices(gang, chosen, layout):
            continue
        if skew_problem(gang, [layout.zone_of[name] for name in chosen], layout) is not None:
            continue  # kube-scheduler cannot judge it on pinned pods; the plan must
        if any(Counter(chosen)[name] * gang.gpus > free[name] for name in set(chosen)):
            continue
        planned = [
            {
                **member,
                "metadata": {**member["metadata"], "name": f"{gang.name}-try-{index}"},
                "spec": {**member["spec"], "nodeName": name, "schedulingGates": []},
            }
            for index, name in enumerate(chosen)
        ]
        search = find_order(nodes, [], planned, bound=running)
        assert not search.ok, (
            f"{gang.name} ({gang.features()}) held back, yet fits on {list(chosen)}: "
            f"{condition(group).get('message')}"
        )


def node_objects(layout: Layout) -> list[dict[str, Any]]:
    """The pool's nodes as the checker reads them: labels and taints."""
    taint = {"key": DEDICATED, "value": "infer", "effect": "NoSchedule"}
    return [
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": layout.labels_of[name]},
            "spec": {"taints": [taint] if name in layout.dedicated else []},
        }
        for name in sorted(layout.zone_of)
    ]


def gpus_of(pod: dict[str, Any]) -> int:
    return sum(
        int(((c.get("resources") or {}).get("requests") or {}).get(GPU, 0))
        for c in pod["spec"].get("containers") or []
    )


# ---- running a batch ----------------------------------------------------------------------


def condition(group: dict[str, Any]) -> dict[str, Any]:
    for item in group.get("status", {}).get("conditions") or []:
        if item["type"] == "PodGroupScheduled":
            return dict(item)
    return {}


def members(pods: list[dict[str, Any]], gang: str) -> list[dict[str, Any]]:
    return [
        pod
        for pod in pods
        if (pod["metadata"].get("labels") or {}).get(GROUP_LABEL) == gang
        and not pod["metadata"].get("deletionTimestamp")
    ]


@dataclass
class Snapshot:
    groups: dict[str, dict[str, Any]]
    pods: list[dict[str, Any]]

    @classmethod
    def take(cls, kubectl: Kubectl, namespace: str) -> Snapshot:
        groups = kubectl.json("get", POD_GROUPS, "-n", namespace)["items"]
        pods = kubectl.json("get", "pods", "-n", namespace)["items"]
        return cls({g["metadata"]["name"]: g for g in groups}, pods)

    def decided(self, gang: Gang) -> bool:
        """Held back, or admitted with every planned pod bound."""
        group = self.groups.get(gang.name)
        if group is None:
            return False
        reason = condition(group).get("reason")
        if reason == "Unschedulable":
            return True
        if reason != "Scheduled":
            return False
        plan = group.get("status", {}).get("plan") or {}
        on = {
            p["metadata"]["name"]: p["spec"].get("nodeName") for p in members(self.pods, gang.name)
        }
        return bool(plan) and all(on.get(pod) for pod in plan)

    def fingerprint(self, gangs: list[Gang]) -> str:
        state = {
            gang.name: (
                condition(self.groups.get(gang.name, {})).get("reason"),
                sorted(
                    (p["metadata"]["name"], p["spec"].get("nodeName") or "")
                    for p in members(self.pods, gang.name)
                ),
            )
            for gang in gangs
        }
        return json.dumps(state, sort_keys=True)


def settle(kubectl: Kubectl, namespace: str, gangs: list[Gang]) -> Snapshot:
    """Wait until every gang is decided, and stays so for two polls in a row."""
    last: list[str] = []
    latest: list[Snapshot] = []

    def settled() -> bool:
        refused = failed_scheduling(kubectl, namespace) + rolled_back(kubectl, namespace)
        if refused:
            raise AssertionError("released pods refused or rolled back:\n" + "\n".join(refused))
        snapshot = Snapshot.take(kubectl, namespace)
        latest[:] = [snapshot]
        if not all(snapshot.decided(gang) for gang in gangs):
            last.clear()
            return False
        fingerprint = snapshot.fingerprint(gangs)
        done = last == [fingerprint]
        last[:] = [fingerprint]
        return done

    try:
        wait_until("every gang of the batch to be decided", settled, timeout=120, interval=1.5)
    except AssertionError as error:
        if not latest:
            raise
        undecided = [
            f"{g.name} ({g.features()}): {condition(latest[0].groups.get(g.name, {}))}"
            for g in gangs
            if not latest[0].decided(g)
        ]
        raise AssertionError(f"{error}; undecided: {undecided}") from None
    return latest[0]


LOST_TO_DELETION = (
    "is being deleted, cannot be assigned to a host",  # the binder, mid-deletion
    '"DefaultBinder": pods "',  # the binder, after the deletion: `pods "x" not found`
    "skip schedule deleting pod",  # the scheduling queue, mid-deletion
    # DynamicResources' PreBind: the claim made from the pod's template is deleted with
    # its pod (`resourceclaims.resource.k8s.io "x" not found`, in words that vary with
    # the moment: on the update, or on the read after a conflict)
    'resourceclaims.resource.k8s.io "',
    "got deleted in the meantime",  # the same, seen before the update
)


def failed_scheduling(kubectl: Kubectl, namespace: str) -> list[str]:
    """Refusals of released pods. A pod that lost the race with its own deletion (its
    Job finished and removed pods it no longer needs, or the batch was cleared) was not
    refused: kube-scheduler then says it is being deleted, or not found, and the pod is
    gone or going by the time its event is read. Who deleted it is checked elsewhere: a
    rollback by its RolledBack event, a gang taken down part-way by the gang observer."""
    events = kubectl.json(
        "get", "events", "-n", namespace, "--field-selector", "reason=FailedScheduling"
    )["items"]
    pods = kubectl.json("get", "pods", "-n", namespace)["items"]
    standing = {p["metadata"]["uid"] for p in pods if not p["metadata"].get("deletionTimestamp")}

    def lost_to_deletion(event: dict[str, Any]) -> bool:
        gone = event["involvedObject"].get("uid") not in standing
        return gone and any(text in event.get("message", "") for text in LOST_TO_DELETION)

    return [
        f"{e['involvedObject']['name']}: {e.get('message', '')}"
        for e in events
        if not lost_to_deletion(e)
    ]


def rolled_back(kubectl: Kubectl, namespace: str) -> list[str]:
    events = kubectl.json(
        "get", "events", "-n", namespace, "--field-selector", "reason=RolledBack"
    )["items"]
    return [f"{e['involvedObject']['name']}: {e.get('message', '')}" for e in events]


def clear_batch(kubectl: Kubectl, namespace: str) -> None:
    kubectl("delete", "jobs", "--all", "-n", namespace, "--wait=false")
    wait_until(
        "the batch's pods and PodGroups to be gone",
        lambda: (
            not kubectl.json("get", f"pods,{POD_GROUPS}", "-n", namespace, "-l", GROUP_LABEL)[
                "items"
            ]
            and not kubectl.json("get", POD_GROUPS, "-n", namespace)["items"]
        ),
        timeout=60,
        interval=1,
    )


def test_random_inter_pod_gangs_bind_exactly_where_muster_planned(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    layout = build_layout(kubectl, namespace, pool)
    gangs = random_gangs(SEED, GANGS)
    operator.restart(f"--topology-levels={','.join(LEVELS)}")
    try:
        run_batches(kubectl, namespace, pool, layout, gangs)
    finally:
        operator.restart()


def bound_members(pods: list[dict[str, Any]]) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")}


def admitted_problems(
    gang: Gang, group: dict[str, Any], pods: list[dict[str, Any]], layout: Layout
) -> list[str]:
    """What is wrong with an admitted gang: pods bound off its plan, fewer bound than
    minCount, or its rules and slices broken where they are bound."""
    plan: dict[str, str] = group["status"]["plan"]
    placement = bound_members(pods)
    problems = []
    elsewhere = {
        pod: (node, plan.get(pod)) for pod, node in placement.items() if plan.get(pod) != node
    }
    if elsewhere:
        problems.append(f"{gang.name} bound off its plan (pod: (bound, planned)): {elsewhere}")
    if len(placement) < gang.min_count:
        problems.append(f"{gang.name}: {len(placement)} bound, minCount {gang.min_count}")
    indexes = {
        p["metadata"]["name"]: int(p["metadata"]["labels"][INDEX])
        for p in pods
        if INDEX in (p["metadata"].get("labels") or {})
    }
    return problems + [
        f"{gang.name} ({gang.features()}): {p}"
        for p in placement_problems(gang, placement, layout, indexes)
    ]


def run_batches(
    kubectl: Kubectl, namespace: str, pool: NodePool, layout: Layout, gangs: list[Gang]
) -> None:
    """Every batch of gangs, judged; the summary printed, and every problem asserted."""
    admitted: list[str] = []
    held: list[str] = []
    problems: list[str] = []
    started = time.monotonic()
    for first in range(0, len(gangs), BATCH):
        batch = gangs[first : first + BATCH]
        kubectl.apply(
            {"apiVersion": "v1", "kind": "List", "items": [g.job(pool) for g in batch]}, namespace
        )
        snapshot = settle(kubectl, namespace, batch)
        for gang in batch:
            group = snapshot.groups[gang.name]
            pods = members(snapshot.pods, gang.name)
            if condition(group)["reason"] == "Unschedulable":
                held.append(f"{gang.name} ({gang.features()}): {condition(group)['message']}")
                bound = [p for p in snapshot.pods if p["spec"].get("nodeName")]
                confirm_infeasible(gang, group, pods, layout, bound)
                continue
            placement = bound_members(pods)
            admitted.append(f"{gang.name} ({gang.features()}): {sorted(placement.values())}")
            problems += admitted_problems(gang, group, pods, layout)
        problems += [f"FailedScheduling {e}" for e in failed_scheduling(kubectl, namespace)]
        problems += [f"RolledBack {e}" for e in rolled_back(kubectl, namespace)]
        if problems:
            break
        clear_batch(kubectl, namespace)

    summary = (
        f"{len(admitted)} admitted, {len(held)} held back, in {time.monotonic() - started:.0f}s\n"
        + "admitted:\n  "
        + "\n  ".join(admitted)
        + "\nheld back:\n  "
        + "\n  ".join(held)
    )
    print(summary)
    assert not problems, "\n".join(problems) + "\n" + summary
    assert len(admitted) + len(held) == GANGS
