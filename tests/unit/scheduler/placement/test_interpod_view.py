"""One cycle's view of placed pods: the cluster's, then the pods the cycle placed
itself, counted per node slot, with cached counts kept up to date."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.scheduler.placement.interpod_view import InterPodView
from muster.scheduler.state.intake import PodRecord, pod_from
from muster.scheduler.state.placed import PlacedPods
from tests.unit.scheduler.builders import pod

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
SLOTS = {"n1": 0, "n2": 1, "n3": 2}
WEB = {"app": "web"}
DB = {"app": "db"}
IS_WEB = (("app", "web"),)


def record(name: str, labels: dict[str, str], *, repels: Any = None, **extra: Any) -> PodRecord:
    spec = None
    if repels is not None:
        term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": repels}
        spec = {"affinity": {"podAntiAffinity": {REQUIRED: [term]}}}
    return pod_from(pod(name, labels=labels, spec=spec, **extra))


def view(*placed: tuple[PodRecord, str], namespaces: Any = None) -> InterPodView:
    index = PlacedPods()
    for item, node in placed:
        index.add(item, node)
    return InterPodView(
        index, size=len(SLOTS), node_slot=SLOTS.get, namespace_labels=namespaces or {}
    )


def is_web(namespace: str, labels: Mapping[str, str]) -> bool:
    return labels.get("app") == "web"


def test_counts_per_slot_include_the_pods_this_cycle_placed() -> None:
    cycle = view((record("w1", WEB), "n1"), (record("d1", DB), "n2"), (record("w2", WEB), "gone"))
    assert cycle.matching("web", is_web, IS_WEB).tolist() == [1, 0, 0]
    cycle.add(record("w3", WEB), 2)
    cycle.add(record("d2", DB), 2)
    assert cycle.matching("web", is_web, IS_WEB).tolist() == [1, 0, 1]
    assert cycle.matching("web again", is_web, None).tolist() == [1, 0, 1]


def test_pods_being_deleted_count_only_when_asked() -> None:
    leaving = pod("w1", labels=WEB)
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    cycle = view((pod_from(leaving), "n1"))
    assert cycle.matching("affinity", is_web, IS_WEB).tolist() == [1, 0, 0]
    assert cycle.matching("spread", is_web, IS_WEB, terminating=False).tolist() == [0, 0, 0]


def test_placed_and_added_pods_whose_anti_affinity_matches_repel() -> None:
    cycle = view((record("d1", DB, repels={"matchLabels": WEB}), "n1"))
    assert cycle.anyone_repels
    cycle.add(record("d2", DB, repels={"matchLabels": WEB}), 1)
    cycle.add(record("d3", DB, repels={"matchLabels": DB}), 2)
    found = cycle.repelling("default", WEB)
    assert [slots for _, slots in found] == [[0], [1]]
    assert all(term.topology_key == "kubernetes.io/hostname" for term, _ in found)
    assert [slots for _, slots in cycle.repelling("other", WEB)] == []


def test_nobody_repels_without_anti_affinity() -> None:
    cycle = view((record("w1", WEB), "n1"))
    assert not cycle.anyone_repels
    assert cycle.repelling("default", WEB) == []


def test_namespace_labels_are_known_per_namespace() -> None:
    cycle = view(namespaces={"ml": {"team": "x"}})
    assert cycle.namespace_labels("ml") == {"team": "x"}
    assert cycle.namespace_labels("other") == {}
