"""The store: records go in through its mutators, and the kinds use nothing else."""

from __future__ import annotations

import ast
from pathlib import Path

from muster.api.keys import GroupKey, PodKey
from muster.scheduler.state.intake import node_from, pod_from, pod_group_from, priority_class_from
from muster.scheduler.state.store import ClusterStore
from tests.unit.scheduler.builders import node, pod, pod_group, priority_class

ENGINE = Path(__file__).resolve().parents[4] / "src" / "muster" / "scheduler"
BUILDING_RECORDS = ("state/kinds.py", "state/intake.py", "devices/kinds.py", "devices/intake.py")


def test_a_pod_put_on_a_node_takes_its_capacity_and_gives_it_back_when_removed() -> None:
    store = ClusterStore()
    store.put_node(node_from(node("n1")))
    store.put_pod(pod_from(pod("a", cpu="2", node_name="n1")))
    slot = 0  # the first node takes the first row
    cpu = store.resource_names.index("cpu")
    assert store.taken[slot, cpu] == 2000
    assert store.pod_record(PodKey("default", "a")) is not None
    store.remove_pod(PodKey("default", "a"))
    assert store.taken[slot, cpu] == 0
    assert store.pod_record(PodKey("default", "a")) is None


def test_a_removed_node_leaves_its_pods_on_no_node_until_it_comes_back() -> None:
    store = ClusterStore()
    store.put_node(node_from(node("n1")))
    store.put_pod(pod_from(pod("a", cpu="1", node_name="n1")))
    store.remove_node("n1")
    assert store.node_record("n1") is None
    store.put_node(node_from(node("n1")))
    assert store.taken[0, store.resource_names.index("cpu")] == 1000


def test_a_removed_pod_group_leaves_its_members_waiting_for_it() -> None:
    store = ClusterStore()
    store.put_pod_group(pod_group_from(pod_group("g", min_count=1)))
    store.put_pod(pod_from(pod("a", group="g")))
    store.remove_pod_group(GroupKey("default", "g"))
    assert GroupKey("default", "g") in store.missing_groups


def test_a_priority_class_gives_its_value_to_the_pods_naming_it_until_removed() -> None:
    store = ClusterStore()
    store.put_pod(pod_from(pod("a", priority_class="high")))
    store.put_priority_class(priority_class_from(priority_class("high", 1000)))
    assert store.pods[PodKey("default", "a")].priority == 1000
    store.remove_priority_class("high")
    assert store.pods[PodKey("default", "a")].priority == 0


def private_uses(path: Path) -> list[str]:
    """`x._name` where x is not the module's own object (`self`, `cls`)."""
    return [
        f"{path}:{attribute.lineno} {ast.unparse(attribute)}"
        for attribute in ast.walk(ast.parse(path.read_text()))
        if isinstance(attribute, ast.Attribute)
        and attribute.attr.startswith("_")
        and not attribute.attr.startswith("__")
        and not (isinstance(attribute.value, ast.Name) and attribute.value.id in {"self", "cls"})
    ]


def test_the_modules_building_records_call_no_private_method_of_the_state() -> None:
    uses = [use for module in BUILDING_RECORDS for use in private_uses(ENGINE / module)]
    assert uses == []
