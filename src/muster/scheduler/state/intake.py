"""Kubernetes objects (plain mappings) turned into the engine's small immutable records.

Conversion happens once, when an object is applied, so a scheduling cycle never
touches raw dictionaries. Anything malformed raises `IntakeError`, which the cluster
state records and survives: one odd object must never stop scheduling for the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.api.constants import (
    BYPASSED_ANNOTATION,
    COMPLETION_INDEX_KEY,
    COMPLETIONS_ANNOTATION,
    CONDITION_INITIALLY_SCHEDULED,
    CONDITION_SCHEDULED,
    CRON_JOB_ANNOTATION,
    DISRUPTION_SINGLE,
    PAUSED_ANNOTATION,
    POD_GROUP_LABEL,
    PREEMPT_NEVER,
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_SLICE_ANNOTATION,
    TOPOLOGY_SLICE_SIZE_ANNOTATION,
)
from muster.api.gates import has_gang_gate
from muster.api.keys import GroupKey, PodKey, resource_version, shared
from muster.api.names import is_label_key
from muster.api.numbers import positive_integer
from muster.api.wire import FINISHED_PHASES
from muster.scheduler.devices.intake import PodClaim, pod_claims
from muster.scheduler.memory.gang_memory import NO_MEMORY, GangMemory, gang_memory_from
from muster.scheduler.memory.refusals import RefusalMemory, refusals_from
from muster.scheduler.memory.runtimes import Runtime, runtime_from
from muster.scheduler.objects.conditions import admitted
from muster.scheduler.objects.fields import (
    IntakeError,
    canonical,
    integer_field,
    list_field,
    mapping_field,
    shared_json,
    shared_string_map,
    string_map,
)
from muster.scheduler.objects.quantity import QuantityError, to_amount
from muster.scheduler.objects.requests import pod_requests
from muster.scheduler.objects.times import parse_time, parse_timestamp
from muster.scheduler.rules.node_affinity import Requirement, Term
from muster.scheduler.rules.pod_terms import NO_RULES, InterPodRules, inter_pod_rules
from muster.scheduler.rules.taints import Taint, Toleration, taint_from, toleration_from
from muster.scheduler.state.pod_status import bound_at, finished_at, refusal_message

POD_COUNT = "pods"


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
    labels: Mapping[str, str] = field(default_factory=dict)
    terminating: bool = False  # deletionTimestamp set: spread no longer counts it
    claims: tuple[str, ...] = ()  # PersistentVolumeClaims it mounts (its namespace), sorted
    inter_pod: InterPodRules = NO_RULES  # kept for every pod: bound pods repel too
    phase: str = "Pending"  # status.phase, for the PodGroup's pod counts
    refused: bool = False  # kube-scheduler refused to bind the pod
    # Its words when it did: a retry may reword them, which alone is no reason for a
    # cycle (the next one that runs for another reason reads the newest words).
    refusal: str | None = field(default=None, compare=False)
    started: float | None = None  # status.startTime
    bound: float | None = None  # when it was bound (`pod_status.bound_at`)
    finished: float | None = None  # when its last container terminated
    runtime: Runtime | None = None  # its own expected runtime (see `runtimes`)
    other_gates: bool = False  # scheduling gates besides the gang gate: not queued yet
    created: float | None = None  # metadata.creationTimestamp
    native: bool = False  # spec.schedulingGroup: the cluster's own gang scheduling has it
    index: int | None = None  # its Job's completion index: what orders a gang's slices
    device_claims: tuple[PodClaim, ...] = ()  # spec.resourceClaims, resolved (`devices.intake`)
    bypassed: bool = False  # created bound to its node, past gang admission (the webhook's mark)

    @property
    def placeable(self) -> bool:
        """A gated member the engine may place: not finished, not being deleted (a pod
        on its way out is not released: its Job replaces it if it still needs one)."""
        return self.gated and not self.terminal and not self.terminating and self.rules is not None


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
    memory: GangMemory = NO_MEMORY  # status.lifecycle (`memory.gang_memory`)
    reason: str | None = None  # the PodGroupScheduled condition's reason
    admitted_at: float | None = None  # status.admittedAt
    generation: int = 0  # metadata.generation, for status.observedGeneration
    # The version a status write is computed from; not compared: a new version alone
    # (our own write's answer, then its watch event) changes nothing the engine reads.
    resource_version: str = field(default="", compare=False)
    status: Mapping[str, Any] = field(default_factory=dict)  # as read, for what it keeps
    runtime: Runtime | None = None  # its pods' expected runtime (see `runtimes`)
    cron_job: str | None = None  # the CronJob whose Job it was made for, if any
    preferred_key: str | None = None  # the narrowest topology level it prefers (see `levels`)
    slicing: tuple[str, int] | None = None  # its slices' level and size (see `slices`)
    paused: bool = False  # its Job runs no pods now (`PAUSED_ANNOTATION`)
    completions: int | None = None  # its Job's (`COMPLETIONS_ANNOTATION`; `ClusterState.quorum`)

    @property
    def falls_whole(self) -> bool:
        """A gang disrupted together (disruptionMode all): one victim takes them all."""
        return self.gang and not self.disrupt_single


@dataclass(frozen=True, slots=True)
class PriorityClassRecord:
    name: str
    value: int
    global_default: bool


def name_of(obj: Mapping[str, Any]) -> tuple[str, str]:
    if not isinstance(obj, Mapping):
        raise IntakeError("not a mapping")
    metadata = mapping_field(obj.get("metadata"), "metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise IntakeError("metadata.name is missing")
    namespace = metadata.get("namespace") or "default"
    if not isinstance(namespace, str):
        raise IntakeError("metadata.namespace must be a string")
    return shared(namespace), shared(name)


def node_from(obj: Mapping[str, Any]) -> NodeRecord:
    _, name = name_of(obj)
    metadata = mapping_field(obj.get("metadata"), "metadata")
    spec = mapping_field(obj.get("spec"), "spec")
    status = mapping_field(obj.get("status"), "status")
    raw_allocatable = mapping_field(
        status.get("allocatable") or status.get("capacity"), "allocatable"
    )
    try:
        allocatable = {str(res): to_amount(str(res), raw) for res, raw in raw_allocatable.items()}
    except QuantityError as error:
        raise IntakeError(f"status.allocatable: {error}") from error
    return NodeRecord(
        name=name,
        allocatable=tuple(sorted(allocatable.items())),
        labels=string_map(metadata.get("labels"), "metadata.labels"),
        taints=tuple(
            taint_from(raw, "spec.taints[]")
            for raw in list_field(spec.get("taints"), "spec.taints")
        ),
        unschedulable=bool(spec.get("unschedulable", False)),
    )


def _requirement(raw: object, where: str) -> Requirement:
    requirement = mapping_field(raw, where)
    values = list_field(requirement.get("values"), f"{where}.values")
    return Requirement(
        key=str(requirement.get("key", "")),
        operator=str(requirement.get("operator", "")),
        values=tuple(str(value) for value in values),
    )


def node_term(raw: object) -> Term:
    term = mapping_field(raw, "nodeSelectorTerms[]")
    return Term(
        match_expressions=tuple(
            _requirement(item, "matchExpressions[]")
            for item in list_field(term.get("matchExpressions"), "matchExpressions")
        ),
        match_fields=tuple(
            _requirement(item, "matchFields[]")
            for item in list_field(term.get("matchFields"), "matchFields")
        ),
    )


def required_terms(spec: Mapping[str, Any]) -> tuple[Term, ...] | None:
    """A pod's required node affinity terms; None when it requires none."""
    affinity = mapping_field(spec.get("affinity"), "spec.affinity")
    node_affinity = mapping_field(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    terms = mapping_field(required, "requiredDuringSchedulingIgnoredDuringExecution")
    return tuple(
        node_term(raw) for raw in list_field(terms.get("nodeSelectorTerms"), "nodeSelectorTerms")
    )


def _rules(spec: Mapping[str, Any]) -> PlacementRules:
    return PlacementRules(
        node_selector=tuple(sorted(string_map(spec.get("nodeSelector"), "nodeSelector").items())),
        required_terms=required_terms(spec),
        tolerations=tuple(
            toleration_from(raw, "spec.tolerations[]")
            for raw in list_field(spec.get("tolerations"), "spec.tolerations")
        ),
    )


def _gates(spec: Mapping[str, Any]) -> tuple[bool, bool]:
    """(the gang gate, any other gate): kube-scheduler queues a pod only once it has
    none (its SchedulingGates PreEnqueue plugin)."""
    gates = list_field(spec.get("schedulingGates"), "spec.schedulingGates")
    gang = has_gang_gate(gates)
    return gang, len(gates) > int(gang)


def _host_ports(spec: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    """(protocol, port) pairs the pod takes on its node; with hostNetwork every
    container port is a host port (the API server's defaulting, which offline YAML
    has not been through)."""
    host_network = spec.get("hostNetwork") is True
    ports: set[tuple[str, int]] = set()
    for container in list_field(spec.get("containers"), "spec.containers"):
        for raw in list_field(mapping_field(container, "container").get("ports"), "ports"):
            port = mapping_field(raw, "ports[]")
            number = port.get("hostPort") or (port.get("containerPort") if host_network else None)
            if number:
                ports.add(
                    (str(port.get("protocol") or "TCP"), integer_field(number, "hostPort") or 0)
                )
    return tuple(sorted(ports))


def _claims(spec: Mapping[str, Any], pod_name: str) -> tuple[str, ...]:
    """The claims of `persistentVolumeClaim` volumes, and of generic ephemeral volumes
    (named `<pod>-<volume>` by the ephemeral volume controller)."""
    claims: set[str] = set()
    for raw in list_field(spec.get("volumes"), "spec.volumes"):
        volume = mapping_field(raw, "spec.volumes[]")
        claim = mapping_field(volume.get("persistentVolumeClaim"), "persistentVolumeClaim")
        if claim.get("claimName"):
            claims.add(str(claim["claimName"]))
        elif volume.get("ephemeral") is not None:
            claims.add(f"{pod_name}-{volume.get('name', '')}")
    return tuple(sorted(claims))


def _marked_bypassed(metadata: Mapping[str, Any]) -> bool:
    annotations = metadata.get("annotations")
    return isinstance(annotations, Mapping) and BYPASSED_ANNOTATION in annotations


def pod_from(obj: Mapping[str, Any]) -> PodRecord:
    namespace, name = name_of(obj)
    metadata = mapping_field(obj.get("metadata"), "metadata")
    spec = mapping_field(obj.get("spec"), "spec")
    status = mapping_field(obj.get("status"), "status")
    try:
        requests = pod_requests(spec)
    except QuantityError as error:
        raise IntakeError(f"resources: {error}") from error
    requests.pop(POD_COUNT, None)
    node_name = spec.get("nodeName") or None
    terminal = str(status.get("phase")) in FINISHED_PHASES
    labels = shared_string_map(metadata.get("labels"), "metadata.labels")
    group_name = labels.get(POD_GROUP_LABEL)
    priority_class = spec.get("priorityClassName")
    gated, other_gates = _gates(spec)
    refusal = refusal_message(status)
    return PodRecord(
        key=PodKey(namespace, name),
        requests=canonical(tuple(requests.items())),
        node_name=shared(node_name) if node_name else None,
        group_name=group_name or None,
        gated=gated,
        terminal=terminal,
        priority=integer_field(spec.get("priority"), "spec.priority"),
        priority_class=shared(priority_class) if priority_class else None,
        rules=None if node_name or terminal else canonical(_rules(spec)),
        host_ports=_host_ports(spec),
        labels=labels,
        terminating=metadata.get("deletionTimestamp") is not None,
        claims=_claims(spec, name),
        inter_pod=NO_RULES if terminal else canonical(inter_pod_rules(spec, namespace, labels)),
        phase=shared(status.get("phase") or "Pending"),
        refused=refusal is not None,
        refusal=refusal,
        started=parse_time(status.get("startTime")),
        bound=bound_at(status),
        finished=finished_at(status) if terminal else None,
        runtime=runtime_from(
            string_map(metadata.get("annotations"), "metadata.annotations"),
            spec.get("activeDeadlineSeconds"),
        ),
        other_gates=other_gates,
        created=parse_time(metadata.get("creationTimestamp")),
        native=bool(spec.get("schedulingGroup")),
        index=_completion_index(labels, metadata.get("annotations")),
        device_claims=pod_claims(spec, status),
        bypassed=bool(node_name) and bool(group_name) and _marked_bypassed(metadata),
    )


def _completion_index(labels: Mapping[str, str], annotations: object) -> int | None:
    """An Indexed Job's pod's index (its label, else its annotation); None without one."""
    value = labels.get(COMPLETION_INDEX_KEY)
    if value is None and isinstance(annotations, Mapping):
        value = annotations.get(COMPLETION_INDEX_KEY)
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """The status condition of that type; empty when there is none."""
    for raw in list_field(status.get("conditions"), "status.conditions"):
        condition = mapping_field(raw, "status.conditions[]")
        if condition.get("type") == kind:
            return condition
    return {}


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
    constraints = mapping_field(spec.get("schedulingConstraints"), "spec.schedulingConstraints")
    topology = list_field(constraints.get("topology"), "schedulingConstraints.topology")
    if not topology:
        return None
    key = mapping_field(topology[0], "topology[0]").get("key")
    if not isinstance(key, str) or not key:
        raise IntakeError("schedulingConstraints.topology[0].key is missing")
    return key


def pod_group_from(obj: Mapping[str, Any]) -> GroupRecord:
    namespace, name = name_of(obj)
    metadata = mapping_field(obj.get("metadata"), "metadata")
    spec = mapping_field(obj.get("spec"), "spec")
    status = mapping_field(obj.get("status"), "status")
    annotations = string_map(metadata.get("annotations"), "metadata.annotations")
    policy = mapping_field(spec.get("schedulingPolicy"), "spec.schedulingPolicy")
    gang = policy.get("gang")
    if gang is None and "basic" not in policy:
        raise IntakeError("spec.schedulingPolicy needs gang or basic")
    min_count = integer_field(mapping_field(gang, "gang").get("minCount"), "gang.minCount")
    if gang is not None and (min_count is None or min_count < 1):
        raise IntakeError("spec.schedulingPolicy.gang.minCount must be at least 1")
    priority_class = spec.get("priorityClassName")
    disruption = mapping_field(spec.get("disruptionMode"), "spec.disruptionMode")
    created = parse_timestamp(metadata.get("creationTimestamp"))
    plan = string_map(status.get("plan"), "status.plan")
    kept_status = shared_json(status)
    if "plan" in kept_status:
        kept_status["plan"] = plan  # one copy for both: the plan is most of a status
    return GroupRecord(
        key=GroupKey(namespace, name),
        gang=gang is not None,
        min_count=min_count or 1,
        topology_key=_topology_key(spec),
        priority=integer_field(spec.get("priority"), "spec.priority"),
        priority_class=shared(priority_class) if priority_class else None,
        preempt=spec.get("preemptionPolicy") != PREEMPT_NEVER,
        disrupt_single=DISRUPTION_SINGLE in disruption,
        created=created,
        waiting_since=_waiting_since(status, created),
        admitted=admitted(status),
        plan=plan,
        refusals=refusals_from(status),
        memory=gang_memory_from(status),
        runtime=runtime_from(annotations),
        cron_job=annotations.get(CRON_JOB_ANNOTATION) or None,
        preferred_key=_preferred_key(annotations),
        slicing=_slicing(annotations),
        paused=PAUSED_ANNOTATION in annotations,
        completions=positive_integer(annotations.get(COMPLETIONS_ANNOTATION)),
        reason=_reason(status),
        admitted_at=parse_time(status.get("admittedAt")),
        generation=integer_field(metadata.get("generation"), "metadata.generation") or 0,
        resource_version=resource_version(obj),
        status=kept_status,
    )


def _preferred_key(annotations: Mapping[str, str]) -> str | None:
    """The preferred level; one that is not a label key (admission refuses it) is none."""
    key = annotations.get(TOPOLOGY_PREFERRED_ANNOTATION)
    return key if key is not None and is_label_key(key) else None


def _slicing(annotations: Mapping[str, str]) -> tuple[str, int] | None:
    """The slice level and size; none unless both are valid (admission refuses the rest)."""
    key = annotations.get(TOPOLOGY_SLICE_ANNOTATION)
    size = positive_integer(annotations.get(TOPOLOGY_SLICE_SIZE_ANNOTATION))
    return (key, size) if key is not None and is_label_key(key) and size is not None else None


def _reason(status: Mapping[str, Any]) -> str | None:
    reason = _condition(status, CONDITION_SCHEDULED).get("reason")
    return str(reason) if reason else None


def priority_class_from(obj: Mapping[str, Any]) -> PriorityClassRecord:
    _, name = name_of(obj)
    value = integer_field(obj.get("value"), "value")
    return PriorityClassRecord(
        name=name, value=value or 0, global_default=bool(obj.get("globalDefault", False))
    )
