"""Scheduling policy, constraints and disruption mode: the parts a PodGroup and a
Workload's template share, shaped exactly as upstream `scheduling.k8s.io/v1beta1`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from muster.api.base import INT32, KubeModel
from muster.api.names import LABEL_KEY_MAX_LENGTH
from muster.api.rules import (
    EXACTLY_ONE_DISRUPTION_MODE,
    EXACTLY_ONE_POLICY,
    MIN_COUNT_AT_MOST_MAX_GANG_SIZE,
    MIN_COUNT_POSITIVE,
    POLICY_KIND_IMMUTABLE,
    TOPOLOGY_KEY_IS_LABEL_KEY,
    cel,
)

PreemptionPolicy = Literal["PreemptLowerPriority", "Never"]
"""Whether a group may preempt lower-priority pods and groups to make room."""


class BasicSchedulingPolicy(KubeModel):
    """Standard pod-by-pod scheduling: the group is only a label, nothing waits for
    anything. Intentionally empty: its presence selects the policy."""


class GangSchedulingPolicy(KubeModel):
    """All-or-nothing scheduling: no pod of the group starts until at least
    minCount of them can start at the same time."""

    model_config = ConfigDict(
        json_schema_extra=cel(MIN_COUNT_POSITIVE, MIN_COUNT_AT_MOST_MAX_GANG_SIZE)
    )

    min_count: int = Field(json_schema_extra=INT32)
    """The minimum number of pods that must be schedulable at the same time for the
    whole group to be admitted; at least 1. Mutable, to let a workload scale; a new
    value applies from the next scheduling attempt, never to pods already running."""


class PodGroupSchedulingPolicy(KubeModel):
    """How the group's pods are scheduled. Exactly one of basic or gang is set, at
    creation; the kind never changes afterwards (gang.minCount may)."""

    model_config = ConfigDict(json_schema_extra=cel(EXACTLY_ONE_POLICY, POLICY_KIND_IMMUTABLE))

    basic: BasicSchedulingPolicy | None = None
    """Schedule the pods one by one, as Kubernetes always does."""

    gang: GangSchedulingPolicy | None = None
    """Schedule the pods all together or not at all."""

    @property
    def is_gang(self) -> bool:
        """Whether this is the all-or-nothing policy."""
        return self.gang is not None


class TopologyConstraint(KubeModel):
    """Keeps the whole group inside one domain of a node label."""

    key: str = Field(
        json_schema_extra={"maxLength": LABEL_KEY_MAX_LENGTH} | cel(TOPOLOGY_KEY_IS_LABEL_KEY)
    )
    """The key of the node label that names topology domains, e.g.
    topology.kubernetes.io/zone. Every pod of the group lands on nodes with the same
    value of this label; different groups may land in different domains."""


class PodGroupSchedulingConstraints(KubeModel):
    """Placement constraints that apply to the group as a whole."""

    topology: list[TopologyConstraint] | None = Field(
        default=None, json_schema_extra={"maxItems": 1, "x-kubernetes-list-type": "atomic"}
    )
    """Topology constraints of the group; at most one is supported."""


class SingleDisruptionMode(KubeModel):
    """Pods of the group may be disrupted one at a time. Intentionally empty."""


class AllDisruptionMode(KubeModel):
    """Pods of the group are only disrupted together. Intentionally empty."""


class DisruptionMode(KubeModel):
    """How the group's pods may be disrupted (preempted, evicted). Exactly one of
    single or all is set."""

    model_config = ConfigDict(json_schema_extra=cel(EXACTLY_ONE_DISRUPTION_MODE))

    single: SingleDisruptionMode | None = None
    """Pods may be disrupted independently of each other."""

    all: AllDisruptionMode | None = None
    """All pods are disrupted together, or none."""
