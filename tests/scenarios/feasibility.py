"""An independent check that a simulation's placements could really run.

Written apart from the engine (its own quantity parsing, its own predicates, only for
what the scenarios use) so that a mistake in the engine's predicates cannot hide
itself: every node within its allocatable, selectors matched, taints tolerated, and
a gang with a topology key inside one domain.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from muster.api.constants import POD_GROUP_LABEL

Manifest = Mapping[str, Any]

_SUFFIXES = {
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(1000),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
}
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)([A-Za-z]*)$")
_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def quantity(text: object) -> Fraction:
    match = _QUANTITY.match(str(text))
    assert match is not None and match.group(2) in _SUFFIXES, f"quantity {text!r}"
    return Fraction(match.group(1)) * _SUFFIXES[match.group(2)]


def requests(pod: Manifest) -> dict[str, Fraction]:
    total: dict[str, Fraction] = defaultdict(Fraction)
    for container in pod["spec"].get("containers") or []:
        for resource, amount in ((container.get("resources") or {}).get("requests") or {}).items():
            total[resource] += quantity(amount)
    total["pods"] += 1
    return total


def _tolerated(taint: Manifest, tolerations: list[Manifest]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") not in (None, "", taint.get("effect")):
            continue
        if toleration.get("operator") == "Exists" and toleration.get("key") in (
            None,
            "",
            taint["key"],
        ):
            return True
        if toleration.get("key") == taint["key"] and toleration.get("value") == taint.get("value"):
            return True
    return False


def placement_problems(
    nodes: Mapping[str, Manifest],
    pods: Mapping[str, Manifest],
    final_nodes: Mapping[str, str],
    topology_keys: Mapping[str, str],
) -> list[str]:
    """Why the final binding of pods to nodes could not run ([] when it could).

    `pods` are pod bodies by name (one namespace per scenario suffices),
    `final_nodes` the node of every pod taking capacity at the end, and
    `topology_keys` the key of each PodGroup that has one.
    """
    problems: list[str] = []
    used: dict[str, dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for pod_name, node_name in sorted(final_nodes.items()):
        pod, node = pods[pod_name], nodes.get(node_name)
        if node is None:
            problems.append(f"{pod_name} is on {node_name}, which does not exist")
            continue
        labels = node["metadata"].get("labels") or {}
        for key, value in (pod["spec"].get("nodeSelector") or {}).items():
            if labels.get(key) != value:
                problems.append(f"{pod_name} on {node_name}: nodeSelector {key}={value}")
        for taint in (node.get("spec") or {}).get("taints") or []:
            if taint.get("effect") in _BLOCKING_EFFECTS and not _tolerated(
                taint, pod["spec"].get("tolerations") or []
            ):
                problems.append(f"{pod_name} on {node_name}: taint {taint['key']}")
        for resource, amount in requests(pod).items():
            used[node_name][resource] += amount
    for node_name, usage in sorted(used.items()):
        allocatable = nodes[node_name].get("status", {}).get("allocatable") or {}
        for resource, amount in sorted(usage.items()):
            capacity = quantity(allocatable.get(resource, 0))
            if amount > capacity:
                problems.append(f"{node_name}: {resource} {amount} > {capacity}")
    domains: dict[str, set[str]] = defaultdict(set)
    for pod_name, node_name in final_nodes.items():
        group = (pods[pod_name]["metadata"].get("labels") or {}).get(POD_GROUP_LABEL)
        key = topology_keys.get(group or "")
        if key is not None and node_name in nodes:
            domains[group or ""].add(
                (nodes[node_name]["metadata"].get("labels") or {}).get(key, "")
            )
    problems.extend(
        f"{group} spans {sorted(values)}" for group, values in domains.items() if len(values) > 1
    )
    return problems
