"""Mutating admission: member pods are created gated, so none starts before its gang.

Two webhooks, each scoped by an object selector so no unrelated request waits on
Muster:

- Jobs labelled `scheduling.muster.dev/policy`, and Jobs with the native 1.37 field
  `spec.scheduling.schedulingPolicy` (a CEL match condition selects them, see
  `muster.webhooks.server`), on CREATE: the pod template gets the group label and,
  for gangs, the scheduling gate (`muster.api.expand`), so every pod the Job
  controller creates is born gated. A labelled Job is validated in the same call
  (:func:`muster.webhooks.validation.check_job`, refused with every problem naming
  its field; and refused when its pods name a PriorityClass that does not exist,
  `refuse_missing_priority_class`), so its creation costs one webhook call; the
  validating webhook sees it again only on update. A template gated for the native field says so
  (`scheduling.muster.dev/gated-for: spec.scheduling`): the API server runs this
  webhook before it prepares the Job for storage, and one without the
  `WorkloadWithJob` feature drops the field only then, so the webhook cannot know
  whether the field will be kept. The engine reads the stored Job and, when the
  field is gone, lets its pods go (`muster.scheduler.lifecycle.let_go`).
- Pods labelled `scheduling.muster.dev/pod-group` (CREATE): the gate is added, because
  gates can only be set at creation. Pods controlled by a Job are left as they are:
  their Job's opt-in already decided (a `basic` Job's pods must not be held back). Pods
  that the cluster's own (1.37) gang scheduling has taken lose our gate instead.
  So do pods that already name their node (``spec.nodeName``: restored from a
  backup, made by a tool that binds pods itself): the API server refuses a bound
  pod with scheduling gates, and such a pod is placed already. It counts as a bound
  member of its gang. Whoever creates it is warned that it bypassed gang admission,
  in the response; and it is marked so (:data:`BYPASSED_ANNOTATION`), for the leader
  to tell by an event once it sees the pod (`muster.scheduler.cycle.notices`), since
  a pod a Job creates warns only its Job controller.

Where the cluster cannot allocate devices (no `resource.k8s.io/v1`: Kubernetes before
1.34), a gang Job or member pod that claims them is refused with the reason
(:meth:`muster.api.features.ServedFeatures.claim_problems`): such an API server drops
the claims as it stores the pods, which would then run without their devices.

Like every handler here, these only answer: no write, no event (the webhooks are
declared `sideEffects: None`, and anyone who can reach the port can post a review).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import kopf

from muster.api.constants import BYPASSED_ANNOTATION, POD_GROUP_LABEL, POLICY_LABEL
from muster.api.expand import gated_pod_template
from muster.api.features import ServedFeatures
from muster.api.gates import has_gang_gate, pod_group_name, with_gang_gate, without_gang_gate
from muster.api.optin import OptInError, read_job_opt_in
from muster.api.wire import controller_name
from muster.webhooks.advice import advise, node_label_keys
from muster.webhooks.validation import (
    EVERY_FEATURE,
    check_job,
    features_of,
    levels_of,
    refuse,
    refuse_missing_priority_class,
)


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


def bypasses_gang(pod: Mapping[str, Any]) -> str | None:
    """The node a member pod names at creation, so that no gang admission holds it."""
    node = (pod.get("spec") or {}).get("nodeName")
    return node if pod_group_name(pod) and isinstance(node, str) and node else None


def bypass_warning(pod: Mapping[str, Any], node: str) -> str:
    """What the user is told about a member pod created bound to a node."""
    group = pod_group_name(pod)
    return (
        f"spec.nodeName is set ({node}): the pod bypasses gang admission and counts as"
        f" a bound member of PodGroup {group}"
    )


def pod_gates(pod: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The member pod's scheduling gates with ours added; None when nothing changes.

    A pod the cluster's own gang scheduling has taken (`spec.schedulingGroup`, set by
    a 1.37 Job controller with native gang scheduling on), or one that names its
    node already, loses our gate instead: two gang schedulers must never hold the
    same pod, and a bound pod may not be gated at all.
    """
    if not pod_group_name(pod):
        return None
    gates = list((pod.get("spec") or {}).get("schedulingGates") or [])
    if (pod.get("spec") or {}).get("schedulingGroup") or bypasses_gang(pod):
        kept = without_gang_gate(gates)
        return kept if len(kept) != len(gates) else None
    if controller_name(pod, "Job") is not None:
        return None
    if has_gang_gate(gates):
        return None
    return with_gang_gate(gates)


