"""Kubernetes objects (plain mappings) turned into the engine's small immutable records.

Conversion happens once, when an object is applied, so a scheduling cycle never
touches raw dictionaries. Anything malformed raises `IntakeError`, which the cluster
state records and survives: one odd object must never stop scheduling for the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from muster.api.constants import (
    CONDITION_INITIALLY_SCHEDULED,
    CONDITION_SCHEDULED,
    DISRUPTION_SINGLE,
    GANG_GATE,
    POD_GROUP_LABEL,
    PREEMPT_NEVER,
)
from muster.scheduler.node_affinity import Requirement, Term
from muster.scheduler.quantity import QuantityError, to_amount
from muster.scheduler.refusals import RefusalMemory, refusals_from
from muster.scheduler.requests import pod_requests
from muster.scheduler.results import GroupKey, PodKey
from muster.scheduler.taints import Taint, Toleration

POD_COUNT = "pods"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class IntakeError(ValueError):
    """An object the engine cannot use; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class NodeRecord:
    name: str
    allocatable: tuple[tuple[str, int], ...]  # sorted by resource; includes "pods"
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool

    def placement_view(self) -> tuple[object, ...]:
        """What predicates read: a change here invalidates cached node masks."""
        return (tuple(sorted(self.labels.items())), self.taints, self.unschedulable)


@dataclass(frozen=True, slots=True)
class PlacementRules:
    """A pod's static constraints; equal rules give equal node masks (the cache key)."""

    node_selector: tuple[tuple[str, str], ...]
    required_terms: tuple[Term, ...] | None
    tolerations: tuple[Toleration, ...]


@dataclass(frozen=True, slots=True)
class PodRecord:
    key: PodKey
    requests: tuple[tuple[str, int], ...]  # sorted by resource; without the pod count
    node_name: str | None
    group_name: str | None
    gated: bool  # carries the gang gate
    terminal: bool
    priority: int | None  # spec.priority when set
    priority_class: str | None
    rules: PlacementRules | None  # only for pods still to be placed
    host_ports: tuple[tuple[str, int], ...] = ()  # (protocol, port), sorted


@dataclass(frozen=True, slots=True)
class GroupRecord:
    key: GroupKey
    gang: bool  # False: basic policy, left to kube-scheduler
    min_count: int
    topology_key: str | None
    priority: int | None
    priority_class: str | None
    preempt: bool  # preemptionPolicy PreemptLowerPriority
    disrupt_single: bool  # disruptionMode single (else the gang falls together)
    created: float | None  # seconds since the epoch
    waiting_since: float | None  # when it last started waiting for admission (see below)
    admitted: bool  # PodGroupScheduled=True
    plan: Mapping[str, str]  # pod name -> node name
    refusals: RefusalMemory | None = None  # status.refusals (see `refusals`)


@dataclass(frozen=True, slots=True)
class PriorityClassRecord:
    name: str
    value: int
    global_default: bool


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if type(value) is dict:  # the common case, without the slower ABC check
        return value
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise IntakeError(f"{where} must be a mapping")
    return value


