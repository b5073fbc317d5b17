"""Every PriorityClass of the cluster, kept by a watch on every replica.

Admission needs them on every replica (it resolves a PodGroup's priority from its
class), not just on the leader, and there are few of them, so each replica keeps its
own copy and the webhooks never wait on an API call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from muster.api.wire import JsonObject


class PriorityClassStore:
    """An informer sink of PriorityClasses that the webhooks can list."""

    def __init__(self) -> None:
        self.by_name: dict[str, JsonObject] = {}

    def upsert(self, obj: JsonObject) -> bool:
        self.by_name[str((obj.get("metadata") or {}).get("name", ""))] = obj
        return False

    def remove(self, obj: JsonObject) -> bool:
        self.by_name.pop(str((obj.get("metadata") or {}).get("name", "")), None)
        return False

    async def list(self) -> Sequence[Mapping[str, Any]]:
        return list(self.by_name.values())
