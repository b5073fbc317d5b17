"""A status condition found by type, leniently: malformed entries are skipped."""

from __future__ import annotations

from typing import Any

import pytest

from muster.scheduler.objects.conditions import admitted, condition, is_true

READY = {"type": "Ready", "status": "True"}


@pytest.mark.parametrize(
    ("status", "found"),
    [
        ({}, None),
        ({"conditions": None}, None),
        ({"conditions": [READY]}, READY),
        ({"conditions": ["junk", 7, {"type": "Other"}, READY]}, READY),
        ({"conditions": [{"type": "Other"}]}, None),
    ],
)
def test_a_condition_is_found_by_type_past_malformed_entries(
    status: dict[str, Any], found: dict[str, Any] | None
) -> None:
    assert condition(status, "Ready") == found


def _status(*conditions: Any) -> dict[str, Any]:
    return {"conditions": list(conditions)}


def test_is_true_only_for_a_true_condition() -> None:
    assert is_true(_status({"type": "Ready", "status": "True"}), "Ready")
    assert not is_true(_status({"type": "Ready", "status": "Unknown"}), "Ready")
    assert not is_true({}, "Ready")


def test_admitted_reads_pod_group_scheduled() -> None:
    assert admitted(_status({"type": "PodGroupScheduled", "status": "True"}))
    assert not admitted(_status({"type": "PodGroupScheduled", "status": "False"}))
    assert not admitted(_status({"type": "PodGroupInitiallyScheduled", "status": "True"}))