def _list(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise IntakeError(f"{where} must be a list")
    return value


def _name(obj: Mapping[str, Any]) -> tuple[str, str]:
    if not isinstance(obj, Mapping):
        raise IntakeError("not a mapping")
    metadata = _mapping(obj.get("metadata"), "metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise IntakeError("metadata.name is missing")
    namespace = metadata.get("namespace") or "default"
    if not isinstance(namespace, str):
        raise IntakeError("metadata.namespace must be a string")
    return namespace, name


def _string_map(value: object, where: str) -> dict[str, str]:
    return {str(key): str(item) for key, item in _mapping(value, where).items()}


def _integer(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise IntakeError(f"{where} must be an integer")
    return value


def _taint(raw: object) -> Taint:
    taint = _mapping(raw, "spec.taints[]")
    return Taint(
        str(taint.get("key", "")), str(taint.get("value") or ""), str(taint.get("effect", ""))
    )


def _toleration(raw: object) -> Toleration:
    toleration = _mapping(raw, "spec.tolerations[]")
    return Toleration(
        key=str(toleration.get("key") or ""),
        operator=str(toleration.get("operator") or "Equal"),
        value=str(toleration.get("value") or ""),
        effect=str(toleration.get("effect") or ""),
    )


def node_from(obj: Mapping[str, Any]) -> NodeRecord:
    _, name = _name(obj)
    metadata = _mapping(obj.get("metadata"), "metadata")
    spec = _mapping(obj.get("spec"), "spec")
    status = _mapping(obj.get("status"), "status")
    raw_allocatable = _mapping(status.get("allocatable") or status.get("capacity"), "allocatable")
    try:
        allocatable = {str(res): to_amount(str(res), raw) for res, raw in raw_allocatable.items()}
    except QuantityError as error:
        raise IntakeError(f"status.allocatable: {error}") from error
    return NodeRecord(
        name=name,
        allocatable=tuple(sorted(allocatable.items())),
        labels=_string_map(metadata.get("labels"), "metadata.labels"),
        taints=tuple(_taint(raw) for raw in _list(spec.get("taints"), "spec.taints")),
        unschedulable=bool(spec.get("unschedulable", False)),
    )


def _requirement(raw: object, where: str) -> Requirement:
    requirement = _mapping(raw, where)
    values = _list(requirement.get("values"), f"{where}.values")
    return Requirement(
        key=str(requirement.get("key", "")),
        operator=str(requirement.get("operator", "")),
        values=tuple(str(value) for value in values),
    )


def _term(raw: object) -> Term:
    term = _mapping(raw, "nodeSelectorTerms[]")
    return Term(
        match_expressions=tuple(
            _requirement(item, "matchExpressions[]")
            for item in _list(term.get("matchExpressions"), "matchExpressions")
        ),
        match_fields=tuple(
            _requirement(item, "matchFields[]")
            for item in _list(term.get("matchFields"), "matchFields")
        ),
    )


def _required_terms(spec: Mapping[str, Any]) -> tuple[Term, ...] | None:
    affinity = _mapping(spec.get("affinity"), "spec.affinity")
    node_affinity = _mapping(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    terms = _mapping(required, "requiredDuringSchedulingIgnoredDuringExecution")
    return tuple(_term(raw) for raw in _list(terms.get("nodeSelectorTerms"), "nodeSelectorTerms"))


def _rules(spec: Mapping[str, Any]) -> PlacementRules:
    return PlacementRules(
        node_selector=tuple(sorted(_string_map(spec.get("nodeSelector"), "nodeSelector").items())),
        required_terms=_required_terms(spec),
        tolerations=tuple(
            _toleration(raw) for raw in _list(spec.get("tolerations"), "spec.tolerations")
        ),
    )


def _has_gang_gate(spec: Mapping[str, Any]) -> bool:
    gates = _list(spec.get("schedulingGates"), "spec.schedulingGates")
    return any(isinstance(gate, Mapping) and gate.get("name") == GANG_GATE for gate in gates)


def _host_ports(spec: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    """(protocol, port) pairs the pod takes on its node; with hostNetwork every
    container port is a host port (the API server's defaulting, which offline YAML
    has not been through)."""
    host_network = spec.get("hostNetwork") is True
    ports: set[tuple[str, int]] = set()
    for container in _list(spec.get("containers"), "spec.containers"):
        for raw in _list(_mapping(container, "container").get("ports"), "ports"):
            port = _mapping(raw, "ports[]")
            number = port.get("hostPort") or (port.get("containerPort") if host_network else None)
            if number:
                ports.add((str(port.get("protocol") or "TCP"), _integer(number, "hostPort") or 0))
    return tuple(sorted(ports))


def pod_from(obj: Mapping[str, Any]) -> PodRecord:
    namespace, name = _name(obj)
    metadata = _mapping(obj.get("metadata"), "metadata")
    spec = _mapping(obj.get("spec"), "spec")
    status = _mapping(obj.get("status"), "status")
    try:
        requests = pod_requests(spec)
    except QuantityError as error:
        raise IntakeError(f"resources: {error}") from error
    requests.pop(POD_COUNT, None)
    node_name = spec.get("nodeName") or None
    terminal = str(status.get("phase")) in TERMINAL_PHASES
    group_name = _mapping(metadata.get("labels"), "metadata.labels").get(POD_GROUP_LABEL)
    priority_class = spec.get("priorityClassName")
    return PodRecord(
        key=PodKey(namespace, name),
        requests=tuple(requests.items()),
        node_name=str(node_name) if node_name else None,
        group_name=str(group_name) if group_name else None,
        gated=_has_gang_gate(spec),
        terminal=terminal,
        priority=_integer(spec.get("priority"), "spec.priority"),
        priority_class=str(priority_class) if priority_class else None,
        rules=None if node_name or terminal else _rules(spec),
        host_ports=_host_ports(spec),
    )


def parse_timestamp(raw: object) -> float | None:
    """RFC 3339 as the API server writes it (`2026-11-30T04:26:03Z`); None when absent."""
    if raw is None:
        return None
    if isinstance(raw, datetime):
        return raw.timestamp()
    if not isinstance(raw, str):
        raise IntakeError("metadata.creationTimestamp must be an RFC 3339 string")
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError as error:
        raise IntakeError(f"metadata.creationTimestamp: {error}") from error


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """The status condition of that type; empty when there is none."""
    for raw in _list(status.get("conditions"), "status.conditions"):
        condition = _mapping(raw, "status.conditions[]")
        if condition.get("type") == kind:
            return condition
    return {}


def _admitted(status: Mapping[str, Any]) -> bool:
    return _condition(status, CONDITION_SCHEDULED).get("status") == "True"


def _waiting_since(status: Mapping[str, Any], created: float | None) -> float | None:
    """When the group last started waiting: since it was taken down (preempted or rolled
    back), if it was ever admitted; since its creation otherwise.

    A gang taken down waits afresh: counting from its creation would let it hold
    nodes against backfill the moment it is back in the queue. The moment it was taken
    down is when its PodGroupScheduled condition last turned False.
    """
    scheduled = _condition(status, CONDITION_SCHEDULED)
    initially = _condition(status, CONDITION_INITIALLY_SCHEDULED)
    if scheduled.get("status") != "False" or initially.get("status") != "True":
        return created
    try:
        return parse_timestamp(scheduled.get("lastTransitionTime")) or created
    except IntakeError:
        return created  # a malformed status must not keep the group out of the queue


def _topology_key(spec: Mapping[str, Any]) -> str | None:
    constraints = _mapping(spec.get("schedulingConstraints"), "spec.schedulingConstraints")
    topology = _list(constraints.get("topology"), "schedulingConstraints.topology")
    if not topology:
        return None
    key = _mapping(topology[0], "topology[0]").get("key")
    if not isinstance(key, str) or not key:
        raise IntakeError("schedulingConstraints.topology[0].key is missing")
    return key


def pod_group_from(obj: Mapping[str, Any]) -> GroupRecord:
    namespace, name = _name(obj)
    metadata = _mapping(obj.get("metadata"), "metadata")
    spec = _mapping(obj.get("spec"), "spec")
    status = _mapping(obj.get("status"), "status")
    policy = _mapping(spec.get("schedulingPolicy"), "spec.schedulingPolicy")
    gang = policy.get("gang")
    if gang is None and "basic" not in policy:
        raise IntakeError("spec.schedulingPolicy needs gang or basic")
    min_count = _integer(_mapping(gang, "gang").get("minCount"), "gang.minCount")
    if gang is not None and (min_count is None or min_count < 1):
        raise IntakeError("spec.schedulingPolicy.gang.minCount must be at least 1")
    priority_class = spec.get("priorityClassName")
    disruption = _mapping(spec.get("disruptionMode"), "spec.disruptionMode")
    created = parse_timestamp(metadata.get("creationTimestamp"))
    return GroupRecord(
        key=GroupKey(namespace, name),
        gang=gang is not None,
        min_count=min_count or 1,
        topology_key=_topology_key(spec),
        priority=_integer(spec.get("priority"), "spec.priority"),
        priority_class=str(priority_class) if priority_class else None,
        preempt=spec.get("preemptionPolicy") != PREEMPT_NEVER,
        disrupt_single=DISRUPTION_SINGLE in disruption,
        created=created,
        waiting_since=_waiting_since(status, created),
        admitted=_admitted(status),
        plan=_string_map(status.get("plan"), "status.plan"),
        refusals=refusals_from(status),
    )


def priority_class_from(obj: Mapping[str, Any]) -> PriorityClassRecord:
    _, name = _name(obj)
    value = _integer(obj.get("value"), "value")
    return PriorityClassRecord(
        name=name, value=value or 0, global_default=bool(obj.get("globalDefault", False))
    )
