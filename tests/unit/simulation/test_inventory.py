from __future__ import annotations

from typing import Any

import pytest

from muster.simulation.documents import Document, InvalidInputError
from muster.simulation.inventory import take_inventory


def doc(body: object, index: int = 1, source: str = "in.yaml") -> Document:
    return Document(source, index, body)


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def pod(name: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **metadata}}


def problems_of(documents: list[Document]) -> list[str]:
    with pytest.raises(InvalidInputError) as caught:
        take_inventory(documents)
    return [str(problem) for problem in caught.value.problems]


def test_objects_are_sorted_by_kind_in_input_order() -> None:
    inventory = take_inventory(
        [doc(node("b"), 1), doc(pod("p"), 2), doc(node("a"), 3), doc(None, 4)]
    )
    assert [entry.name for entry in inventory.nodes] == ["b", "a"]
    assert [entry.origin for entry in inventory.pods] == ["in.yaml:2"]


def test_namespaced_objects_default_to_the_default_namespace() -> None:
    inventory = take_inventory([doc(pod("p")), doc(pod("q", namespace="ml"), 2)])
    assert [entry.namespace for entry in inventory.pods] == ["default", "ml"]


def test_cluster_scoped_objects_have_no_namespace() -> None:
    inventory = take_inventory([doc({**node("n"), "metadata": {"name": "n", "namespace": "x"}})])
    assert inventory.nodes[0].namespace == ""


def test_entries_are_copies_the_simulation_may_change() -> None:
    body = pod("p")
    inventory = take_inventory([doc(body)])
    inventory.pods[0].body["metadata"]["name"] = "changed"
    assert body["metadata"] == {"name": "p"}


def test_list_documents_are_unpacked_with_item_origins() -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [node("a"), pod("p")]}
    inventory = take_inventory([doc(listed, 3)])
    assert [entry.origin for entry in inventory.nodes] == ["in.yaml:3.items[0]"]
    assert [entry.origin for entry in inventory.pods] == ["in.yaml:3.items[1]"]


def test_unknown_kinds_are_ignored_with_a_warning() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}
    inventory = take_inventory([doc(service, 2)])
    assert [str(warning) for warning in inventory.warnings] == [
        "in.yaml:2: kind Service is not simulated; ignored"
    ]


def test_pod_groups_of_another_api_group_are_ignored_with_a_warning() -> None:
    native = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g"},
    }
    inventory = take_inventory([doc(native)])
    assert inventory.pod_groups == []
    assert "not Muster's" in str(inventory.warnings[0])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (["a", "list"], "in.yaml:1: expected a mapping, found list"),
        ("text", "in.yaml:1: expected a mapping, found str"),
        ({"metadata": {"name": "x"}}, "in.yaml:1: kind: required"),
        ({"kind": "Node"}, "in.yaml:1: Node: metadata: required"),
        ({"kind": "Node", "metadata": {}}, "in.yaml:1: Node: metadata.name: required"),
        ({"kind": "Node", "metadata": {"name": ""}}, "in.yaml:1: Node: metadata.name: required"),
        (
            {"kind": "Pod", "metadata": {"name": "p", "namespace": 3}},
            "in.yaml:1: Pod p: metadata.namespace: expected a string",
        ),
        ({"kind": "List", "items": "nope"}, "in.yaml:1: items: expected a list"),
        ({"kind": "List", "items": [7]}, "in.yaml:1.items[0]: expected a mapping, found int"),
    ],
)
def test_malformed_documents_are_reported_with_their_origin(body: object, message: str) -> None:
    assert problems_of([doc(body)]) == [message]


def test_every_problem_is_reported_not_only_the_first() -> None:
    problems = problems_of([doc(7, 1), doc(node("ok"), 2), doc({"kind": "Pod"}, 3, "b.yaml")])
    assert problems == [
        "in.yaml:1: expected a mapping, found int",
        "b.yaml:3: Pod: metadata: required",
    ]


def test_an_object_defined_twice_is_a_problem() -> None:
    problems = problems_of([doc(pod("p"), 1), doc(pod("p", namespace="default"), 2)])
    assert problems == ["in.yaml:2: Pod default/p is also defined at in.yaml:1"]


def test_same_name_in_other_namespaces_or_kinds_is_fine() -> None:
    inventory = take_inventory(
        [doc(pod("x"), 1), doc(pod("x", namespace="ml"), 2), doc(node("x"), 3)]
    )
    assert len(inventory.pods) == 2
    assert len(inventory.nodes) == 1
