"""The kinds of object the engine takes in, and what it keeps of each.

`ClusterStore.apply` and `ClusterStore.delete` are the one door into the engine's
state, for the operator, `simulate` and `replay` alike; behind it, each kind says how
an object of it is put into the store (its record built here, raising `IntakeError`
when the engine cannot use it, and handed to the store's mutators), how it is taken
out, and which of the engine's own frozen records stands for it: the record before
an event and the record after it say whether the event changed anything the engine
reads, so that a node's heartbeat or a pod's unrelated annotation starts no cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from muster.api.keys import GroupKey, PodKey, object_key
from muster.api.preferences import kueue_levels
from muster.scheduler.devices.kinds import DEVICE_CLUSTER_SCOPED, DEVICE_KINDS
from muster.scheduler.memory.dropped_field import dropped_field
from muster.scheduler.objects.fields import (
    IntakeError,
    integer_field,
    list_field,
    mapping_field,
    string_map,
)
from muster.scheduler.rules.budgets import Budget
from muster.scheduler.rules.pod_terms import label_selector
from muster.scheduler.state.intake import (
    name_of,
    node_from,
    node_term,
    pod_from,
    pod_group_from,
    priority_class_from,
)

if TYPE_CHECKING:
    from muster.scheduler.state.store import ClusterStore

ObjectKey = tuple[str, str, str]  # kind, namespace ("" when cluster-scoped), name
CLUSTER_SCOPED = frozenset(
    {"Node", "PriorityClass", "Namespace", "PersistentVolume", "Topology", *DEVICE_CLUSTER_SCOPED}
)


class Rejected(NamedTuple):
    """Why the engine skips an object, and the version of it that it skips."""

    reason: str
    version: str  # metadata.resourceVersion


class Applied(NamedTuple):
    """What an event did to the state, and so what the operator does with it: start a
    cycle (`wakes`), write it to the trace (`traced`)."""

    rejected: str | None  # why the engine skips the object (None: it was taken in)
    changed: bool  # whether anything the engine reads changed (its record, its rejection)
    wakes: bool  # whether the change calls for a cycle of its own
    traced: bool  # whether a replay needs the event to rebuild the same state


# A change in what a budget allows calls for no cycle of its own: it only weighs in a
# preemption that something else asks for.
_NO_CYCLE_OF_THEIR_OWN = frozenset({"PodDisruptionBudget"})
# Jobs matter only when the API server dropped the field their pods were gated for
# (`dropped_field`); every other Job, nearly all, leaves no record, and its events are
# left out of the trace.
_TRACED_WHILE_KEPT = frozenset({"Job"})


def applied(kind: str, rejected: str | None, before: object, after: object) -> Applied:
    """What an event did, from what the engine kept of the object before and after."""
    changed = before != after
    return Applied(
        rejected,
        changed,
        wakes=changed and kind not in _NO_CYCLE_OF_THEIR_OWN,
        traced=kind not in _TRACED_WHILE_KEPT or before != (None, None) or changed,
    )


class Kind(NamedTuple):
    """How the state takes in, lets go of and records the objects of one kind."""

    put: Callable[[ClusterStore, Mapping[str, Any]], None]  # raises IntakeError
    remove: Callable[[ClusterStore, str, str], object]  # namespace, name
    record: Callable[[ClusterStore, str, str], object]  # None when it keeps none


def key_of(kind: str, obj: Mapping[str, Any]) -> ObjectKey:
    """The object's key as the engine files it: a namespaced object without a
    namespace (offline YAML) is in "default", as the API server would put it."""
    namespace, name = object_key(obj)
    return (kind, scoped(kind, namespace or "default"), name)


def scoped(kind: str, namespace: str) -> str:
    """The namespace as the engine files the kind's objects ("" when cluster-scoped)."""
    return "" if kind in CLUSTER_SCOPED else namespace


def budget_from(obj: Mapping[str, Any]) -> Budget:
    """A policy/v1 PodDisruptionBudget: its selector and what its status allows now.

    A budget whose controller has not counted it yet allows nothing (its status has
    no disruptionsAllowed), as the API server's eviction handler treats it.
    """
    namespace, name = name_of(obj)
    spec = mapping_field(obj.get("spec"), "spec")
    status = mapping_field(obj.get("status"), "status")
    allowed = integer_field(status.get("disruptionsAllowed"), "status.disruptionsAllowed")
    disrupted = mapping_field(status.get("disruptedPods"), "status.disruptedPods")
    return Budget(
        namespace=namespace,
        name=name,
        selector=label_selector(spec.get("selector"), "spec.selector"),
        disruptions_allowed=allowed or 0,
        disrupted=frozenset(str(pod) for pod in disrupted),
    )


