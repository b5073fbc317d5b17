"""Required pod (anti-)affinity and hard spread constraints read as kube-scheduler's
filters read them: selectors, namespaces, label keys and what only scores."""

from __future__ import annotations

from typing import Any

import pytest

from muster.scheduler.objects.fields import IntakeError
from muster.scheduler.rules.node_affinity import Requirement
from muster.scheduler.rules.pod_terms import (
    NO_RULES,
    PodTerm,
    Selector,
    inter_pod_rules,
    label_selector,
    matches_all,
)

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
LABELS = {"app": "web", "tier": "front"}


def affinity(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {kind: {REQUIRED: list(terms)}}}


def term(**fields: Any) -> dict[str, Any]:
    return {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}, **fields}


def spread(**fields: Any) -> dict[str, Any]:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                **fields,
            }
        ]
    }


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({}, {}, True),
        ({"matchLabels": {"app": "web"}}, LABELS, True),
        ({"matchLabels": {"app": "db"}}, LABELS, False),
        (
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]},
            LABELS,
            True,
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]},
            LABELS,
            False,
        ),
        (
            {"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["a"]}]},
            LABELS,
            True,
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, LABELS, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, LABELS, False),
        ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, LABELS, True),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, LABELS, False),
    ],
)
def test_a_label_selector_matches_as_kubernetes_does(
    selector: dict[str, Any], labels: dict[str, str], matches: bool
) -> None:
    read = label_selector(selector, "selector")
    assert read is not None and read.matches(labels) is matches


def test_an_absent_selector_is_none_and_a_bad_operator_is_refused() -> None:
    assert label_selector(None, "selector") is None
    bad = {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}
    with pytest.raises(IntakeError, match=r"selector\.matchExpressions\[\]\.operator"):
        label_selector(bad, "selector")


@pytest.mark.parametrize(
    ("requirements", "anchors"),
    [
        ((), None),
        ((Requirement("tier", "Exists", ()),), None),
        (
            (Requirement("app", "In", ("a", "b")), Requirement("tier", "In", ("x",))),
            (("tier", "x"),),
        ),
    ],
)
def test_anchors_are_the_labels_of_the_most_selective_in_requirement(
    requirements: tuple[Requirement, ...], anchors: tuple[tuple[str, str], ...] | None
) -> None:
    assert Selector(requirements).anchors() == anchors


def test_a_pod_with_no_rules_has_none() -> None:
    assert inter_pod_rules({}, "default", LABELS) is NO_RULES
    assert not inter_pod_rules({"affinity": {"nodeAffinity": {}}}, "default", LABELS)


def test_only_required_terms_are_read() -> None:
    preferred = {
        "affinity": {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": term()}
                ]
            }
        }
    }
    assert inter_pod_rules(preferred, "default", LABELS) is NO_RULES


@pytest.mark.parametrize(
    ("fields", "namespaces", "selects_namespaces"),
    [
        ({}, {"home"}, False),
        ({"namespaces": ["a", "b"]}, {"a", "b"}, False),
        ({"namespaceSelector": {}}, set(), True),
        ({"namespaces": ["a"], "namespaceSelector": {"matchLabels": {"t": "x"}}}, {"a"}, True),
    ],
)
def test_a_term_looks_at_its_own_namespace_unless_told_otherwise(
    fields: dict[str, Any], namespaces: set[str], selects_namespaces: bool
) -> None:
    rules = inter_pod_rules(affinity("podAffinity", term(**fields)), "home", LABELS)
    (read,) = rules.affinity
    assert read.namespaces == namespaces
    assert (read.namespace_selector is not None) is selects_namespaces
    assert read.topology_key == "zone"


@pytest.mark.parametrize(
    ("namespace", "labels", "namespace_labels", "matches"),
    [
        ("a", {"app": "web"}, {}, True),
        ("b", {"app": "web"}, {}, False),
        ("b", {"app": "web"}, {"team": "x"}, True),
        ("a", {"app": "db"}, {}, False),
    ],
)
def test_a_term_matches_namespace_first_then_labels(
    namespace: str, labels: dict[str, str], namespace_labels: dict[str, str], matches: bool
) -> None:
    raw = term(namespaces=["a"], namespaceSelector={"matchLabels": {"team": "x"}})
    (read,) = inter_pod_rules(affinity("podAffinity", raw), "home", LABELS).affinity
    assert read.matches(namespace, labels, namespace_labels) is matches


def test_a_term_without_a_selector_matches_no_pod() -> None:
    raw = {"topologyKey": "zone"}
    (read,) = inter_pod_rules(affinity("podAntiAffinity", raw), "home", LABELS).anti_affinity
    assert read.selector is None
    assert not read.matches("home", LABELS, {})


def test_match_and_mismatch_label_keys_add_the_pods_own_values() -> None:
    raw = term(matchLabelKeys=["tier", "absent"], mismatchLabelKeys=["app"])
    (read,) = inter_pod_rules(affinity("podAntiAffinity", raw), "home", LABELS).anti_affinity
    assert read.selector == Selector(
        (
            Requirement("app", "In", ("web",)),
            Requirement("app", "NotIn", ("web",)),
            Requirement("tier", "In", ("front",)),
        )
    )


def test_all_terms_must_match_and_no_terms_match_nothing() -> None:
    web = PodTerm(Selector((Requirement("app", "In", ("web",)),)), frozenset({"a"}), None, "z")
    front = PodTerm(Selector((Requirement("tier", "In", ("front",)),)), frozenset({"a"}), None, "z")
    assert matches_all((web, front), "a", LABELS, {})
    assert not matches_all((web, front), "a", {"app": "web"}, {})
    assert not matches_all((), "a", LABELS, {})


def test_a_term_without_a_topology_key_is_refused() -> None:
    with pytest.raises(IntakeError, match=r"podAffinity\.requiredDuring.*\[0\]\.topologyKey"):
        inter_pod_rules(affinity("podAffinity", {"labelSelector": {}}), "home", LABELS)


def test_a_hard_spread_constraint_is_read_with_its_defaults() -> None:
    (constraint,) = inter_pod_rules(spread(), "home", LABELS).spread
    assert (constraint.max_skew, constraint.topology_key, constraint.min_domains) == (1, "zone", 1)
    assert constraint.honor_node_affinity and not constraint.honor_taints
    assert constraint.counts(LABELS) and not constraint.counts({"app": "db"})


def test_a_spread_constraint_that_only_scores_is_left_out() -> None:
    assert inter_pod_rules(spread(whenUnsatisfiable="ScheduleAnyway"), "home", LABELS) is NO_RULES


def test_policies_and_min_domains_are_read() -> None:
    fields = {"minDomains": 3, "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"}
    (constraint,) = inter_pod_rules(spread(**fields), "home", LABELS).spread
    assert constraint.min_domains == 3
    assert not constraint.honor_node_affinity and constraint.honor_taints


def test_an_empty_selector_matches_the_pod_but_counts_no_other() -> None:
    (constraint,) = inter_pod_rules(spread(labelSelector={}), "home", LABELS).spread
    assert constraint.matches(LABELS)
    assert not constraint.counts(LABELS)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"maxSkew": 0}, r"maxSkew must be at least 1"),
        ({"topologyKey": ""}, r"topologyKey is missing"),
    ],
)
def test_a_malformed_spread_constraint_is_refused(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(IntakeError, match=problem):
        inter_pod_rules(spread(**fields), "home", LABELS)
