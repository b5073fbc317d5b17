"""Admission warnings: what is admitted, yet likely a mistake the user should hear
of while typing, not when the gang behaves oddly later.

- On every object Muster's webhooks are called for (opted-in Jobs, PodGroups,
  Workloads, member pods): a key under `scheduling.muster.dev/` that Muster does not
  know, with the nearest known one; a topology level (required, preferred, slice)
  that no node carries at that moment (`muster.api.advice`), from the node label
  keys each replica keeps (`muster.operator.webhook_feeds.node_labels`).
- On a Job that opted in by the native field `spec.scheduling`, where the API server
  dropped that field (its `WorkloadWithJob` feature is off): the Job runs without
  gang scheduling. The API server runs mutating admission, prepares the object for
  storage (which drops the field: `pkg/api/job` `DropDisabledFields`, called from the
  Job strategy's `PrepareForCreate`), then runs validating admission (k8s.io/apiserver
  `registry/generic/registry/store.go` `Create`: `BeforeCreate`, then
  `createValidation`). So a validating webhook sees the Job as it will be stored,
  and its match condition selects exactly the Jobs whose template the gating
  webhook marked for the field (`GATED_FOR_ANNOTATION`) and that no longer carry it.
  This is what the leader later tells the Job by its `SchedulingFieldDropped` event
  (`muster.scheduler.lifecycle.let_go`), said at `kubectl apply` time.

Warnings never refuse anything, and their webhook ignores failures.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import kopf

from muster.api.advice import bounded, key_warnings, topology_warnings
from muster.api.constants import GATED_FOR_ANNOTATION, GATED_FOR_FIELD, POLICY_GANG, POLICY_LABEL
from muster.scheduler import dropped_field

# Where the operator puts what says the label keys the nodes carry (None until the
# nodes are listed: then no topology warning is given).
NODE_LABEL_KEYS_MEMO = "node_label_keys"

DROPPED_FIELD_WARNING = (
    "spec.scheduling dropped by the API server (WorkloadWithJob off): no gang;"
    f" use label {POLICY_LABEL}: {POLICY_GANG}"
)

WARN_DROPPED_FIELD = "warn-dropped-field"

WARN_DROPPED_FIELD_CONDITION = {
    "name": "gated-for-a-dropped-field",
    "expression": (
        "object.spec.template.?metadata.?annotations"
        f"[?'{GATED_FOR_ANNOTATION}'].orValue('') == '{GATED_FOR_FIELD}'"
        " && !has(object.spec.scheduling)"
    ),
}
"""The Jobs `dropped_field_warning` may warn about, as a CEL match condition: so the
API server calls this webhook for no other Job. It says in CEL what `gated_for_field`
says of a Job without the field; the e2e tests hold the two together."""


def node_label_keys(memo: Any) -> Collection[str] | None:
    """The label keys the nodes carry, or None while they are not known."""
    keys: Callable[[], Collection[str] | None] | None = getattr(memo, NODE_LABEL_KEYS_MEMO, None)
    return None if keys is None else keys()


def advise(body: Mapping[str, Any], warnings: list[str], node_keys: Collection[str] | None) -> None:
    """Add the object's warnings to the request's, keeping them all within bounds."""
    found = key_warnings(body)
    if node_keys is not None:
        found.extend(topology_warnings(body, node_keys))
    if found:
        warnings[:] = bounded([*warnings, *found])


def dropped_field_warning(job: Mapping[str, Any]) -> str | None:
    """The warning for a Job that the API server stored without the native field its
    pods were gated for; None for any other (one that opts in by the label too is a
    gang all the same)."""
    return None if dropped_field(job) is None else DROPPED_FIELD_WARNING


@kopf.on.validate(
    "batch",
    "v1",
    "jobs",
    id=WARN_DROPPED_FIELD,
    operations=["CREATE"],
    persistent=True,
    ignore_failures=True,
)
def warn_dropped_field(body: kopf.Body, warnings: list[str], **_: Any) -> None:
    warning = dropped_field_warning(body)
    if warning is not None:
        warnings.append(warning)
