from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from muster.simulation import status

NOW = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
LATER = datetime(2026, 1, 1, 11, 0, tzinfo=UTC)


def pod_group() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }


def conditions(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {condition["type"]: condition for condition in body["status"]["conditions"]}


def test_admitted_records_the_conditions_and_the_plan() -> None:
    original = pod_group()
    body = status.admitted(original, {"p-0": "n1"}, NOW)
    assert body["status"]["plan"] == {"p-0": "n1"}
    assert body["status"]["admittedAt"] == "2026-01-01T10:00:00Z"
    by_type = conditions(body)
    assert by_type["PodGroupScheduled"]["status"] == "True"
    assert by_type["PodGroupScheduled"]["reason"] == "Scheduled"
    assert by_type["PodGroupInitiallyScheduled"]["status"] == "True"
    assert "status" not in original
    assert status.scheduled_condition(body) == by_type["PodGroupScheduled"]


def test_preempted_requeues_but_initially_scheduled_stays_true() -> None:
    body = status.preempted(status.admitted(pod_group(), {"p-0": "n1"}, NOW), "by x", LATER)
    by_type = conditions(body)
    assert by_type["PodGroupScheduled"]["status"] == "False"
    assert by_type["PodGroupScheduled"]["reason"] == "Preempted"
    assert by_type["PodGroupScheduled"]["message"] == "by x"
    assert by_type["PodGroupScheduled"]["lastTransitionTime"] == "2026-01-01T11:00:00Z"
    assert by_type["PodGroupInitiallyScheduled"]["status"] == "True"
    assert by_type["PodGroupInitiallyScheduled"]["lastTransitionTime"] == "2026-01-01T10:00:00Z"
    assert "plan" not in body["status"]


def test_planned_adds_to_the_plan() -> None:
    body = status.planned(status.admitted(pod_group(), {"p-0": "n1"}, NOW), {"p-1": "n2"})
    assert body["status"]["plan"] == {"p-0": "n1", "p-1": "n2"}


def test_unplanned_drops_one_pod_from_the_plan() -> None:
    admitted = status.admitted(pod_group(), {"p-0": "n1", "p-1": "n2"}, NOW)
    body = status.unplanned(admitted, "p-0")
    assert body["status"]["plan"] == {"p-1": "n2"}
    assert admitted["status"]["plan"] == {"p-0": "n1", "p-1": "n2"}


def test_a_pod_group_without_status_has_no_scheduled_condition() -> None:
    assert status.scheduled_condition(pod_group()) is None
