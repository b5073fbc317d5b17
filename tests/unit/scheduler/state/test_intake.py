"""Objects become records: what is read from each field, and what is refused."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.constants import COMPLETION_INDEX_KEY, POD_GROUP_LABEL
from muster.api.keys import GroupKey, PodKey
from muster.scheduler.memory.gang_memory import GangMemory
from muster.scheduler.objects.fields import IntakeError
from muster.scheduler.objects.times import parse_timestamp
from muster.scheduler.rules.taints import Taint
from muster.scheduler.state.intake import (
    node_from,
    pod_from,
    pod_group_from,
    priority_class_from,
)
from tests.unit.scheduler.builders import node, pod, pod_group, priority_class, taint


def test_a_node_keeps_every_allocatable_resource_and_its_taints() -> None:
    record = node_from(
        node("n", cpu="7500m", gpu="8", labels={"zone": "a"}, taints=[taint("k", "v")])
    )
    assert dict(record.allocatable) == {
        "cpu": 7500,
        "memory": 32 * 2**30,
        "nvidia.com/gpu": 8,
        "pods": 110,
    }
    assert record.labels == {"zone": "a"}
    assert record.taints == (Taint("k", "v", "NoSchedule"),)
    assert not record.unschedulable


def test_a_node_without_allocatable_falls_back_to_capacity() -> None:
    obj = node("n")
    del obj["status"]["allocatable"]
    assert dict(node_from(obj).allocatable)["cpu"] == 8000


def test_a_pod_records_membership_gate_binding_and_phase() -> None:
    record = pod_from(pod("w", group="g", namespace="ml", cpu="500m", priority=5))
    assert (record.key.namespace, record.group_name, record.gated) == ("ml", "g", True)
    assert record.requests == (("cpu", 500),)
    assert record.node_name is None and record.rules is not None
    assert record.priority == 5
    bound = pod_from(pod("w", group="g", node_name="n1", phase="Running"))
    assert bound.node_name == "n1" and not bound.gated and bound.rules is None
    assert pod_from(pod("w", node_name="n1", phase="Succeeded")).terminal


def test_pods_of_one_template_share_what_it_gives_them_and_differ_where_they_differ() -> None:
    """Memory: 50,000 records hold one copy of a template's requests, rules and labels."""
    spread = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "a"}},
            }
        ],
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
    }
    first, second = (
        pod_from(pod(name, group="g", gpu="1", spec=spread, labels={"app": "a"}))
        for name in ("w-0", "w-1")
    )
    assert first.key != second.key
    assert first.requests is second.requests
    assert first.rules is second.rules and first.inter_pod is second.inter_pod
    assert first.labels is second.labels
    other = pod_from(pod("w-2", group="h", gpu="2", spec=spread, labels={"app": "a"}))
    assert other.requests == (("cpu", 1000), ("nvidia.com/gpu", 2))
    assert other.labels == {POD_GROUP_LABEL: "h", "app": "a"}
    assert first.requests == (("cpu", 1000), ("nvidia.com/gpu", 1))
    assert first.labels == {POD_GROUP_LABEL: "g", "app": "a"}


def test_only_the_gang_gate_counts() -> None:
    obj = pod("w", group="g", gated=False, spec={"schedulingGates": [{"name": "other/gate"}]})
    assert not pod_from(obj).gated


def test_a_gang_pod_group() -> None:
    record = pod_group_from(
        pod_group(
            "g",
            min_count=3,
            topology_key="zone",
            priority_class="high",
            preemption_policy="Never",
            single=True,
            admitted=True,
            plan={"g-0": "n1"},
            created="2026-01-01T00:00:10Z",
        )
    )
    assert record.key == GroupKey("default", "g")
    assert (record.gang, record.min_count, record.topology_key) == (True, 3, "zone")
    assert (record.priority, record.priority_class) == (None, "high")
    assert not record.preempt and record.disrupt_single
    assert record.admitted and record.plan == {"g-0": "n1"}
    assert record.created == parse_timestamp("2026-01-01T00:00:10Z")


def test_defaults_preempt_lower_priority_and_disrupt_all() -> None:
    obj = pod_group("g", min_count=2)
    del obj["spec"]["disruptionMode"]
    record = pod_group_from(obj)
    assert record.preempt and not record.disrupt_single and not record.admitted


def test_a_false_scheduled_condition_is_not_an_admission() -> None:
    obj = pod_group("g", min_count=2)
    obj["status"]["conditions"] = [{"type": "PodGroupScheduled", "status": "False"}]
    assert not pod_group_from(obj).admitted


def test_basic_groups_are_not_gangs() -> None:
    assert not pod_group_from(pod_group("b", min_count=None)).gang


