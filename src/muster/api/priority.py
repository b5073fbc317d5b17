"""A PodGroup's priority, resolved from PriorityClasses as Kubernetes resolves it.

Kubernetes' Priority admission plugin sets a PodGroup's ``priority`` (and
``preemptionPolicy``) from its ``priorityClassName``, or from the globalDefault
class when it names none, or to 0 when there is no default class; and it forbids
a ``priority`` that disagrees. Muster's mutating webhook does the same for its
own PodGroups, and `muster simulate` uses the same function for objects that
never went through admission. The engine resolves the priority of pods and groups
with the same choice of class (`applicable_class`), leniently (`resolved_priority`).

Followed: plugin/pkg/admission/priority/admission.go (`getDefaultPriority`: the
globalDefault class with the lowest value; `admitPod`: no class and no default
gives 0).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from muster.api.constants import HIGHEST_USER_PRIORITY, PREEMPT_LOWER_PRIORITY
from muster.api.problems import Problem

# Priority of pods and groups when no class applies (upstream's constant).
DEFAULT_PRIORITY = 0


class PriorityClassLike(Protocol):
    """What the choice of class reads of a PriorityClass, in whatever form it is kept."""

    @property
    def value(self) -> int: ...

    @property
    def global_default(self) -> bool: ...


Class = TypeVar("Class", bound=PriorityClassLike)


@dataclass(frozen=True, slots=True)
class PriorityClassObject:
    """A PriorityClass object as admission reads it (leniently: the API server has
    validated it)."""

    obj: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.obj.get("metadata", {}).get("name"))

    @property
    def value(self) -> int:
        return int(self.obj.get("value", DEFAULT_PRIORITY))

    @property
    def global_default(self) -> bool:
        return self.obj.get("globalDefault") is True

    @property
    def preemption_policy(self) -> str:
        return str(self.obj.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)


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


def applicable_class(classes: Mapping[str, Class], class_name: str | None) -> Class | None:
    """The class a priority comes from: the named one, else the globalDefault one (of
    several, which two admissions at once can create, the one with the lowest value,
    as the Priority admission plugin picks it), else none (priority 0)."""
    named = classes.get(class_name) if class_name else None
    if named is not None:
        return named
    defaults = [pc for pc in classes.values() if pc.global_default]
    return min(defaults, key=lambda pc: pc.value, default=None)


def resolved_priority(
    classes: Mapping[str, PriorityClassLike], explicit: int | None, class_name: str | None
) -> int:
    """The priority the engine gives a pod or PodGroup that went through admission:
    spec.priority, else its class's (`applicable_class`), else 0.

    A class that is not known (yet) falls back like a pod without one: the API
    server would have refused the pod, so this only happens while events arrive out
    of order, and the priority is refreshed when the class appears.
    """
    if explicit is not None:
        return explicit
    chosen = applicable_class(classes, class_name)
    return DEFAULT_PRIORITY if chosen is None else chosen.value


def resolve_priority(
    spec: Mapping[str, Any], priority_classes: Iterable[Mapping[str, Any]]
) -> ResolvedPriority:
    """The priority a PodGroup with this spec gets; raises :class:`PriorityError`
    when its class does not exist, is above what a pod group may have, or its own
    values contradict the class."""
    by_name = {pc.name: pc for pc in map(PriorityClassObject, priority_classes)}
    name = spec.get("priorityClassName")
    if name and name not in by_name:
        raise PriorityError(priority_class_not_found(name))
    chosen = applicable_class(by_name, name)
    if chosen is None:
        resolved = ResolvedPriority(None, DEFAULT_PRIORITY, PREEMPT_LOWER_PRIORITY)
    else:
        resolved = ResolvedPriority(chosen.name, chosen.value, chosen.preemption_policy)
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
