"""Static predicates over a small node table: one test per filter, and their order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from muster.scheduler.rules.filters import AFFINITY_MISMATCH, UNSCHEDULABLE
from muster.scheduler.state.intake import PlacementRules, pod_from
from muster.scheduler.state.predicates import (
    NodeTable,
)
from tests.unit.scheduler.builders import node, node_table, pod, taint

NODES = [
    node("a1", labels={"zone": "a", "gen": "3", "disk": "ssd"}),
    node("a2", labels={"zone": "a", "gen": "5"}),
    node("b1", labels={"zone": "b", "gen": "x"}, taints=[taint("gpu", "reserved")]),
    node("b2", labels={"zone": "b"}, unschedulable=True),
]


def table() -> NodeTable:
    return node_table(*NODES)


def rules(**spec: Any) -> PlacementRules:
    record = pod_from(pod("p", gated=False, spec=spec))
    assert record.rules is not None
    return record.rules


def allowed(**spec: Any) -> list[str]:
    nodes = table()
    mask = nodes.static_filter(rules(**spec)).allowed
    return [nodes.name(int(slot)) for slot in np.flatnonzero(mask)]


def required(*expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> Any:
    term: dict[str, Any] = {"matchExpressions": list(expressions)}
    if fields is not None:
        term["matchFields"] = fields
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def test_no_constraints_exclude_tainted_and_cordoned_nodes() -> None:
    assert allowed() == ["a1", "a2"]


def test_node_selector() -> None:
    assert allowed(nodeSelector={"zone": "a", "disk": "ssd"}) == ["a1"]
    assert allowed(nodeSelector={"zone": "c"}) == []


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"key": "zone", "operator": "In", "values": ["a"]}, ["a1", "a2"]),
        ({"key": "zone", "operator": "NotIn", "values": ["a"]}, []),
        ({"key": "disk", "operator": "NotIn", "values": ["ssd"]}, ["a2"]),
        ({"key": "disk", "operator": "Exists"}, ["a1"]),
        ({"key": "disk", "operator": "DoesNotExist"}, ["a2"]),
        ({"key": "gen", "operator": "Gt", "values": ["4"]}, ["a2"]),
        ({"key": "gen", "operator": "Lt", "values": ["4"]}, ["a1"]),
        ({"key": "gen", "operator": "Gt", "values": ["4", "5"]}, []),
        ({"key": "gen", "operator": "Near", "values": ["4"]}, []),
    ],
)
def test_required_affinity_operators(expression: dict[str, Any], expected: list[str]) -> None:
    assert allowed(affinity=required(expression)) == expected


def test_gt_treats_non_integer_labels_as_not_matching() -> None:
    tolerate_all = [{"operator": "Exists"}]
    expression = {"key": "gen", "operator": "Gt", "values": ["0"]}
    assert allowed(affinity=required(expression), tolerations=tolerate_all) == ["a1", "a2"]


def test_match_fields_on_the_node_name() -> None:
    fields = [{"key": "metadata.name", "operator": "In", "values": ["a2", "zz"]}]
    assert allowed(affinity=required(fields=fields)) == ["a2"]


def test_terms_are_ored_and_an_empty_term_matches_nothing() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gen", "operator": "In", "values": ["3"]}]},
                    {"matchExpressions": [{"key": "gen", "operator": "In", "values": ["5"]}]},
                    {},
                ]
            }
        }
    }
    assert allowed(affinity=affinity) == ["a1", "a2"]
    empty: dict[str, Any] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}
        }
    }
    assert allowed(affinity=empty) == []


def test_tolerations_open_tainted_and_cordoned_nodes() -> None:
    gpu = [{"key": "gpu", "operator": "Equal", "value": "reserved", "effect": "NoSchedule"}]
    assert allowed(tolerations=gpu) == ["a1", "a2", "b1"]
    cordon = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
    assert allowed(tolerations=cordon) == ["a1", "a2", "b2"]


def test_reasons_follow_kube_scheduler_filter_order() -> None:
    nodes = table()
    result = nodes.static_filter(rules(nodeSelector={"zone": "a"}))
    reasons = {
        nodes.name(slot): result.reasons[result.reason_of[slot]]
        for slot in range(4)
        if not result.allowed[slot]
    }
    assert reasons == {
        "b1": "node(s) had untolerated taint {gpu: reserved}",
        "b2": UNSCHEDULABLE,
    }
    by_affinity = nodes.static_filter(rules(nodeSelector={"zone": "b"}))
    assert by_affinity.reasons[by_affinity.reason_of[0]] == AFFINITY_MISMATCH
    assert (
        by_affinity.reasons[by_affinity.reason_of[2]]
        == "node(s) had untolerated taint {gpu: reserved}"
    )


def test_filters_are_cached_per_rules() -> None:
    nodes = table()
    assert nodes.static_filter(rules()) is nodes.static_filter(rules())
