"""A status condition found by type, leniently: malformed entries are skipped."""

from __future__ import annotations

from typing import Any

import pytest

from muster.scheduler.objects.conditions import condition

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
