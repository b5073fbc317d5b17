"""ObjectReferences, the way Events and owners name the objects they are about."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.api.wire import JsonObject


def reference(obj: Mapping[str, Any]) -> JsonObject:
    """An ObjectReference to a full object."""
    metadata = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "namespace": metadata.get("namespace", ""),
        "name": metadata.get("name", ""),
        "uid": metadata.get("uid", ""),
    }


def owner_references(obj: Mapping[str, Any], kind: str) -> list[JsonObject]:
    """ObjectReferences to the owners of an object that are of one kind (e.g. its Job)."""
    metadata = obj.get("metadata") or {}
    return [
        {
            "apiVersion": owner.get("apiVersion", ""),
            "kind": owner.get("kind", ""),
            "namespace": metadata.get("namespace", ""),
            "name": owner.get("name", ""),
            "uid": owner.get("uid", ""),
        }
        for owner in metadata.get("ownerReferences") or []
        if owner.get("kind") == kind
    ]
