"""A PodGroup's ``spec.workloadRef`` must name a Workload and template that exist.

As the API server admits native PodGroups: a reference to a Workload that does not
exist, to a template the Workload does not have, or to a Workload being deleted is
refused as Forbidden at creation, so that a typo is caught by ``kubectl apply``
instead of leaving a group that never gets its template. Only creation is checked:
the reference is immutable, and a PodGroup whose Workload went away later must
still accept updates (its status, the removal of a finalizer).

Pure: the caller says what the reference resolves to. The webhooks look it up in
the operator's informer cache; `muster validate` among the files it was given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from muster.api.constants import WORKLOAD_KIND
from muster.api.problems import Problem

WorkloadLookup = Callable[[str], Mapping[str, Any] | None]
"""The Workload of that name in the PodGroup's namespace, or None when there is none."""

FORBIDDEN = "Forbidden"
_REF_PATH = "spec.workloadRef"


def referenced_workload_name(pod_group: Mapping[str, Any]) -> str | None:
    """The name in ``spec.workloadRef.workloadName``, when there is one to look up."""
    ref = _workload_ref(pod_group)
    name = ref.get("workloadName")
    return name if isinstance(name, str) and name else None


def workload_ref_problems(pod_group: Mapping[str, Any], lookup: WorkloadLookup) -> list[Problem]:
    """Why the PodGroup's reference cannot be admitted; nothing without a reference."""
    name = referenced_workload_name(pod_group)
    if name is None:
        return []
    workload = lookup(name)
    named = f"{WORKLOAD_KIND} {json.dumps(name)}"
    if workload is None:
        return [_forbidden("workloadName", f"{named} not found")]
    if (workload.get("metadata") or {}).get("deletionTimestamp"):
        return [_forbidden("workloadName", f"{named} is being deleted")]
    template = _workload_ref(pod_group).get("templateName")
    if isinstance(template, str) and template not in _template_names(workload):
        return [
            _forbidden("templateName", f"{named} has no podGroupTemplate {json.dumps(template)}")
        ]
    return []


def referable_part(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    """All that `workload_ref_problems` reads of a Workload, itself a Workload to it.

    A replica keeps every Workload of the cluster for admission; whole, 6,250 of them
    took about 30 MiB, their metadata most of it.
    """
    metadata = workload.get("metadata")
    deleting = metadata.get("deletionTimestamp") if isinstance(metadata, Mapping) else None
    templates = [{"name": name} for name in sorted(_template_names(workload))]
    part: dict[str, Any] = {"spec": {"podGroupTemplates": templates}}
    if deleting:
        part["metadata"] = {"deletionTimestamp": deleting}
    return part


def is_forbidden(problem: Problem) -> bool:
    """Whether the problem is a refusal of what the request refers to (HTTP 403),
    rather than of what it says (422)."""
    return problem.message.startswith(f"{FORBIDDEN}: ")


def _forbidden(field: str, detail: str) -> Problem:
    return Problem(f"{_REF_PATH}.{field}", f"{FORBIDDEN}: {detail}")


def _workload_ref(pod_group: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod_group.get("spec")
    ref = spec.get("workloadRef") if isinstance(spec, Mapping) else None
    return ref if isinstance(ref, Mapping) else {}


def _template_names(workload: Mapping[str, Any]) -> set[str]:
    spec = workload.get("spec")
    templates = spec.get("podGroupTemplates") if isinstance(spec, Mapping) else None
    if not isinstance(templates, list):
        return set()
    return {
        template["name"]
        for template in templates
        if isinstance(template, Mapping) and isinstance(template.get("name"), str)
    }
