"""The cluster's topology levels, kept by a watch on every replica for admission.

A preferred level must be one of the cluster's levels, declared once in a Kueue
Topology where the cluster has one, else by `--topology-levels` (`declared_levels`,
the rule the engine follows too). Admission runs on every replica, not only the
leader, and Topologies are few: each replica keeps its own, as it keeps the
PriorityClasses, and the webhooks never wait on an API call.
"""

from __future__ import annotations

from muster.api.keys import object_key
from muster.api.preferences import declared_levels, kueue_levels
from muster.api.wire import JsonObject


class TopologyLevels:
    """An informer sink of Kueue Topologies that says the levels admission holds to."""

    def __init__(self, configured: tuple[str, ...]) -> None:
        self.configured = configured
        self.by_name: dict[str, tuple[str, ...]] = {}

    def upsert(self, obj: JsonObject) -> bool:
        _, name = object_key(obj)
        levels = kueue_levels(obj)
        if levels is None:
            self.by_name.pop(name, None)
        else:
            self.by_name[name] = levels
        return False

    def remove(self, obj: JsonObject) -> bool:
        self.by_name.pop(object_key(obj)[1], None)
        return False

    def levels(self) -> tuple[str, ...]:
        return declared_levels(self.by_name, self.configured)
