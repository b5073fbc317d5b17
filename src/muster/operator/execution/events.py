"""Kubernetes Events for what Muster does, on PodGroups, their Jobs and member pods.

Users look at `kubectl describe` first; every transition of a gang is told there,
once, in the words of the condition it changed, on its PodGroup (the object whose
condition changed); what concerns a Job itself (its PodGroup made, its opt-in
refused, its size followed) is told on the Job, whose `Created` event names the
PodGroup to describe.
A failure to post an event, of whatever kind, is logged and otherwise ignored: events
are a courtesy, never a reason to stop scheduling. A replica that cannot prove it
still leads posts none (the client would refuse them anyway).

The leader's recorder (`QueuedEventRecorder`) posts in the background: a gang's
admission tells an event between the write of its plan and the release of its pods,
and a burst of new Jobs tells one each; awaited in line, their round trips delayed
every release and every new PodGroup of a burst.
An event is still queued only once the write it tells of succeeded, so nothing is
told that did not happen; what is queued when the replica stops is not posted.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable

from muster.api.times import rfc3339
from muster.api.wire import JsonObject
from muster.client.kube import Kube, KubeError
from muster.client.paths import EVENTS, namespaced

logger = logging.getLogger(__name__)

COMPONENT = "muster"
NORMAL = "Normal"
WARNING = "Warning"


class EventRecorder:
    """Posts core/v1 Events."""

    def __init__(
        self, kube: Kube, *, instance: str, still_leading: Callable[[], bool] = lambda: True
    ) -> None:
        self.kube = kube
        self.instance = instance
        self.still_leading = still_leading

    async def record(self, involved: JsonObject, kind: str, reason: str, message: str) -> None:
        await self.post(involved, kind, reason, message)

    async def post(self, involved: JsonObject, kind: str, reason: str, message: str) -> None:
        """Post the event now (a failure is logged, not raised)."""
        if not self.still_leading():
            logger.debug("not leading: event %s on %s not recorded", reason, involved)
            return
        namespace = involved.get("namespace") or "default"
        now = rfc3339(time.time())
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{involved.get('name', 'muster')}.{uuid.uuid4().hex[:16]}",
                "namespace": namespace,
            },
            "involvedObject": involved,
            "reason": reason,
            "message": message[:1024],
            "type": kind,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self.kube.request("POST", namespaced(EVENTS, namespace), body=event)
        except (KubeError, ValueError) as error:
            logger.warning("could not record event %s on %s: %s", reason, involved, error)


class QueuedEventRecorder(EventRecorder):
    """`record` queues the event and returns; `run` posts the queue, several at once.

    The queue is bounded: a replica that cannot post (an API server refusing every
    event) keeps at most `capacity` of them, and drops the rest with a log line.
    """

    def __init__(
        self,
        kube: Kube,
        *,
        instance: str,
        still_leading: Callable[[], bool] = lambda: True,
        concurrency: int = 8,
        capacity: int = 10_000,
    ) -> None:
        super().__init__(kube, instance=instance, still_leading=still_leading)
        self.concurrency = concurrency
        self.queue: asyncio.Queue[tuple[JsonObject, str, str, str]] = asyncio.Queue(capacity)

    async def record(self, involved: JsonObject, kind: str, reason: str, message: str) -> None:
        try:
            self.queue.put_nowait((involved, kind, reason, message))
        except asyncio.QueueFull:
            logger.warning("event queue full: event %s on %s dropped", reason, involved)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as posting:
            for _ in range(self.concurrency):
                posting.create_task(self._post_queued())

    async def _post_queued(self) -> None:
        while True:
            event = await self.queue.get()
            await self.post(*event)