def _put_namespace(state: ClusterStore, obj: Mapping[str, Any]) -> None:
    """A Namespace's labels, for the namespaceSelector of pod (anti-)affinity terms."""
    _, name = name_of(obj)
    metadata = mapping_field(obj.get("metadata"), "metadata")
    state.namespace_labels[name] = string_map(metadata.get("labels"), "metadata.labels")


def _put_claim(state: ClusterStore, obj: Mapping[str, Any]) -> None:
    """A PersistentVolumeClaim: which volume it is bound to."""
    namespace, name = name_of(obj)
    volume = mapping_field(obj.get("spec"), "spec").get("volumeName")
    state.volumes.apply_claim(namespace, name, str(volume) if volume else None)


def _put_volume(state: ClusterStore, obj: Mapping[str, Any]) -> None:
    """A PersistentVolume: the nodes it can be used from (None: any)."""
    _, name = name_of(obj)
    spec = mapping_field(obj.get("spec"), "spec")
    required = mapping_field(spec.get("nodeAffinity"), "spec.nodeAffinity").get("required")
    terms = None
    if required is not None:
        raw = mapping_field(required, "spec.nodeAffinity.required").get("nodeSelectorTerms")
        terms = tuple(node_term(term) for term in list_field(raw, "nodeSelectorTerms"))
    state.volumes.apply_volume(name, terms)


def _put_budget(state: ClusterStore, obj: Mapping[str, Any]) -> None:
    """A PodDisruptionBudget: which pods it protects and how many may go now."""
    record = budget_from(obj)
    state.budgets[(record.namespace, record.name)] = record


def _put_job(state: ClusterStore, obj: Mapping[str, Any]) -> None:
    """A Job matters only when the API server dropped the field its pods were gated
    for (`dropped_field`); every other Job is forgotten as it comes."""
    _, namespace, name = key_of("Job", obj)
    key = (namespace, name)
    record = dropped_field(obj)
    if record is None:
        state.dropped_fields.pop(key, None)
    else:
        state.dropped_fields[key] = record


def _put_topology(state: ClusterStore, obj: Mapping[str, Any]) -> None:
    """A Kueue Topology: the order of the cluster's topology levels, widest first."""
    _, name = name_of(obj)
    levels = kueue_levels(obj)
    if levels is None:
        raise IntakeError("not a Kueue Topology with a node label key at each level")
    state.topologies[name] = levels


KINDS: dict[str, Kind] = {
    "Namespace": Kind(
        _put_namespace,
        lambda state, _, name: state.namespace_labels.pop(name, None),
        lambda state, _, name: state.namespace_labels.get(name),
    ),
    "PersistentVolumeClaim": Kind(
        _put_claim,
        lambda state, namespace, name: state.volumes.delete_claim(namespace, name),
        lambda state, namespace, name: state.volumes.claim(namespace, name),
    ),
    "PersistentVolume": Kind(
        _put_volume,
        lambda state, _, name: state.volumes.delete_volume(name),
        lambda state, _, name: state.volumes.volume(name),
    ),
    "PodDisruptionBudget": Kind(
        _put_budget,
        lambda state, namespace, name: state.budgets.pop((namespace, name), None),
        lambda state, namespace, name: state.budgets.get((namespace, name)),
    ),
    "Job": Kind(
        _put_job,
        lambda state, namespace, name: state.dropped_fields.pop((namespace, name), None),
        lambda state, namespace, name: state.dropped_fields.get((namespace, name)),
    ),
    "Node": Kind(
        lambda state, obj: state.put_node(node_from(obj)),
        lambda state, _, name: state.remove_node(name),
        lambda state, _, name: state.node_record(name),
    ),
    "Pod": Kind(
        lambda state, obj: state.put_pod(pod_from(obj)),
        lambda state, namespace, name: state.remove_pod(PodKey(namespace, name)),
        lambda state, namespace, name: state.pod_record(PodKey(namespace, name)),
    ),
    "PodGroup": Kind(
        lambda state, obj: state.put_pod_group(pod_group_from(obj)),
        lambda state, namespace, name: state.remove_pod_group(GroupKey(namespace, name)),
        lambda state, namespace, name: state.groups.get(GroupKey(namespace, name)),
    ),
    "Topology": Kind(
        _put_topology,
        lambda state, _, name: state.topologies.pop(name, None),
        lambda state, _, name: state.topologies.get(name),
    ),
    "PriorityClass": Kind(
        lambda state, obj: state.put_priority_class(priority_class_from(obj)),
        lambda state, _, name: state.remove_priority_class(name),
        lambda state, _, name: state.priority_classes.get(name),
    ),
    **{kind: Kind(*door) for kind, door in DEVICE_KINDS.items()},
}


# Kinds whose objects mark what they change themselves (a pod its node's capacity or
# its group, a PodGroup itself); a change to any other kind changes the world (`marks`).
MARKING_THEMSELVES = frozenset({"Pod", "PodGroup"})
