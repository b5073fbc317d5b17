"""PodGroup: one gang of pods, the unit Muster admits all together or not at all.

The spec mirrors upstream `scheduling.k8s.io/v1beta1` PodGroup; the status adds
what Muster records beyond upstream (pod counts, the placement plan, the nodes
kube-scheduler refused the gang's pods on, and the gang's lifecycle memory).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, ConfigDict, Field

from muster.api.base import INT32, Condition, KubeModel, ObjectMeta
from muster.api.constants import MAX_REFUSAL_MESSAGE, MAX_REFUSED_NODES
from muster.api.names import DNS_LABEL_MAX_LENGTH, DNS_SUBDOMAIN_MAX_LENGTH
from muster.api.policy import (
    DisruptionMode,
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
    PreemptionPolicy,
)
from muster.api.rules import (
    NAME_IS_A_LABEL_VALUE,
    PREEMPTION_POLICY_IMMUTABLE,
    PRIORITY_AT_MOST_HIGHEST_USER_PRIORITY,
    PRIORITY_CLASS_NAME_IMMUTABLE,
    PRIORITY_CLASS_NAME_IS_DNS_SUBDOMAIN,
    PRIORITY_IMMUTABLE,
    WORKLOAD_REF_IMMUTABLE,
    WORKLOAD_REF_NAME_IS_DNS_SUBDOMAIN,
    WORKLOAD_REF_TEMPLATE_IS_DNS_LABEL,
    cel,
)


class WorkloadReference(KubeModel):
    """The Workload and template a PodGroup was created from."""

    workload_name: str = Field(
        json_schema_extra={"maxLength": DNS_SUBDOMAIN_MAX_LENGTH}
        | cel(WORKLOAD_REF_NAME_IS_DNS_SUBDOMAIN)
    )
    """Name of the Workload (same namespace) holding the template."""

    template_name: str = Field(
        json_schema_extra={"maxLength": DNS_LABEL_MAX_LENGTH}
        | cel(WORKLOAD_REF_TEMPLATE_IS_DNS_LABEL)
    )
    """Name of the template within the Workload's podGroupTemplates."""


class PodGroupSpec(KubeModel):
    """The desired scheduling of a group of pods. Pods join the group with the label
    scheduling.muster.dev/pod-group set to the PodGroup's name."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            WORKLOAD_REF_IMMUTABLE,
            PRIORITY_AT_MOST_HIGHEST_USER_PRIORITY,
            PRIORITY_CLASS_NAME_IMMUTABLE,
            PRIORITY_IMMUTABLE,
            PREEMPTION_POLICY_IMMUTABLE,
        )
    )

    workload_ref: WorkloadReference | None = None
    """The Workload template this group was created from, if any. Immutable. A new
    PodGroup is admitted only when the Workload and the template exist and the Workload
    is not being deleted (Forbidden otherwise, naming the reference)."""

    scheduling_policy: PodGroupSchedulingPolicy
    """How the pods are scheduled: basic (one by one) or gang (all together)."""

    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    """Placement constraints on the group as a whole, e.g. one topology domain."""

    disruption_mode: DisruptionMode | None = None
    """How the group's pods may be disrupted. When unset, a gang is disrupted as a
    whole (all) and a basic group pod by pod (single)."""

    priority_class_name: str | None = Field(
        default=None,
        json_schema_extra={"maxLength": DNS_SUBDOMAIN_MAX_LENGTH}
        | cel(PRIORITY_CLASS_NAME_IS_DNS_SUBDOMAIN),
    )
    """The PriorityClass that sets the group's priority; it must exist, and its value
    be at most 1000000000 (the system classes are for pods only). When unset, the
    cluster's globalDefault class applies, if there is one. Immutable."""

    priority: int | None = Field(default=None, json_schema_extra=INT32)
    """The group's priority, resolved from priorityClassName at admission (the
    higher, the sooner; higher-priority groups may preempt lower ones). Immutable. A
    gang is never ranked above the lowest priority its member pods were admitted with."""

    preemption_policy: PreemptionPolicy | None = None
    """PreemptLowerPriority (the default) lets this group preempt lower-priority pods
    and groups to fit; Never makes it wait instead. Resolved from the class. Immutable."""


class PodCounts(KubeModel):
    """How many member pods (labelled with the group's name) are in each state."""

    total: int = Field(default=0, json_schema_extra=INT32)
    """Member pods that exist."""

    gated: int = Field(default=0, json_schema_extra=INT32)
    """Member pods still held by the scheduling gate."""

    scheduled: int = Field(default=0, json_schema_extra=INT32)
    """Member pods bound to a node."""

    running: int = Field(default=0, json_schema_extra=INT32)
    """Member pods in phase Running."""

    succeeded: int = Field(default=0, json_schema_extra=INT32)
    """Member pods in phase Succeeded."""

    failed: int = Field(default=0, json_schema_extra=INT32)
    """Member pods in phase Failed."""


class NodeRefusal(KubeModel):
    """One node on which kube-scheduler refused a released pod of the gang."""

    node: str
    """The node the pod was planned (and pinned) to."""

    pod: str
    """The member pod refused there last."""

    message: str = Field(json_schema_extra={"maxLength": MAX_REFUSAL_MESSAGE})
    """kube-scheduler's message (the pod's PodScheduled condition), as last seen."""

    count: int = Field(default=1, ge=1, json_schema_extra=INT32)
    """Rollbacks in which this node refused a pod of the gang."""


