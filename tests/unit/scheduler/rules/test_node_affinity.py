"""Required node affinity and nodeSelector over all nodes at once: terms ORed,
requirements ANDed, and what the API server would reject matching nothing."""

from __future__ import annotations

import pytest

from muster.scheduler.rules.labels import LabelIndex
from muster.scheduler.rules.node_affinity import Requirement, Term, matching_nodes

NAMES = ["n1", "n2", "n3", "n4"]
LABELS = [
    {"zone": "a", "gpus": "4"},
    {"zone": "b", "gpus": "8"},
    {"zone": "a"},
    {"gpus": "many"},
]
INDEX = LabelIndex(NAMES, LABELS)


def nodes(*terms: Term, selector: tuple[tuple[str, str], ...] = ()) -> list[str]:
    found = matching_nodes(selector, terms or None, INDEX)
    return [name for name, ok in zip(NAMES, found.tolist(), strict=True) if ok]


def labels(*requirements: Requirement) -> Term:
    return Term(requirements, ())


def fields(*requirements: Requirement) -> Term:
    return Term((), requirements)


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (Requirement("zone", "In", ("a",)), ["n1", "n3"]),
        (Requirement("zone", "In", ("a", "b", "c")), ["n1", "n2", "n3"]),
        (Requirement("zone", "NotIn", ("a",)), ["n2", "n4"]),
        (Requirement("zone", "Exists", ()), ["n1", "n2", "n3"]),
        (Requirement("zone", "DoesNotExist", ()), ["n4"]),
        (Requirement("gpus", "Gt", ("4",)), ["n2"]),
        (Requirement("gpus", "Lt", ("8",)), ["n1"]),
        (Requirement("gpus", "Gt", ("1", "2")), []),
        (Requirement("gpus", "Gt", ("many",)), []),
        (Requirement("zone", "Near", ("a",)), []),
    ],
)
def test_each_operator_selects_the_nodes_kube_scheduler_would(
    requirement: Requirement, expected: list[str]
) -> None:
    assert nodes(labels(requirement)) == expected


def test_requirements_of_a_term_are_anded_and_terms_ored() -> None:
    in_a = Requirement("zone", "In", ("a",))
    has_gpus = Requirement("gpus", "Exists", ())
    assert nodes(labels(in_a, has_gpus)) == ["n1"]
    assert nodes(labels(in_a), labels(Requirement("zone", "In", ("b",)))) == ["n1", "n2", "n3"]


def test_a_term_with_no_requirements_matches_no_node() -> None:
    assert nodes(Term((), ())) == []


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (Requirement("metadata.name", "In", ("n2", "n4", "gone")), ["n2", "n4"]),
        (Requirement("metadata.name", "NotIn", ("n2",)), ["n1", "n3", "n4"]),
        (Requirement("metadata.name", "Exists", ()), []),
        (Requirement("metadata.uid", "In", ("n1",)), []),
    ],
)
def test_match_fields_select_by_node_name_only(
    requirement: Requirement, expected: list[str]
) -> None:
    assert nodes(fields(requirement)) == expected


def test_the_node_selector_applies_on_top_of_the_affinity() -> None:
    assert nodes(selector=(("zone", "a"),)) == ["n1", "n3"]
    assert nodes(labels(Requirement("gpus", "Exists", ())), selector=(("zone", "a"),)) == ["n1"]
    assert nodes(selector=(("zone", "unknown"),)) == []
