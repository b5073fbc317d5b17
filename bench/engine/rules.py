"""The inter-pod figures (required anti-affinity, hard topology spread, self-affinity),
each scenario's decision checked before its time counts."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.engine.cluster import (
    GANG_SIZE,
    NODES,
    PENDING_GANGS,
    RULES,
    ZONES,
    Obj,
    apply,
    base_state,
    cycle,
    node_object,
    pending_gang,
    pending_gangs,
    queue_rule,
)
from bench.engine.measures import timed
from muster.scheduler import ClusterState
from muster.scheduler.decisions.results import CycleResult, Reason

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