class Refusals(KubeModel):
    """What kube-scheduler refused, remembered so the gang is not planned the same way
    again.

    The gang's pods are one shape here: a refusal on a node keeps every member pod
    off that node. A Job's pods share one template, so for a Job this is exact; for a
    hand-made group of mixed pods it errs towards avoiding a node one of them might
    have used, never towards planning a known refusal again. The memory holds at
    most 32 nodes (the most recent) and is tied to the node set it was learnt on:
    once a node is added, removed, relabelled, tainted or cordoned (nodeSet
    differs), the gang forgets it and may try every node again."""

    node_set: str
    """A digest of the nodes (names, labels, taints, unschedulable) when the last
    refusal was recorded."""

    rollbacks: int = Field(default=0, ge=0, json_schema_extra=INT32)
    """Rollbacks in a row because kube-scheduler refused a pod; at the operator's
    --max-rollbacks the gang is not planned again until nodeSet changes. Back to 0
    once the gang binds completely."""

    nodes: list[NodeRefusal] = Field(
        default_factory=list,
        max_length=MAX_REFUSED_NODES,
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    """The nodes refused, oldest first; the next plans leave them out."""


class GangMemory(KubeModel):
    """The gang's lifecycle memory: what the engine needs to decide the same way after a
    restart, in `muster simulate` and in `muster explain`. Written with the decision
    that changes it, before that decision is carried out."""

    rollbacks: int = Field(default=0, ge=0, json_schema_extra=INT32)
    """Rollbacks in a row (for any reason); back to 0 once the gang binds completely.
    Each doubles the backoff, up to the operator's --rollback-backoff-max."""

    backoff_until: AwareDatetime | None = None
    """After a rollback: the gang is not admitted again before this time."""

    release_started: AwareDatetime | None = None
    """When the admitted gang's release clock started (its pods were released); it
    is rolled back if they are not all bound --release-timeout seconds later (for a
    pod in kube-scheduler's queue, seconds after its last bind, when that is later)."""

    victims: list[str] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    """Pods (namespace/name) preempted for the admitted gang that had not left when
    last seen: its pods are released only once they are gone, and it is rolled back
    if they are still there --victims-timeout seconds after its admission."""


class StartEstimate(KubeModel):
    """When a waiting gang is expected to start, from the engine run forward in time
    (pods ending after their expected runtime, the gangs ahead of it starting as the
    engine would start them)."""

    start: str | None = None
    """The START column: now, ~12m, >24h (beyond the horizon), unknown, or never (it does
    not fit even on the empty cluster)."""

    basis: str | None = None
    """What the time rests on: the weakest of the runtimes that free its capacity
    (declared, observed, or deadline: an upper bound); unknown when there is no time."""

    waiting_for: str | None = None
    """What it waits for, in words: what it needs, where it frees up, and whose end
    frees it; or why there is no time."""


class PodGroupStatus(KubeModel):
    """What Muster observed and decided about the group."""

    conditions: list[Condition] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """PodGroupScheduled (True while the gang is admitted; otherwise the reason it
    waits: Unschedulable, WaitingForPods, Preempted, RolledBack, SchedulerError),
    PodGroupInitiallyScheduled (True from the first admission on, never False again)
    and DisruptionTarget (True while the group is being preempted)."""

    observed_generation: int | None = Field(default=None, json_schema_extra={"format": "int64"})
    """The .metadata.generation this status describes."""

    min_count: int | str | None = None
    """The gang's minCount, "basic" for a basic group, or "paused" for a gang whose Job
    runs no pods (parallelism 0) (the MIN column of kubectl)."""

    pods: PodCounts | None = None
    """Member pod counts."""

    plan: dict[str, str] | None = None
    """Where the admitted gang's pods go: pod name to node name. Written before any
    pod is released, so an interrupted release can be finished."""

    admitted_at: AwareDatetime | None = None
    """When the gang was last admitted (RFC 3339)."""

    refusals: Refusals | None = None
    """The nodes where kube-scheduler refused the gang's released pods, and how many
    rollbacks in a row that caused."""

    lifecycle: GangMemory | None = None
    """Backoff, rollbacks, the release clock and the victims awaited."""

    estimated_start_time: AwareDatetime | None = None
    """For a waiting gang: when it is expected to start (RFC 3339), if within the
    horizon and known."""

    estimate: StartEstimate | None = None
    """For a waiting gang: the estimate's column text, basis and reason."""


class PodGroup(KubeModel):
    """A group of pods scheduled together: with the gang policy, none of them starts
    until at least minCount of them can start at once."""

    model_config = ConfigDict(json_schema_extra=cel(NAME_IS_A_LABEL_VALUE))

    api_version: Literal["scheduling.muster.dev/v1beta1"] = "scheduling.muster.dev/v1beta1"
    """APIVersion defines the versioned schema of this representation of an object."""

    kind: Literal["PodGroup"] = "PodGroup"
    """Kind is a string value representing the REST resource this object represents."""

    metadata: ObjectMeta = ObjectMeta()
    """Standard object metadata."""

    spec: PodGroupSpec
    """The desired scheduling of the group."""

    status: PodGroupStatus | None = None
    """The observed state of the group, written by Muster."""
