"""The label keys the cluster's nodes carry, kept by a watch on every replica for
admission's warnings (a topology level no node carries, `muster.api.advice`).

Admission runs on every replica, not only the leader whose cache holds the nodes,
and never waits on an API call; so each replica keeps what the warnings need and
nothing more: each node's label keys (interned: the same few keys on every node),
and how many nodes carry each. Until the first list is in, admission warns about
no level rather than about every one (`muster.operator.app`).
"""

from __future__ import annotations

import sys
from collections import Counter

from muster.api.keys import object_key
from muster.api.wire import JsonObject


class NodeLabelKeys:
    """An informer sink of Nodes that says which label keys some node carries.

    The webhooks read `carried` from their own thread: it is a frozen set, replaced
    (never changed) when a key comes or goes, which a node's heartbeat never does.
    """

    def __init__(self) -> None:
        self.by_node: dict[str, frozenset[str]] = {}
        self.counts: Counter[str] = Counter()
        self.carried: frozenset[str] = frozenset()

    def upsert(self, obj: JsonObject) -> bool:
        _, name = object_key(obj)
        labels = (obj.get("metadata") or {}).get("labels") or {}
        keys = frozenset(sys.intern(key) for key in labels if isinstance(key, str))
        old = self.by_node.get(name, frozenset())
        if keys != old:
            self.by_node[name] = keys
            self._count(keys - old, old - keys)
        return False

    def remove(self, obj: JsonObject) -> bool:
        self._count(frozenset(), self.by_node.pop(object_key(obj)[1], frozenset()))
        return False

    def _count(self, added: frozenset[str], removed: frozenset[str]) -> None:
        self.counts.update(added)
        self.counts.subtract(removed)
        gone = [key for key in removed if self.counts[key] <= 0]
        for key in gone:
            del self.counts[key]
        if gone or any(self.counts[key] == 1 for key in added):
            self.carried = frozenset(self.counts)
