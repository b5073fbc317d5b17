"""Workload: the scheduling shape of a whole application, as templates from which
PodGroups are made. Mirrors upstream `scheduling.k8s.io/v1beta1` Workload.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from muster.api.base import INT32, KubeModel, ObjectMeta
from muster.api.constants import MAX_POD_GROUP_TEMPLATES
from muster.api.names import DNS_LABEL_MAX_LENGTH, DNS_SUBDOMAIN_MAX_LENGTH
from muster.api.policy import (
    DisruptionMode,
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
    PreemptionPolicy,
)
from muster.api.rules import (
    POD_GROUP_NAMES_ARE_LABEL_VALUES,
    PRIORITY_AT_MOST_HIGHEST_USER_PRIORITY,
    PRIORITY_CLASS_NAME_IS_DNS_SUBDOMAIN,
    TEMPLATE_NAME_IS_DNS_LABEL,
    TEMPLATE_NAMES_UNIQUE,
    cel,
)


class TypedLocalObjectReference(KubeModel):
    """An object in the same namespace, named with its group and kind."""

    api_group: str | None = None
    """The object's API group, e.g. batch; empty for the core group."""

    kind: str
    """The object's kind, e.g. Job."""

    name: str
    """The object's name."""


class PodGroupTemplate(KubeModel):
    """A template for one PodGroup of the Workload; the PodGroup made from it is
    named <workload>-<template>."""

    model_config = ConfigDict(json_schema_extra=cel(PRIORITY_AT_MOST_HIGHEST_USER_PRIORITY))

    name: str = Field(
        json_schema_extra={"maxLength": DNS_LABEL_MAX_LENGTH} | cel(TEMPLATE_NAME_IS_DNS_LABEL)
    )
    """The template's name, unique within the Workload; a DNS label."""

    scheduling_policy: PodGroupSchedulingPolicy
    """How the group's pods are scheduled: basic or gang."""

    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    """Placement constraints on the group as a whole, e.g. one topology domain."""

    disruption_mode: DisruptionMode | None = None
    """How the group's pods may be disrupted: single or all."""

    priority_class_name: str | None = Field(
        default=None,
        json_schema_extra={"maxLength": DNS_SUBDOMAIN_MAX_LENGTH}
        | cel(PRIORITY_CLASS_NAME_IS_DNS_SUBDOMAIN),
    )
    """The PriorityClass of groups made from this template."""

    priority: int | None = Field(default=None, json_schema_extra=INT32)
    """The priority of groups made from this template."""

    preemption_policy: PreemptionPolicy | None = None
    """PreemptLowerPriority (the default) or Never."""


class WorkloadSpec(KubeModel):
    """The groups of pods that make up an application."""

    controller_ref: TypedLocalObjectReference | None = None
    """The object that owns the application's pods, e.g. a Job; for tools to link
    back to it."""

    pod_group_templates: list[PodGroupTemplate] = Field(
        min_length=1,
        max_length=MAX_POD_GROUP_TEMPLATES,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
        | cel(TEMPLATE_NAMES_UNIQUE),
    )
    """One to 8 templates, each the shape of one PodGroup."""


class Workload(KubeModel):
    """The scheduling shape of an application: from each of its templates Muster
    makes one PodGroup."""

    model_config = ConfigDict(json_schema_extra=cel(POD_GROUP_NAMES_ARE_LABEL_VALUES))

    api_version: Literal["scheduling.muster.dev/v1beta1"] = "scheduling.muster.dev/v1beta1"
    """APIVersion defines the versioned schema of this representation of an object."""

    kind: Literal["Workload"] = "Workload"
    """Kind is a string value representing the REST resource this object represents."""

    metadata: ObjectMeta = ObjectMeta()
    """Standard object metadata."""

    spec: WorkloadSpec
    """The groups that make up the application."""
