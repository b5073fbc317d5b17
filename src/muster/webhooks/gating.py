"""Mutating admission: member pods are created gated, so none starts before its gang.

Two webhooks, each scoped by an object selector so no unrelated request waits on
Muster:

- Jobs labelled `scheduling.muster.dev/policy`, and Jobs with the native 1.37 field
  `spec.scheduling.schedulingPolicy` (a CEL match condition selects them, see
  `muster.webhooks.server`), on CREATE: the pod template gets the group label and,
  for gangs, the scheduling gate (`muster.api.expand`), so every pod the Job
  controller creates is born gated.
- Pods labelled `scheduling.muster.dev/pod-group` (CREATE): the gate is added, because
  gates can only be set at creation. Pods controlled by a Job are left as they are:
  their Job's opt-in already decided (a `basic` Job's pods must not be held). Pods
  that the cluster's own (1.37) gang scheduling has taken lose our gate instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from muster.api.constants import GANG_GATE, POD_GROUP_LABEL, POLICY_LABEL
from muster.api.expand import gated_pod_template
from muster.api.optin import OptInError, read_job_opt_in


def job_template(job: Mapping[str, Any]) -> dict[str, Any] | None:
    """The opted-in Job's pod template, labelled and gated; None when nothing changes.

    An invalid opt-in is left alone here: the validating webhook rejects it with the
    reason, and a mutation must not hide the problem by guessing.
    """
    try:
        opt_in = read_job_opt_in(job)
    except OptInError:
        return None
    if opt_in is None:
        return None
    template = gated_pod_template(job, opt_in)
    if template == (job.get("spec") or {}).get("template"):
        return None
    return template


def pod_gates(pod: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The member pod's scheduling gates with ours added; None when nothing changes.

    A pod the cluster's own gang scheduling has taken (`spec.schedulingGroup`, set by
    a 1.37 Job controller with native gang scheduling on) loses our gate instead:
    two gang schedulers must never hold the same pod.
    """
    metadata = pod.get("metadata") or {}
    if not (metadata.get("labels") or {}).get(POD_GROUP_LABEL):
        return None
    gates = list((pod.get("spec") or {}).get("schedulingGates") or [])
    if (pod.get("spec") or {}).get("schedulingGroup"):
        kept = [gate for gate in gates if gate.get("name") != GANG_GATE]
        return kept if len(kept) != len(gates) else None
    owners = metadata.get("ownerReferences") or []
    if any(owner.get("controller") and owner.get("kind") == "Job" for owner in owners):
        return None
    if any(gate.get("name") == GANG_GATE for gate in gates):
        return None
    return [*gates, {"name": GANG_GATE}]


@kopf.on.mutate(
    "batch",
    "v1",
    "jobs",
    id="gate-jobs",
    operations=["CREATE"],
    labels={POLICY_LABEL: kopf.PRESENT},
    persistent=True,
)
def gate_job(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    _gate_template(body, patch)


@kopf.on.mutate(
    "batch",
    "v1",
    "jobs",
    id="gate-native-jobs",
    operations=["CREATE"],
    field="spec.scheduling.schedulingPolicy",
    value=kopf.PRESENT,
    persistent=True,
)
def gate_native_job(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    _gate_template(body, patch)


def _gate_template(job: kopf.Body, patch: kopf.Patch) -> None:
    template = job_template(job)
    if template is not None:
        patch.spec["template"] = template


@kopf.on.mutate(
    "",
    "v1",
    "pods",
    id="gate-pods",
    operations=["CREATE"],
    labels={POD_GROUP_LABEL: kopf.PRESENT},
    persistent=True,
)
def gate_pod(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    gates = pod_gates(body)
    if gates is not None:
        patch.spec["schedulingGates"] = gates
