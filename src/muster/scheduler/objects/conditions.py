"""A status condition by type, read leniently: an entry that is not a mapping is
skipped, so one malformed condition does not make a pod or a PodGroup unusable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.api.constants import CONDITION_SCHEDULED


def condition(status: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """The condition of that type in `status.conditions`, or None."""
    for item in status.get("conditions") or []:
        if isinstance(item, dict) and item.get("type") == kind:
            return item
    return None


def is_true(status: Mapping[str, Any], kind: str) -> bool:
    """Whether the condition of that type is there and True (not False, not Unknown)."""
    found = condition(status, kind)
    return found is not None and found.get("status") == "True"


def admitted(status: Mapping[str, Any]) -> bool:
    """Whether a PodGroup's status says its gang is admitted: PodGroupScheduled True,
    written from its admission until it is taken down."""
    return is_true(status, CONDITION_SCHEDULED)
