"""The pods the operator keeps: those that can take capacity, and every gang member.

A busy cluster's pods are mostly finished ones after a while (a Job's completed pods
stay until the Job goes) and none of them takes capacity, so the pods that matter
only for capacity are watched as kube-scheduler watches them, without Succeeded and
Failed ones. A gang's members are watched by their label whatever their phase,
because the engine counts a finished member towards its gang and learns runtimes
from it. A pod in both views is one pod: it stays while either view has it, and an
older version from one watch never replaces a newer one the other delivered.

The API server's answer to the operator's own write of a pod (a release, an
ungating) is a third source: the pod as stored after the write, newer than what
either watch delivered until then. Taken in at once, the next cycle sees the pod
released instead of releasing it again while the watch's copy of the change is
still on its way.
"""

from __future__ import annotations

from collections.abc import Mapping

from muster.api.constants import POD_GROUP_LABEL
from muster.api.keys import object_key, revision
from muster.api.wire import FINISHED_PHASES, JsonObject
from muster.client.informer import Sink
from muster.client.name_index import NameIndex

# kube-scheduler's own selector for the pods it keeps in its cache.
CAPACITY_QUERY: Mapping[str, str] = {
    "fieldSelector": ",".join(f"status.phase!={phase}" for phase in sorted(FINISHED_PHASES))
}
MEMBER_QUERY: Mapping[str, str] = {"labelSelector": POD_GROUP_LABEL}


class PodViews:
    """Merges the views' informers into one sink (each view is a bit of `_seen`)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._seen: NameIndex[tuple[int, int]] = NameIndex()  # (views, version) of each pod
        self._views = 0

    def view(self) -> Sink:
        """The sink of one more informer of the same pods."""
        self._views += 1
        return _View(self, 1 << (self._views - 1))

    def upsert(self, view: int, obj: JsonObject) -> bool:
        namespace, name = object_key(obj)
        views, newest = self._seen.get(namespace, name) or (0, 0)
        version = revision(obj)
        if version is not None and version <= newest:
            self._seen.put(namespace, name, (views | view, newest))
            return False
        self._seen.put(namespace, name, (views | view, newest if version is None else version))
        return self.sink.upsert(obj)

    def answer(self, obj: JsonObject) -> bool:
        """Take in a pod as a write of ours returned it; a pod that no view has (it
        was deleted meanwhile) is not brought back."""
        if self._seen.get(*object_key(obj)) is None:
            return False
        return self.upsert(0, obj)

    def remove(self, view: int, obj: JsonObject) -> bool:
        namespace, name = object_key(obj)
        views, newest = self._seen.pop(namespace, name) or (0, 0)
        if views & ~view:  # still in another view: it left this one, it still exists
            self._seen.put(namespace, name, (views & ~view, newest))
            return False
        return self.sink.remove(obj)


class _View:
    def __init__(self, views: PodViews, bit: int) -> None:
        self.views = views
        self.bit = bit

    def upsert(self, obj: JsonObject) -> bool:
        return self.views.upsert(self.bit, obj)

    def remove(self, obj: JsonObject) -> bool:
        return self.views.remove(self.bit, obj)
