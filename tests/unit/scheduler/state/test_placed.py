"""Placed pods indexed for inter-pod rules: grouped by namespace and labels, found by
the labels a selector requires, and pods with anti-affinity found by what they repel."""

from __future__ import annotations

from typing import Any

from muster.scheduler.state.intake import PodRecord, pod_from
from muster.scheduler.state.placed import PlacedPods, term_anchors
from tests.unit.scheduler.builders import pod

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def record(name: str, labels: dict[str, str], *, repels: Any = None, **extra: Any) -> PodRecord:
    spec = None
    if repels is not None:
        term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": repels}
        spec = {"affinity": {"podAntiAffinity": {REQUIRED: [term]}}}
    return pod_from(pod(name, labels=labels, spec=spec, **extra))


WEB = {"app": "web"}
DB = {"app": "db"}


def counts(placed: PlacedPods, anchors: tuple[tuple[str, str], ...] | None) -> list[Any]:
    return [(dict(group.labels), group.nodes) for group in placed.candidate_groups(anchors)]


def test_pods_with_the_same_labels_are_counted_per_node_in_one_group() -> None:
    placed = PlacedPods()
    placed.add(record("w1", WEB), "n1")
    placed.add(record("w2", WEB), "n1")
    placed.add(record("w3", WEB), "n2")
    placed.add(record("d1", DB), "n1")
    assert counts(placed, (("app", "web"),)) == [(WEB, {"n1": 2, "n2": 1})]
    assert len(counts(placed, None)) == 2
    assert counts(placed, (("app", "cache"),)) == []


def test_removing_the_last_pod_of_a_group_forgets_it() -> None:
    placed = PlacedPods()
    web = record("w1", WEB)
    placed.add(web, "n1")
    placed.add(record("w2", WEB), "n2")
    placed.remove(web, "n1")
    assert counts(placed, (("app", "web"),)) == [(WEB, {"n2": 1})]
    placed.remove(record("w2", WEB), "n2")
    assert counts(placed, None) == []


def test_pods_being_deleted_are_a_group_of_their_own() -> None:
    leaving = pod("w2", labels=WEB)
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    placed = PlacedPods()
    placed.add(record("w1", WEB), "n1")
    placed.add(pod_from(leaving), "n1")
    assert sorted(group.terminating for group in placed.candidate_groups(None)) == [False, True]


def test_a_repeller_is_found_by_the_labels_its_terms_require() -> None:
    placed = PlacedPods()
    placed.add(record("d1", DB, repels={"matchLabels": WEB}), "n1")
    placed.add(record("d2", DB, repels={"matchLabels": WEB}), "n2")
    (repeller,) = placed.candidate_repellers(WEB)
    assert repeller.nodes == {"n1": 1, "n2": 1}
    assert list(placed.candidate_repellers(DB)) == []


def test_a_repeller_whose_selector_requires_no_label_is_a_candidate_for_every_pod() -> None:
    placed = PlacedPods()
    anyone = {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    placed.add(record("d1", DB, repels=anyone), "n1")
    assert len(list(placed.candidate_repellers({"team": "x"}))) == 1
    placed.remove(record("d1", DB, repels=anyone), "n1")
    assert list(placed.candidate_repellers({"team": "x"})) == []
    assert placed.repellers == {}


def test_a_copy_counts_apart_from_the_original() -> None:
    placed = PlacedPods()
    placed.add(record("w1", WEB), "n1")
    twin = placed.copy()
    twin.add(record("w2", WEB), "n1")
    twin.add(record("d1", DB, repels={"matchLabels": WEB}), "n2")
    assert counts(placed, None) == [(WEB, {"n1": 1})]
    assert list(placed.candidate_repellers(WEB)) == []
    assert counts(twin, (("app", "web"),)) == [(WEB, {"n1": 2})]


def test_term_anchors_join_the_anchors_of_every_term() -> None:
    web = record("x", {}, repels={"matchLabels": WEB}).inter_pod.anti_affinity
    db = record("y", {}, repels={"matchLabels": DB}).inter_pod.anti_affinity
    anyone = record("z", {}, repels={}).inter_pod.anti_affinity
    assert term_anchors(web + db) == (("app", "db"), ("app", "web"))
    assert term_anchors(web + anyone) is None
    assert term_anchors(()) == ()
