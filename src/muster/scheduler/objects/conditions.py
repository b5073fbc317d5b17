"""A status condition by type, read leniently: an entry that is not a mapping is
skipped, so one malformed condition does not make a pod or a PodGroup unusable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def condition(status: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """The condition of that type in `status.conditions`, or None."""
    for item in status.get("conditions") or []:
        if isinstance(item, dict) and item.get("type") == kind:
            return item
    return None
