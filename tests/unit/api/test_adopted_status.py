"""The status told back to an adopted PodGroup, in its own API's words."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.adopted_status import adopted_status, status_patch
from muster.api.adoption import SCHEDULER_PLUGINS, VOLCANO


def foreign(phase: str | None = None, size: int = 4) -> dict[str, Any]:
    status = {} if phase is None else {"status": {"phase": phase}}
    return {"metadata": {"name": "g"}, "spec": {"minMember": size}, **status}


def muster_group(status: str, reason: str, **pods: int) -> dict[str, Any]:
    condition = {
        "type": "PodGroupScheduled",
        "status": status,
        "reason": reason,
        "message": "why",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    counts = {"total": 0, "running": 0, "succeeded": 0, "failed": 0, "scheduled": 0, **pods}
    return {"status": {"conditions": [condition], "pods": counts}}


@pytest.mark.parametrize(
    ("before", "group", "phase"),
    [
        (None, muster_group("False", "WaitingForPods"), "Inqueue"),
        (None, muster_group("False", "Unschedulable", total=4), "Pending"),
        ("Inqueue", muster_group("False", "Unschedulable", total=4), "Inqueue"),
        (None, muster_group("True", "Scheduled", total=4), "Inqueue"),
        (None, muster_group("True", "Scheduled", total=5, running=4), "Running"),
        ("Running", muster_group("True", "Scheduled", total=4, succeeded=4), "Completed"),
    ],
)
def test_volcano_phases(before: str | None, group: dict[str, Any], phase: str) -> None:
    assert adopted_status(VOLCANO, foreign(before), group)["phase"] == phase


@pytest.mark.parametrize(
    ("group", "phase"),
    [
        (muster_group("False", "WaitingForPods"), "Pending"),
        (muster_group("True", "Scheduled", total=4, scheduled=4), "Scheduled"),
        (muster_group("True", "Scheduled", total=4, running=3, succeeded=1), "Running"),
        (muster_group("True", "Scheduled", total=4, succeeded=4), "Finished"),
    ],
)
def test_scheduler_plugins_phases(group: dict[str, Any], phase: str) -> None:
    assert adopted_status(SCHEDULER_PLUGINS, foreign(), group)["phase"] == phase


def test_the_counts_and_volcano_s_condition_say_what_muster_says() -> None:
    group = muster_group("False", "Unschedulable", total=4, failed=1, scheduled=2)
    volcano = adopted_status(VOLCANO, foreign(), group)
    assert (volcano["running"], volcano["succeeded"], volcano["failed"]) == (0, 0, 1)
    assert volcano["conditions"] == [
        {
            "type": "Unschedulable",
            "status": "True",
            "reason": "Unschedulable",
            "message": "why",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    assert "conditions" not in adopted_status(SCHEDULER_PLUGINS, foreign(), group)


def test_a_status_already_there_needs_no_patch_and_others_fields_are_kept() -> None:
    group = muster_group("False", "WaitingForPods")
    patch = status_patch(SCHEDULER_PLUGINS, foreign(), group)
    assert patch is not None
    there = foreign() | {"status": {**patch["status"], "occupiedBy": "x"}}
    assert status_patch(SCHEDULER_PLUGINS, there, group) is None
    # Written back by a Go client that leaves zeros out, it is still there.
    zeros_left_out = foreign() | {"status": {"phase": patch["status"]["phase"]}}
    assert status_patch(SCHEDULER_PLUGINS, zeros_left_out, group) is None
