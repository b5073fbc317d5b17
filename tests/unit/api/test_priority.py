"""Priority resolution, as the Priority admission plugin does it."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.priority import (
    PriorityClassObject,
    PriorityError,
    ResolvedPriority,
    applicable_class,
    priority_fields,
    resolve_priority,
    resolved_priority,
)


def priority_class(
    name: str, value: int, *, default: bool = False, policy: str | None = None
) -> dict[str, Any]:
    pc: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if default:
        pc["globalDefault"] = True
    if policy is not None:
        pc["preemptionPolicy"] = policy
    return pc


CLASSES = [priority_class("research", 1000), priority_class("batch", 10, policy="Never")]


def test_named_class_sets_priority_and_policy() -> None:
    assert resolve_priority({"priorityClassName": "batch"}, CLASSES) == ResolvedPriority(
        "batch", 10, "Never"
    )
    assert resolve_priority({"priorityClassName": "research"}, CLASSES) == ResolvedPriority(
        "research", 1000, "PreemptLowerPriority"
    )


def test_no_class_and_no_default_is_zero() -> None:
    assert resolve_priority({}, CLASSES) == ResolvedPriority(None, 0, "PreemptLowerPriority")


def test_the_lowest_global_default_applies_and_is_named() -> None:
    classes = [
        *CLASSES,
        priority_class("high-default", 500, default=True),
        priority_class("low-default", 5, default=True),
    ]
    assert resolve_priority({}, classes) == ResolvedPriority(
        "low-default", 5, "PreemptLowerPriority"
    )


def test_missing_class_is_refused() -> None:
    with pytest.raises(PriorityError, match=r'spec\.priorityClassName: PriorityClass "gold"'):
        resolve_priority({"priorityClassName": "gold"}, CLASSES)


def test_a_system_class_is_refused_for_a_pod_group() -> None:
    classes = [*CLASSES, priority_class("system-cluster-critical", 2_000_000_000)]
    with pytest.raises(
        PriorityError,
        match=r'spec\.priorityClassName: PriorityClass "system-cluster-critical" has the value'
        r" 2000000000: a pod group's priority is at most 1000000000",
    ):
        resolve_priority({"priorityClassName": "system-cluster-critical"}, classes)


def test_a_matching_priority_is_accepted() -> None:
    spec = {"priorityClassName": "research", "priority": 1000}
    assert resolve_priority(spec, CLASSES).priority == 1000


def test_a_contradicting_priority_is_refused() -> None:
    with pytest.raises(PriorityError) as raised:
        resolve_priority({"priorityClassName": "research", "priority": 7}, CLASSES)
    assert raised.value.problem.path == "spec.priority"
    assert "(7) must match the priority computed (1000)" in raised.value.problem.message


def test_a_contradicting_preemption_policy_is_refused() -> None:
    with pytest.raises(PriorityError) as raised:
        resolve_priority(
            {"priorityClassName": "batch", "preemptionPolicy": "PreemptLowerPriority"}, CLASSES
        )
    assert raised.value.problem.path == "spec.preemptionPolicy"


def test_fields_name_the_class_only_when_one_applies() -> None:
    assert priority_fields(ResolvedPriority(None, 0, "PreemptLowerPriority")) == {
        "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    assert priority_fields(ResolvedPriority("batch", 10, "Never")) == {
        "priority": 10,
        "preemptionPolicy": "Never",
        "priorityClassName": "batch",
    }


def by_name(*classes: dict[str, Any]) -> dict[str, PriorityClassObject]:
    return {pc.name: pc for pc in map(PriorityClassObject, classes)}


def test_the_class_that_applies_is_the_named_one_else_the_lowest_default() -> None:
    classes = by_name(
        priority_class("research", 1000),
        priority_class("high-default", 50, default=True),
        priority_class("low-default", 5, default=True),
    )
    assert applicable_class(classes, "research") == classes["research"]
    assert applicable_class(classes, None) == classes["low-default"]
    assert applicable_class(by_name(*CLASSES), None) is None


def test_the_engine_honours_an_explicit_priority_and_falls_back_on_an_unknown_class() -> None:
    classes = by_name(priority_class("research", 1000), priority_class("d", 5, default=True))
    assert resolved_priority(classes, 7, "research") == 7
    assert resolved_priority(classes, None, "research") == 1000
    assert resolved_priority(classes, None, "not-yet-seen") == 5
    assert resolved_priority({}, None, "not-yet-seen") == 0
