"""Mutating admission of the pods of adopted PodGroups (docs/frameworks.md).

A framework's pod that names its group by another scheduler's label or annotation,
in a namespace Muster adopts, is made a member of the Muster PodGroup made for that
group at its creation: Muster's group label and the gang gate, and the default
scheduler in place of the adopted one (`muster.api.adoption.adopted_pod_patch`). The
webhook is configured only while adoption is on, for the adopted namespaces (its
namespace selector), and re-invoked when a later webhook changes the pod; the handler
does nothing on a replica that adopts nothing.
"""

from __future__ import annotations

from typing import Any

import kopf

from muster.api.adoption import SCHEDULER_PLUGINS, VOLCANO, Adoption, adopted_pod_patch

ADOPTION_MEMO = "adoption"
"""The kopf memo attribute that holds the operator's :class:`Adoption`, or None."""

ADOPT_PODS = "adopt-pods"

ADOPT_PODS_CONDITION = {
    "name": "names-an-adopted-pod-group",
    "expression": (
        f"'{SCHEDULER_PLUGINS.member_label}' in object.metadata.?labels.orValue({{}})"
        f" || '{VOLCANO.member_annotation}' in object.metadata.?annotations.orValue({{}})"
    ),
}
"""The pods `adopted_pod_patch` may act on, as a CEL match condition: those carrying the
label or the annotation of an adopted API, so no other pod's creation waits on Muster."""


@kopf.on.mutate("", "v1", "pods", id=ADOPT_PODS, operations=["CREATE"], persistent=True)
def adopt_pod(body: kopf.Body, patch: kopf.Patch, memo: Any, **_: Any) -> None:
    adoption: Adoption | None = getattr(memo, ADOPTION_MEMO, None)
    if adoption is None:
        return
    changes = adopted_pod_patch(body, adoption.apis, adoption.scheduler_names)
    if changes is None:
        return
    if "labels" in changes:
        patch.metadata["labels"] = changes["labels"]
    if "schedulingGates" in changes:
        patch.spec["schedulingGates"] = changes["schedulingGates"]
    if "schedulerName" in changes:
        patch.spec["schedulerName"] = changes["schedulerName"]
