"""A PodGroup's priority, resolved from PriorityClasses as Kubernetes resolves it.

Kubernetes' Priority admission plugin sets a PodGroup's ``priority`` (and
``preemptionPolicy``) from its ``priorityClassName``, or from the globalDefault
class when it names none, or to 0 when there is no default class; and it forbids
a ``priority`` that disagrees. Muster's mutating webhook does the same for its
own PodGroups, and `muster simulate` uses the same function for objects that
never went through admission.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from muster.api.constants import HIGHEST_USER_PRIORITY, PREEMPT_LOWER_PRIORITY
from muster.api.problems import Problem

# Priority of pods and groups when no class applies (upstream's constant).
DEFAULT_PRIORITY = 0

Class = TypeVar("Class")


@dataclass(frozen=True, slots=True)
class ResolvedPriority:
    """What admission writes into the spec; ``priority_class_name`` is None when no
    class applies."""

    priority_class_name: str | None
    priority: int
    preemption_policy: str


class PriorityError(ValueError):
    """The spec's priority fields cannot be honoured."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def priority_class_not_found(name: str, path: str = "spec.priorityClassName") -> Problem:
    """The problem of a priorityClassName (at `path`) that names no PriorityClass."""
    return Problem(path, f"PriorityClass {json.dumps(name)} not found")


def lowest_default(defaults: Iterable[Class], value: Callable[[Class], int]) -> Class | None:
    """The globalDefault class that applies: of several (two can be created at once,
    admission does not serialise them), the one with the lowest value, as the Priority
    admission plugin picks it. Takes classes in any form, given how to read a value."""
    return min(defaults, key=value, default=None)


def default_priority_class(
    priority_classes: Iterable[Mapping[str, Any]],
) -> Mapping[str, Any] | None:
    """The globalDefault class among these PriorityClass objects (see `lowest_default`)."""
    defaults = [pc for pc in priority_classes if pc.get("globalDefault") is True]
    return lowest_default(defaults, lambda pc: int(pc.get("value", DEFAULT_PRIORITY)))


def resolve_priority(
    spec: Mapping[str, Any], priority_classes: Iterable[Mapping[str, Any]]
) -> ResolvedPriority:
    """The priority a PodGroup with this spec gets; raises :class:`PriorityError`
    when its class does not exist, is above what a pod group may have, or its own
    values contradict the class."""
    classes = list(priority_classes)
    name = spec.get("priorityClassName")
    if name:
        by_name = {pc.get("metadata", {}).get("name"): pc for pc in classes}
        if name not in by_name:
            raise PriorityError(priority_class_not_found(name))
        chosen: Mapping[str, Any] | None = by_name[name]
    else:
        chosen = default_priority_class(classes)

    if chosen is None:
        resolved = ResolvedPriority(None, DEFAULT_PRIORITY, PREEMPT_LOWER_PRIORITY)
    else:
        resolved = ResolvedPriority(
            chosen["metadata"]["name"],
            int(chosen.get("value", DEFAULT_PRIORITY)),
            chosen.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY,
        )
    if resolved.priority > HIGHEST_USER_PRIORITY:
        raise PriorityError(
            Problem(
                "spec.priorityClassName",
                f"PriorityClass {json.dumps(resolved.priority_class_name)} has the value"
                f" {resolved.priority}: a pod group's priority is at most"
                f" {HIGHEST_USER_PRIORITY}; higher values are for the system classes,"
                " which only pods may use",
            )
        )

    given = spec.get("priority")
    if given is not None and given != resolved.priority:
        raise PriorityError(
            Problem(
                "spec.priority",
                f"priority set in the pod group ({given}) must match the priority computed"
                f" ({resolved.priority}) based on the priority class set in the spec",
            )
        )
    given_policy = spec.get("preemptionPolicy")
    if given_policy is not None and given_policy != resolved.preemption_policy:
        raise PriorityError(
            Problem(
                "spec.preemptionPolicy",
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided in"
                f" pod group spec; priority admission controller computed"
                f" {resolved.preemption_policy} from the given PriorityClass name",
            )
        )
    return resolved


def priority_fields(resolved: ResolvedPriority) -> dict[str, Any]:
    """The spec fields admission sets, ready to merge into a spec."""
    fields: dict[str, Any] = {
        "priority": resolved.priority,
        "preemptionPolicy": resolved.preemption_policy,
    }
    if resolved.priority_class_name is not None:
        fields["priorityClassName"] = resolved.priority_class_name
    return fields


def with_resolved_priority(
    pod_group: Mapping[str, Any], priority_classes: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """The PodGroup with the priority fields admission would give it; raises
    :class:`PriorityError` where admission would refuse it. For the PodGroups the
    operator makes itself, which the webhooks leave alone."""
    spec = pod_group.get("spec") or {}
    resolved = resolve_priority(spec, priority_classes)
    return {**pod_group, "spec": {**spec, **priority_fields(resolved)}}
