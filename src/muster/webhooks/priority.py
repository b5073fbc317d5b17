"""Mutating admission: a PodGroup's priority, resolved from its PriorityClass.

What the Priority admission plugin does for pods (and, on 1.37, for native
PodGroups), done for Muster's PodGroups: ``spec.priority`` and
``spec.preemptionPolicy`` come from ``spec.priorityClassName``, or from the
globalDefault class (whose name is then recorded), or default to 0. A value that
contradicts the class, a class that does not exist, and a class above the highest
priority a pod group may have (the system classes) are refused. On update nothing is
resolved again: the three fields are immutable (the CRD's rules refuse a change,
naming the field), and one left out of the request is kept from the old object, as
the plugin keeps a pod's; so a priority is never taken from a request. An object its
schema refuses is left alone: mutation runs before the schema check, which then
refuses it with the field and words `muster validate` reports.

The PriorityClasses come from the operator: it puts a :data:`PriorityClassLister`
into kopf's memo under :data:`PRIORITY_CLASSES_MEMO` at startup (its informer
cache already holds them), so admission never waits on an extra API call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import kopf

from muster.api.constants import GROUP, POD_GROUP_KIND, POD_GROUP_PLURAL, VERSION
from muster.api.priority import PriorityError, priority_fields, resolve_priority
from muster.api.rules import PRIORITY_FIELDS
from muster.api.validation import schema_problems

PriorityClassLister = Callable[[], Awaitable[Sequence[Mapping[str, Any]]]]
"""Returns every PriorityClass of the cluster, as plain objects."""

PRIORITY_CLASSES_MEMO = "priority_classes"
"""The kopf memo attribute that holds the operator's :data:`PriorityClassLister`."""

HANDLER_ID = "resolve-podgroup-priority"

# Admission's refusal of a request it understood but will not allow, as the
# Priority plugin answers.
FORBIDDEN = 403
UNAVAILABLE = 503


async def list_priority_classes(memo: Any) -> Sequence[Mapping[str, Any]]:
    """The cluster's PriorityClasses from the lister in the memo.

    Without one, admission cannot decide: the request fails (and is retried by
    the client) rather than being admitted with a made-up priority.
    """
    lister: PriorityClassLister | None = getattr(memo, PRIORITY_CLASSES_MEMO, None)
    if lister is None:
        raise kopf.AdmissionError("PriorityClasses are not available yet", code=UNAVAILABLE)
    return await lister()


def priority_patch(
    spec: Mapping[str, Any],
    old_spec: Mapping[str, Any] | None,
    priority_classes: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The spec fields to set; empty when the spec already says it all.

    Raises :class:`muster.api.priority.PriorityError` when the request must be
    refused.
    """
    if old_spec is not None:
        return {
            field: old_spec[field]
            for field in PRIORITY_FIELDS
            if field not in spec and field in old_spec
        }
    fields = priority_fields(resolve_priority(spec, priority_classes))
    return {field: value for field, value in fields.items() if spec.get(field) != value}


def apply_priority(
    body: kopf.Body,
    old: kopf.Body | None,
    priority_classes: Sequence[Mapping[str, Any]],
    patch: kopf.Patch,
) -> None:
    """Patch the PodGroup's priority fields, or refuse it with the reason."""
    spec = body.get("spec")
    if not isinstance(spec, Mapping) or schema_problems(POD_GROUP_KIND, body):
        return  # mutation runs before the schema check, which refuses it in its own words
    old_spec = _spec_of(old) if old is not None else None
    try:
        changes = priority_patch(spec, old_spec, priority_classes)
    except PriorityError as error:
        raise kopf.AdmissionError(str(error.problem), code=FORBIDDEN) from error
    for field, value in changes.items():
        patch.spec[field] = value


def _spec_of(body: kopf.Body) -> Mapping[str, Any]:
    spec = body.get("spec")
    return spec if isinstance(spec, Mapping) else {}


@kopf.on.mutate(
    GROUP,
    VERSION,
    POD_GROUP_PLURAL,
    id=HANDLER_ID,
    operations=["CREATE", "UPDATE"],
    persistent=True,
)
async def resolve_pod_group_priority(
    body: kopf.Body, patch: kopf.Patch, memo: Any, old: kopf.Body | None = None, **_: Any
) -> None:
    classes = [] if old is not None else await list_priority_classes(memo)
    apply_priority(body, old, classes, patch)
