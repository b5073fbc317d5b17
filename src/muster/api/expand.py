"""What Muster makes from a Job or a Workload: the objects, and the pod template.

Pure functions from plain mappings to plain mappings. The operator creates what
they return; `muster simulate` feeds it to the engine; so a Job expands the same
way in both.

- Job (opted in) -> a Workload (one template, ``workers``) and a PodGroup, both
  named after the Job and owned by it, so they are garbage-collected with it.
- Workload -> one PodGroup per template, named ``<workload>-<template>``, owned by
  the Workload.
- Job pod template -> the same template with the group label and, for gangs, the
  scheduling gate: pods are created gated and join the group by the label.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muster.api.constants import (
    ACTIVE_DEADLINE_ANNOTATION,
    API_VERSION,
    COMPLETIONS_ANNOTATION,
    CRON_JOB_ANNOTATION,
    EXPECTED_RUNTIME_ANNOTATION,
    GATED_FOR_ANNOTATION,
    GATED_FOR_FIELD,
    JOB_TEMPLATE_NAME,
    PAUSED_ANNOTATION,
    POD_GROUP_KIND,
    POD_GROUP_LABEL,
    TEMPLATES_ANNOTATION,
    WORKLOAD_KIND,
)
from muster.api.gates import with_gang_gate
from muster.api.optin import JobOptIn
from muster.api.policy import (
    AllDisruptionMode,
    BasicSchedulingPolicy,
    DisruptionMode,
    GangSchedulingPolicy,
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
    SingleDisruptionMode,
    TopologyConstraint,
)
from muster.api.preferences import carried_preference
from muster.api.workload import PodGroupTemplate

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "muster"
_JOB_API_VERSION = "batch/v1"
_JOB_KIND = "Job"
_JOB_API_GROUP = "batch"
_CRON_JOB_KIND = "CronJob"


@dataclass(frozen=True, slots=True)
class JobExpansion:
    """The objects an opted-in Job needs."""

    workload: dict[str, Any]
    pod_group: dict[str, Any]


def pod_group_name(workload_name: str, template_name: str) -> str:
    """The name of the PodGroup made from a user's Workload template."""
    return f"{workload_name}-{template_name}"


def expand_job(job: Mapping[str, Any], opt_in: JobOptIn) -> JobExpansion:
    """The Workload and PodGroup for an opted-in Job, named after it and owned by it.

    The group's priority class is the pods' own, so the gang competes at the
    priority its pods would have had.
    """
    metadata = job["metadata"]
    name: str = metadata["name"]
    pod_spec = job.get("spec", {}).get("template", {}).get("spec", {})
    template = _template_for_job(opt_in, pod_spec.get("priorityClassName"))
    owner = _owner_reference(_JOB_API_VERSION, _JOB_KIND, metadata)
    workload_metadata = _child_metadata(name, metadata.get("namespace"), owner)
    workload_metadata["annotations"] = {TEMPLATES_ANNOTATION: template["name"]}
    workload = {
        "apiVersion": API_VERSION,
        "kind": WORKLOAD_KIND,
        "metadata": workload_metadata,
        "spec": {
            "controllerRef": {"apiGroup": _JOB_API_GROUP, "kind": _JOB_KIND, "name": name},
            "podGroupTemplates": [template],
        },
    }
    pod_group = _pod_group(name, metadata.get("namespace"), name, template, owner)
    carried = _runtime_annotations(job) | carried_preference(job) | job_marks(job)
    if carried:
        pod_group["metadata"]["annotations"] = carried
    return JobExpansion(workload=workload, pod_group=pod_group)


def job_marks(job: Mapping[str, Any]) -> dict[str, str]:
    """What the Job's PodGroup is marked with, as the Job is now, and kept so while it
    changes: paused while the Job runs no pods (parallelism 0), and the Job's number
    of completions when it has one (an Indexed Job may scale it with parallelism)."""
    spec = job.get("spec") or {}
    marks = {PAUSED_ANNOTATION: "parallelism 0"} if spec.get("parallelism") == 0 else {}
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        marks[COMPLETIONS_ANNOTATION] = str(completions)
    return marks


def _runtime_annotations(job: Mapping[str, Any]) -> dict[str, str]:
    """What the Job says of its pods' runtime, for start-time estimates: its
    expected-runtime annotation, its activeDeadlineSeconds (an upper bound), and the
    CronJob that made it (whose earlier Jobs show how long its pods take)."""
    annotations = job["metadata"].get("annotations") or {}
    found = {}
    if EXPECTED_RUNTIME_ANNOTATION in annotations:
        found[EXPECTED_RUNTIME_ANNOTATION] = str(annotations[EXPECTED_RUNTIME_ANNOTATION])
    deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
    if deadline is not None:
        found[ACTIVE_DEADLINE_ANNOTATION] = str(deadline)
    cron_job = _cron_job(job["metadata"])
    if cron_job is not None:
        found[CRON_JOB_ANNOTATION] = cron_job
    return found


