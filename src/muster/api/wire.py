"""Kubernetes objects as the API server and YAML files hold them (plain JSON, not the
pydantic models, which are for validation and schemas), and the few facts about them
that every layer reads: the engine, the operator and `muster simulate` alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JsonObject = dict[str, Any]
"""An object, or any part of one, as decoded JSON."""

SUCCEEDED = "Succeeded"
FINISHED_PHASES = frozenset({SUCCEEDED, "Failed"})
"""The phases of a pod that has ended for good: it holds no capacity any more, and
its Job has counted it."""


def controller_name(obj: Mapping[str, Any], kind: str) -> str | None:
    """The name of the object's controller (its owner reference marked `controller`;
    same namespace) when that controller is of `kind`, e.g. a pod's Job."""
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(owner, Mapping) and owner.get("controller") and owner.get("kind") == kind:
            name = owner.get("name")
            return name if isinstance(name, str) and name else None
    return None
