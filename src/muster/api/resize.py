"""A gang Job resized: the patches that bring its Workload and PodGroup along.

On Kubernetes 1.37 a Job's gang size may change after creation (parallelism, and
``spec.scheduling.schedulingPolicy.gang.minCount``; with Muster's label, the
``min-count`` annotation too), and the Job controller keeps the Workload's
template and the PodGroup it made in step. Muster's Job integration does the same:
only ``minCount`` changes, by an ordinary update of each object, so the PodGroup's
own admission rules apply as to any edit of it. Each patch first tests the value
it replaces, so an object changed meanwhile is refused rather than overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.api.constants import JOB_TEMPLATE_NAME, POD_GROUP_KIND, WORKLOAD_KIND

JsonPatch = list[dict[str, Any]]


def min_count_patch(child: Mapping[str, Any], min_count: int) -> JsonPatch | None:
    """The JSON patch giving the Job's PodGroup or Workload this gang size; None
    when it has it already, or has no gang ``minCount`` to change."""
    location = _min_count_location(child)
    if location is None:
        return None
    path, current = location
    if current == min_count:
        return None
    return [
        {"op": "test", "path": path, "value": current},
        {"op": "replace", "path": path, "value": min_count},
    ]


def current_min_count(child: Mapping[str, Any]) -> int | None:
    """The gang size a PodGroup or the Job's Workload template has now."""
    location = _min_count_location(child)
    return None if location is None else location[1]


def _min_count_location(child: Mapping[str, Any]) -> tuple[str, int] | None:
    spec = child.get("spec") or {}
    if child.get("kind") == POD_GROUP_KIND:
        return _in_policy(spec.get("schedulingPolicy"), "/spec/schedulingPolicy")
    if child.get("kind") == WORKLOAD_KIND:
        for index, template in enumerate(spec.get("podGroupTemplates") or []):
            if template.get("name") == JOB_TEMPLATE_NAME:
                return _in_policy(
                    template.get("schedulingPolicy"),
                    f"/spec/podGroupTemplates/{index}/schedulingPolicy",
                )
    return None


def _in_policy(policy: Any, path: str) -> tuple[str, int] | None:
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    count = gang.get("minCount") if isinstance(gang, Mapping) else None
    return (f"{path}/gang/minCount", count) if isinstance(count, int) else None