def _cron_job(metadata: Mapping[str, Any]) -> str | None:
    """The name of the CronJob controlling a Job, if one does."""
    for owner in metadata.get("ownerReferences") or []:
        if (
            owner.get("controller")
            and owner.get("kind") == _CRON_JOB_KIND
            and str(owner.get("apiVersion", "")).startswith(f"{_JOB_API_GROUP}/")
            and owner.get("name")
        ):
            return str(owner["name"])
    return None


def template_names(workload: Mapping[str, Any]) -> str:
    """The value of the templates annotation: the names in order, comma-separated."""
    templates = (workload.get("spec") or {}).get("podGroupTemplates") or []
    return ",".join(str(template.get("name", "")) for template in templates)


def expand_workload(workload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One PodGroup per template of a user's Workload, owned by the Workload; each
    carries the Workload's topology annotations (preferred level, slices), if any."""
    metadata = workload["metadata"]
    name: str = metadata["name"]
    owner = _owner_reference(API_VERSION, WORKLOAD_KIND, metadata)
    preference = carried_preference(workload)
    pod_groups = [
        _pod_group(
            pod_group_name(name, template["name"]), metadata.get("namespace"), name, template, owner
        )
        for template in workload["spec"]["podGroupTemplates"]
    ]
    for pod_group in pod_groups:
        if preference:
            pod_group["metadata"]["annotations"] = dict(preference)
    return pod_groups


def gated_pod_template(job: Mapping[str, Any], opt_in: JobOptIn) -> dict[str, Any]:
    """The Job's pod template with the group label, and the gang gate for gangs.

    Idempotent: a template that already carries them comes back unchanged. Only
    gangs are gated; a basic group's pods schedule as they come, and so do pods
    whose template names their node (the API server refuses a bound pod with
    scheduling gates). A template gated for the native field says so
    (`GATED_FOR_ANNOTATION`): the API server may drop the field once admission is
    over, and the engine then lets those pods go (`muster.scheduler.memory.dropped_field`).
    """
    template = copy.deepcopy(dict(job.get("spec", {}).get("template", {})))
    metadata = template.setdefault("metadata", {})
    labels = metadata.get("labels") or {}
    metadata["labels"] = {**labels, POD_GROUP_LABEL: job["metadata"]["name"]}
    if opt_in.is_gang and not (template.get("spec") or {}).get("nodeName"):
        spec = template.setdefault("spec", {})
        spec["schedulingGates"] = with_gang_gate(spec.get("schedulingGates") or [])
        if opt_in.source == "field":
            annotations = metadata.get("annotations") or {}
            metadata["annotations"] = {**annotations, GATED_FOR_ANNOTATION: GATED_FOR_FIELD}
    return template


def _template_for_job(opt_in: JobOptIn, priority_class_name: str | None) -> dict[str, Any]:
    if opt_in.is_gang:
        assert opt_in.min_count is not None, "a gang opt-in always has a minCount"
        policy = PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=opt_in.min_count))
    else:
        policy = PodGroupSchedulingPolicy(basic=BasicSchedulingPolicy())
    constraints = None
    if opt_in.topology_key is not None:
        constraints = PodGroupSchedulingConstraints(
            topology=[TopologyConstraint(key=opt_in.topology_key)]
        )
    disruption = None
    if opt_in.disruption_mode == "single":
        disruption = DisruptionMode(single=SingleDisruptionMode())
    elif opt_in.disruption_mode == "all":
        disruption = DisruptionMode(all=AllDisruptionMode())
    return PodGroupTemplate(
        name=JOB_TEMPLATE_NAME,
        scheduling_policy=policy,
        scheduling_constraints=constraints,
        disruption_mode=disruption,
        priority_class_name=priority_class_name,
    ).to_manifest()


def _pod_group(
    name: str,
    namespace: str | None,
    workload_name: str,
    template: Mapping[str, Any],
    owner: dict[str, Any],
) -> dict[str, Any]:
    """A PodGroup whose spec is copied from a template, as upstream controllers do."""
    spec = {key: copy.deepcopy(value) for key, value in template.items() if key != "name"}
    spec["workloadRef"] = {"workloadName": workload_name, "templateName": template["name"]}
    return {
        "apiVersion": API_VERSION,
        "kind": POD_GROUP_KIND,
        "metadata": _child_metadata(name, namespace, owner),
        "spec": spec,
    }


def _child_metadata(name: str, namespace: str | None, owner: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {MANAGED_BY_LABEL: MANAGED_BY},
        "ownerReferences": [owner],
    }
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


def _owner_reference(api_version: str, kind: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A controller reference; the uid is left out when the owner has none yet
    (offline, in `muster simulate`)."""
    reference: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "name": metadata["name"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    if "uid" in metadata:
        reference["uid"] = metadata["uid"]
    return reference
