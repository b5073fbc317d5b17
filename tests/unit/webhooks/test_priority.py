"""The PodGroup priority webhook: what it patches, what it refuses."""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any, cast

import kopf
import pytest

from muster.webhooks.priority import (
    PRIORITY_CLASSES_MEMO,
    apply_priority,
    list_priority_classes,
    priority_patch,
)

CLASSES = [{"metadata": {"name": "research"}, "value": 1000}]


GANG = {"schedulingPolicy": {"gang": {"minCount": 2}}}


def body(spec: dict[str, Any]) -> kopf.Body:
    return kopf.Body(
        {
            "apiVersion": "scheduling.muster.dev/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g"},
            "spec": spec,
        }
    )


def test_create_sets_priority_from_the_class() -> None:
    assert priority_patch({"priorityClassName": "research"}, None, CLASSES) == {
        "priority": 1000,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def test_create_with_everything_already_right_patches_nothing() -> None:
    spec = {
        "priorityClassName": "research",
        "priority": 1000,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    assert priority_patch(spec, None, CLASSES) == {}


def test_update_keeps_the_old_priority_when_left_out() -> None:
    old = {"priorityClassName": "research", "priority": 1000, "preemptionPolicy": "Never"}
    assert priority_patch({"priorityClassName": "research"}, old, []) == {
        "priority": 1000,
        "preemptionPolicy": "Never",
    }
    assert priority_patch({}, old, []) == old


def test_update_never_takes_a_priority_from_the_request() -> None:
    """A raise is left in the request for the CRD's immutability rule to refuse."""
    old = {"priorityClassName": "research", "priority": 1000, "preemptionPolicy": "Never"}
    raised = {**old, "priority": 1_000_000_000}
    assert priority_patch(raised, old, CLASSES) == {}


def test_patch_goes_into_the_spec() -> None:
    patch = kopf.Patch()
    apply_priority(
        body({"schedulingPolicy": {"basic": {}}, "priorityClassName": "research"}),
        None,
        CLASSES,
        patch,
    )
    assert patch == {"spec": {"priority": 1000, "preemptionPolicy": "PreemptLowerPriority"}}


def test_a_missing_class_is_forbidden() -> None:
    with pytest.raises(kopf.AdmissionError, match='PriorityClass "gold" not found') as raised:
        apply_priority(body({**GANG, "priorityClassName": "gold"}), None, CLASSES, kopf.Patch())
    assert raised.value.code == 403


def test_what_the_schema_refuses_is_left_to_the_schema_check() -> None:
    patch = kopf.Patch()
    apply_priority(body({"priority": 3}), None, CLASSES, patch)  # no schedulingPolicy
    apply_priority(body({**GANG, "preemptionPolicy": "Sometimes"}), None, CLASSES, patch)
    assert patch == {}


async def test_classes_come_from_the_memo() -> None:
    async def lister() -> Sequence[Mapping[str, Any]]:
        return CLASSES

    memo = types.SimpleNamespace(**{PRIORITY_CLASSES_MEMO: lister})
    assert await list_priority_classes(memo) == CLASSES


async def test_without_classes_admission_fails_rather_than_guessing() -> None:
    with pytest.raises(kopf.AdmissionError) as raised:
        await list_priority_classes(types.SimpleNamespace())
    assert raised.value.code == 503


def test_a_malformed_spec_is_left_to_validation() -> None:
    patch = kopf.Patch()
    malformed: dict[str, Any] = {"metadata": {"name": "g"}, "spec": "gang"}
    apply_priority(kopf.Body(cast(Any, malformed)), None, CLASSES, patch)
    assert patch == {}