@pytest.mark.parametrize(
    "spec",
    [
        {"schedulingPolicy": {}},
        {"schedulingPolicy": {"gang": {"minCount": 0}}},
        {"schedulingPolicy": {"gang": {"minCount": "3"}}},
        {"schedulingPolicy": {"gang": {}}},
        {
            "schedulingPolicy": {"gang": {"minCount": 1}},
            "schedulingConstraints": {"topology": [{}]},
        },
    ],
)
def test_malformed_pod_groups_are_refused(spec: dict[str, object]) -> None:
    obj = pod_group("g")
    obj["spec"] = spec
    with pytest.raises(IntakeError):
        pod_group_from(obj)


def test_timestamps() -> None:
    assert parse_timestamp("1970-01-01T00:01:00Z") == 60.0
    assert parse_timestamp(None) is None
    with pytest.raises(IntakeError):
        parse_timestamp("yesterday")


def test_priority_classes() -> None:
    record = priority_class_from(priority_class("high", 1000, global_default=True))
    assert (record.name, record.value, record.global_default) == ("high", 1000, True)


def test_host_ports_including_those_of_host_network_pods() -> None:
    ports = [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 53, "protocol": "UDP"}]
    spec = {"containers": [{"name": "c", "ports": ports}]}
    assert pod_from(pod("p", spec=spec)).host_ports == (("TCP", 8080),)
    host_network = pod_from(pod("p", spec={**spec, "hostNetwork": True}))
    assert host_network.host_ports == (("TCP", 8080), ("UDP", 53))


def test_a_pod_group_brings_its_lifecycle_memory_and_the_version_it_was_read_at() -> None:
    obj = {
        "metadata": {"name": "g", "namespace": "ns", "generation": 4, "resourceVersion": "77"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        "status": {
            "lifecycle": {
                "rollbacks": 2,
                "backoffUntil": "1970-01-01T00:01:00Z",
                "victims": ["other/b-1", "other/b-0", "malformed"],
            }
        },
    }
    record = pod_group_from(obj)
    assert record.memory == GangMemory(
        rollbacks=2,
        backoff_until=60.0,
        victims=(PodKey("other", "b-0"), PodKey("other", "b-1")),
    )
    assert record.memory.in_backoff(59.0) and not record.memory.in_backoff(60.0)
    assert (record.generation, record.resource_version) == (4, "77")


def test_a_malformed_lifecycle_memory_is_no_memory() -> None:
    obj = {
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        "status": {"lifecycle": {"rollbacks": -1, "backoffUntil": "soon"}},
    }
    assert pod_group_from(obj).memory == GangMemory()


def test_kube_schedulers_refusal_of_a_pod_is_read_unless_it_preempts_for_it() -> None:
    refused = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available",
    }
    obj: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {},
        "status": {"phase": "Pending", "conditions": [refused]},
    }
    assert pod_from(obj).refusal == "0/3 nodes are available"
    obj["status"]["nominatedNodeName"] = "n1"
    assert pod_from(obj).refusal is None


def test_a_pod_record_keeps_its_creation_and_whether_native_gang_scheduling_has_it() -> None:
    obj = pod("a", group="g")
    obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    obj["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    record = pod_from(obj)
    assert record.created == 1767225600.0 and record.native
    assert not pod_from(pod("b")).native and pod_from(pod("b")).created is None


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [(None, None), ("example.com/rack", "example.com/rack"), ("not a key", None)],
)
def test_a_preferred_level_is_read_and_a_malformed_one_ignored(
    annotation: str | None, expected: str | None
) -> None:
    assert pod_group_from(pod_group("g", preferred_key=annotation)).preferred_key == expected


def test_slices_are_read_when_both_annotations_are_valid() -> None:
    assert pod_group_from(pod_group("g", slicing=("rack", 8))).slicing == ("rack", 8)
    assert pod_group_from(pod_group("g", slicing=("rack", 0))).slicing is None
    assert pod_group_from(pod_group("g", slicing=("not a key", 8))).slicing is None
    assert pod_group_from(pod_group("g")).slicing is None


def test_a_pods_completion_index_is_its_label_else_its_annotation() -> None:
    labelled = pod("a", labels={COMPLETION_INDEX_KEY: "3"})
    assert pod_from(labelled).index == 3
    annotated = pod("b")
    annotated["metadata"]["annotations"] = {COMPLETION_INDEX_KEY: "5"}
    assert pod_from(annotated).index == 5
    assert pod_from(pod("c", labels={COMPLETION_INDEX_KEY: "x"})).index is None
    assert pod_from(pod("d")).index is None
