"""Odd objects never crash intake or a cycle: each is skipped with a reason, or accepted."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.scheduler import ClusterState, EngineConfig, schedule
from tests.unit.scheduler.builders import node, pod, pod_group, priority_class

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=True)
    | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
VALID = {
    "Node": node("n1", gpu="2", labels={"zone": "a"}),
    "Pod": pod(
        "p",
        group="g",
        spec={
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "nodeSelector": {"zone": "a"},
            "containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 2}]}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "gen", "operator": "Gt", "values": ["1"]}
                                ]
                            }
                        ]
                    }
                }
            },
            "overhead": {"cpu": "100m"},
        },
        phase="Pending",
    ),
    "PodGroup": pod_group("g", topology_key="zone", admitted=True, plan={"p": "n1"}),
    "PriorityClass": priority_class("high", 10, global_default=True),
}


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix]
    if isinstance(obj, dict):
        for key, value in obj.items():
            paths += _paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            paths += _paths(value, (*prefix, index))
    return paths


def _replace(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    mutated = copy.deepcopy(obj)
    target = mutated
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return mutated


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(VALID)), st.data(), JSON)
def test_a_corrupted_field_is_skipped_or_accepted_never_a_crash(
    kind: str, data: st.DataObject, junk: Any
) -> None:
    path = data.draw(st.sampled_from(_paths(VALID[kind])))
    odd = _replace(VALID[kind], path, junk)
    state = ClusterState()
    for other_kind, obj in sorted(VALID.items()):
        if other_kind != kind:
            assert state.apply(other_kind, obj).rejected is None
    reason = state.apply(kind, odd).rejected
    assert reason is None or isinstance(reason, str)
    schedule(state, now=0.0, config=EngineConfig())


def test_a_condition_that_is_not_a_mapping_is_dropped_from_the_status_written() -> None:
    group = copy.deepcopy(VALID["PodGroup"])
    group.setdefault("status", {})["conditions"] = [None]
    state = ClusterState()
    for kind, obj in sorted({**VALID, "PodGroup": group}.items()):
        state.apply(kind, obj)
    statuses = schedule(state, now=0.0, config=EngineConfig()).plan.statuses
    assert all(None not in status["conditions"] for status in statuses.values())