@kopf.on.mutate(
    "batch",
    "v1",
    "jobs",
    id="gate-jobs",
    operations=["CREATE"],
    labels={POLICY_LABEL: kopf.PRESENT},
    persistent=True,
)
async def gate_job(
    body: kopf.Body, patch: kopf.Patch, warnings: list[str], memo: Any, **_: Any
) -> None:
    gate_labelled_job(body, patch, warnings, levels_of(memo), features_of(memo))
    advise(body, warnings, node_label_keys(memo))
    await refuse_missing_priority_class(body, memo)


def gate_labelled_job(
    job: kopf.Body,
    patch: kopf.Patch,
    warnings: list[str],
    levels: Sequence[str],
    features: ServedFeatures = EVERY_FEATURE,
) -> None:
    """Refuse the new labelled Job whose opt-in cannot be honoured, or that asks for
    what this cluster cannot offer; else gate it."""
    check_job(job, warnings, None, levels)
    refuse(features.claim_problems(_template_spec(job), TEMPLATE_SPEC))
    _gate_template(job, patch)


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
def gate_native_job(
    body: kopf.Body, patch: kopf.Patch, warnings: list[str], memo: Any, **_: Any
) -> None:
    refuse(features_of(memo).claim_problems(_template_spec(body), TEMPLATE_SPEC))
    _gate_template(body, patch)
    advise(body, warnings, node_label_keys(memo))


TEMPLATE_SPEC = "spec.template.spec"


def _template_spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((job.get("spec") or {}).get("template") or {}).get("spec") or {}


def _gate_template(job: kopf.Body, patch: kopf.Patch) -> None:
    template = job_template(job)
    if template is not None:
        patch.spec["template"] = template


GATE_PODS = "gate-pods"

GATE_PODS_CONDITION = {
    "name": "not-left-to-its-job",
    "expression": (
        "!object.metadata.?ownerReferences.orValue([]).exists(owner, owner.kind == 'Job'"
        " && owner.?controller.orValue(false))"
        " || object.spec.?schedulingGroup.hasValue()"
        " || object.spec.?nodeName.orValue('') != ''"
    ),
}
"""The pods `pod_gates` and `bypasses_gang` may act on, as a CEL match condition of the
pod webhook: the member pods a Job controls are gated by their template already, so
the API server does not call the webhook for them (a burst's every pod) unless they
name their node or the cluster's own gang scheduling has them. It says in CEL what
the early returns of `pod_gates` say, and the e2e tests hold the two together."""


@kopf.on.mutate(
    "",
    "v1",
    "pods",
    id=GATE_PODS,
    operations=["CREATE"],
    labels={POD_GROUP_LABEL: kopf.PRESENT},
    persistent=True,
)
def gate_pod(body: kopf.Body, patch: kopf.Patch, warnings: list[str], memo: Any, **_: Any) -> None:
    gate_member_pod(body, patch, warnings, features_of(memo))
    advise(body, warnings, None)


def gate_member_pod(
    pod: Mapping[str, Any],
    patch: kopf.Patch,
    warnings: list[str],
    features: ServedFeatures = EVERY_FEATURE,
) -> None:
    """Gate the new member pod, or mark one created bound and warn its creator; refuse
    one that claims devices where this cluster cannot allocate them."""
    refuse(features.claim_problems(pod.get("spec") or {}, "spec"))
    gates = pod_gates(pod)
    if gates is not None:
        patch.spec["schedulingGates"] = gates
    node = bypasses_gang(pod)
    if node is not None:
        warnings.append(bypass_warning(pod, node))
        patch.metadata.annotations[BYPASSED_ANNOTATION] = node
