"""The scenario oracle must be able to say no, or its silence proves nothing."""

from __future__ import annotations

from typing import Any

from muster.api.constants import POD_GROUP_LABEL
from tests.scenarios.feasibility import placement_problems, quantity


def node(name: str, gpus: int, zone: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"zone": zone, "pool": "train"}},
        "spec": spec,
        "status": {"allocatable": {"cpu": "4", "nvidia.com/gpu": str(gpus), "pods": "10"}},
    }


def pod(name: str, gpus: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {POD_GROUP_LABEL: "g"}},
        "spec": {
            "containers": [{"resources": {"requests": {"cpu": "500m", "nvidia.com/gpu": gpus}}}],
            **spec,
        },
    }


NODES = {
    "a": node("a", 2, "z1"),
    "b": node("b", 2, "z2", taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}]),
}


def test_quantities() -> None:
    assert quantity("500m") * 2 == 1
    assert quantity("1Gi") == 2**30
    assert quantity(3) == 3


def test_a_feasible_placement_has_no_problem() -> None:
    pods = {"p": pod("p"), "q": pod("q")}
    assert placement_problems(NODES, pods, {"p": "a", "q": "a"}, {"g": "zone"}) == []


def test_overcommit_selector_taint_topology_and_missing_nodes_are_caught() -> None:
    pods = {
        "big": pod("big", gpus=3),
        "picky": pod("picky", nodeSelector={"pool": "infer"}),
        "tainted": pod("tainted"),
        "lost": pod("lost"),
    }
    final = {"big": "a", "picky": "a", "tainted": "b", "lost": "c"}
    assert placement_problems(NODES, pods, final, {"g": "zone"}) == [
        "lost is on c, which does not exist",
        "picky on a: nodeSelector pool=infer",
        "tainted on b: taint gpu",
        "a: nvidia.com/gpu 4 > 2",
        "g spans ['z1', 'z2']",
    ]


def test_a_matching_toleration_lets_a_pod_on_a_tainted_node() -> None:
    tolerant = pod("t", tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert placement_problems(NODES, {"t": tolerant}, {"t": "b"}, {}) == []
