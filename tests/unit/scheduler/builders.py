"""Plain Kubernetes objects for engine tests, as the API server would return them."""

from __future__ import annotations

from typing import Any

from muster.api.constants import (
    GANG_GATE,
    GATED_FOR_ANNOTATION,
    GATED_FOR_FIELD,
    POD_GROUP_LABEL,
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_SLICE_ANNOTATION,
    TOPOLOGY_SLICE_SIZE_ANNOTATION,
)
from muster.scheduler import ClusterState
from muster.scheduler.state.intake import node_from
from muster.scheduler.state.node_columns import NodeColumns
from muster.scheduler.state.predicates import NodeTable

Obj = dict[str, Any]


def node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    gpu: str | None = None,
    labels: dict[str, str] | None = None,
    taints: list[Obj] | None = None,
    unschedulable: bool = False,
) -> Obj:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpu is not None:
        allocatable["nvidia.com/gpu"] = gpu
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Obj:
    return {"key": key, "value": value, "effect": effect}


def pod(
    name: str,
    *,
    group: str | None = None,
    namespace: str = "default",
    cpu: str | None = "1",
    memory: str | None = None,
    gpu: str | None = None,
    node_name: str | None = None,
    gated: bool | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    phase: str | None = None,
    spec: Obj | None = None,
    labels: dict[str, str] | None = None,
) -> Obj:
    """A pod with one container; gated by default when it belongs to a group and is unbound.

    `labels` are added to the group label (when there is a group).
    """
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if gpu is not None:
        requests["nvidia.com/gpu"] = gpu
    pod_spec: Obj = {"containers": [{"name": "main", "resources": {"requests": requests}}]}
    if node_name is not None:
        pod_spec["nodeName"] = node_name
    if gated if gated is not None else (group is not None and node_name is None):
        pod_spec["schedulingGates"] = [{"name": GANG_GATE}]
    if priority is not None:
        pod_spec["priority"] = priority
    if priority_class is not None:
        pod_spec["priorityClassName"] = priority_class
    pod_spec.update(spec or {})
    pod_labels = {POD_GROUP_LABEL: group} if group is not None else {}
    pod_labels.update(labels or {})
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": pod_labels},
        "spec": pod_spec,
    }
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def pod_group(
    name: str,
    *,
    min_count: int | None = 1,
    namespace: str = "default",
    topology_key: str | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    preemption_policy: str | None = None,
    single: bool = False,
    created: str = "2026-01-01T00:00:00Z",
    admitted: bool = False,
    plan: dict[str, str] | None = None,
    preferred_key: str | None = None,
    slicing: tuple[str, int] | None = None,
) -> Obj:
    """A gang PodGroup (a basic one when `min_count` is None); `slicing`: its slices'
    level and size."""
    policy: Obj = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    spec: Obj = {
        "schedulingPolicy": policy,
        "disruptionMode": {"single": {}} if single else {"all": {}},
    }
    if topology_key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    if priority is not None:
        spec["priority"] = priority
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    status: Obj = {}
    if admitted:
        status["conditions"] = [
            {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}
        ]
    if plan is not None:
        status["plan"] = plan
    metadata: Obj = {"name": name, "namespace": namespace, "creationTimestamp": created}
    annotations: dict[str, str] = {}
    if preferred_key is not None:
        annotations[TOPOLOGY_PREFERRED_ANNOTATION] = preferred_key
    if slicing is not None:
        annotations[TOPOLOGY_SLICE_ANNOTATION] = slicing[0]
        annotations[TOPOLOGY_SLICE_SIZE_ANNOTATION] = str(slicing[1])
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def budget(
    name: str,
    match_labels: dict[str, str] | None,
    *,
    allowed: int,
    namespace: str = "default",
    disrupted: tuple[str, ...] = (),
) -> Obj:
    """A policy/v1 PodDisruptionBudget as its controller left it (`allowed` now)."""
    spec: Obj = {"minAvailable": 1}
    if match_labels is not None:
        spec["selector"] = {"matchLabels": match_labels}
    status: Obj = {"disruptionsAllowed": allowed}
    if disrupted:
        status["disruptedPods"] = {pod: "2026-01-01T00:00:00Z" for pod in disrupted}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": status,
    }


def job(
    name: str,
    *,
    namespace: str = "default",
    uid: str | None = None,
    gated_for_field: bool = True,
    scheduling: Obj | None = None,
    labels: dict[str, str] | None = None,
) -> Obj:
    """A Job as the API server stored it, its pod template gated for a gang named after
    it (by Muster's webhook for the native field, when `gated_for_field`). `scheduling`
    is the stored `spec.scheduling`: none when the API server dropped it."""
    template_metadata: Obj = {"labels": {POD_GROUP_LABEL: name}}
    if gated_for_field:
        template_metadata["annotations"] = {GATED_FOR_ANNOTATION: GATED_FOR_FIELD}
    spec: Obj = {
        "parallelism": 2,
        "template": {
            "metadata": template_metadata,
            "spec": {"schedulingGates": [{"name": GANG_GATE}], "containers": [{"name": "w"}]},
        },
    }
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"{name}-uid",
            "labels": labels or {},
        },
        "spec": spec,
    }


def priority_class(name: str, value: int, *, global_default: bool = False) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
    }


def node_table(*nodes: Obj) -> NodeTable:
    """A table of these nodes, in slot order."""
    columns = NodeColumns()
    for slot, obj in enumerate(nodes):
        columns.put(slot, node_from(obj))
    return columns.table()


def cluster(*objects: Obj) -> ClusterState:
    """A state with every object applied (by kind), and the DRA selectors their claims
    need judged, as the operator's judging process would; any rejection fails the test."""
    state = ClusterState()
    for obj in objects:
        problem = state.apply(obj["kind"], obj).rejected
        assert problem is None, problem
    state.devices.judge_in_place()
    return state


def gang(name: str, size: int, *, min_count: int | None = None, **pod_args: Any) -> list[Obj]:
    """A PodGroup with `size` gated members named `<name>-<i>`."""
    group_args = {
        key: pod_args.pop(key)
        for key in (
            "topology_key",
            "priority",
            "preemption_policy",
            "single",
            "created",
            "preferred_key",
            "slicing",
        )
        if key in pod_args
    }
    if "priority" in group_args:
        pod_args["priority"] = group_args["priority"]
    members = [pod(f"{name}-{index}", group=name, **pod_args) for index in range(size)]
    return [pod_group(name, min_count=min_count or size, **group_args), *members]
