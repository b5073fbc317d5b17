"""List-then-watch of one resource, delivering every change to a sink, forever.

The classic informer protocol: list (paginated) to get a resourceVersion, watch from
it with bookmarks so the version stays fresh while nothing changes, resume the watch
from the last version seen when the server ends it or the connection fails, and
relist only when the server says the version is too old (410 Gone). After a relist,
objects that vanished in between are reported as deleted, so the sink never keeps a
ghost.

Failures (the API server restarting, a broken or silent connection, throttling, even
a bug of the sink's) are retried forever with exponential backoff and jitter, so
that the operator's informers neither hammer a recovering server nor come back in
lockstep with each other. Each
watch asks the server to end it after a random time between `watch_timeout` and
twice that (as client-go does), which spreads the reconnections too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from muster.api.keys import object_key, resource_version
from muster.api.wire import JsonObject
from muster.client.kube import Kube, KubeError
from muster.client.name_index import NameIndex
from muster.client.retry import ExponentialBackoff, jittered

logger = logging.getLogger(__name__)

WATCH_TIMEOUT_SECONDS = 300.0
# A quiet watch still gets a bookmark about once a minute; a stream silent for longer
# than this is a connection that died without closing, and is resumed.
READ_TIMEOUT_SECONDS = 90.0
RETRY_INITIAL_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0
ROUTINE_FAILURES = 3
"""Failures of a watch in a row that are routine and logged at INFO: a connection
silent past its read timeout, a watch expired by an etcd compaction (410 Gone), an API
server restarting; the watch resumes (or relists) at once. One more in a row is a
WARNING: then the API server needs a person to look at it."""


class Sink(Protocol):
    """Receives one resource's objects as they change; says whether scheduling cares."""

    def upsert(self, obj: JsonObject) -> bool: ...

    def remove(self, obj: JsonObject) -> bool: ...


def slim(obj: JsonObject) -> JsonObject:
    """Drop managedFields: the largest part of most objects, and nobody here reads it."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


class _ExpiredError(Exception):
    """The watch's resourceVersion is too old: only a relist can continue."""


@dataclass(frozen=True, slots=True)
class WatchCounters:
    """What an informer tells its caller's counters: a watch expired (a relist
    follows), a watch or list failed (a retry follows)."""

    expired: Callable[[], None] = lambda: None
    error: Callable[[], None] = lambda: None


class Informer:
    """Keeps a sink in step with one collection of the API server."""

    def __init__(
        self,
        kube: Kube,
        path: str,
        sink: Sink,
        *,
        on_change: Callable[[], None],
        query: Mapping[str, str] | None = None,
        watch_timeout: float = WATCH_TIMEOUT_SECONDS,
        counters: WatchCounters = WatchCounters(),
    ) -> None:
        self.kube = kube
        self.path = path
        self.sink = sink
        self.query = dict(query or {})
        self.on_change = on_change
        self.watch_timeout = watch_timeout
        self.on_expired = counters.expired
        self.on_error = counters.error
        self.synced = asyncio.Event()
        self.known: NameIndex[bool] = NameIndex()  # what the sink has from here
        self.resource_version: str | None = None  # None: nothing listed to resume from
        self.backoff = ExponentialBackoff(initial=RETRY_INITIAL_SECONDS, maximum=RETRY_MAX_SECONDS)

    async def run(self) -> None:
        """List, then watch and resume; relist on expiry only; retry forever (until cancelled)."""
        while True:
            try:
                if self.resource_version is None:
                    self.resource_version = await self._relist()
                if await self._watch_once(self.resource_version):
                    self.backoff.reset()
                    continue
                delay = self.backoff.next()  # an empty watch that ended at once
            except _ExpiredError:
                delay = self.backoff.next()  # a relist is expensive: no loop of them either
                logger.log(
                    self._level(),
                    "watch of %s expired (410 Gone); relisting in %.1fs",
                    self.path,
                    delay,
                )
                self.on_expired()
                self.resource_version = None
            except (KubeError, ValueError) as error:
                delay = self.backoff.next()
                if isinstance(error, KubeError) and error.retry_after:
                    delay = max(delay, min(error.retry_after, RETRY_MAX_SECONDS))
                logger.log(
                    self._level(),
                    "watch of %s failed (%s); resuming in %.1fs",
                    self.path,
                    error,
                    delay,
                )
                self.on_error()
            except Exception:  # a sink's bug: what it holds is in doubt, so start over
                delay = self.backoff.next()
                logger.exception("informer of %s failed; relisting in %.1fs", self.path, delay)
                self.on_error()
                self.resource_version = None
            await asyncio.sleep(delay)

    def _level(self) -> int:
        """How loud a failure of the watch is, by how many came in a row (its backoff's
        count, which already includes this one): see `ROUTINE_FAILURES`."""
        return logging.WARNING if self.backoff.failures > ROUTINE_FAILURES else logging.INFO

    async def _relist(self) -> str:
        listed: NameIndex[bool] = NameIndex()
        resource_version = ""
        async for items, version in self.kube.list_pages(self.path, query=self.query):
            resource_version = version
            for item in items:
                listed.put(*object_key(item), True)
                self.sink.upsert(slim(item))
        for namespace, name in self.known.missing_from(listed):
            self.sink.remove({"metadata": {"namespace": namespace, "name": name}})
        self.known = listed
        self.synced.set()
        self.on_change()
        return resource_version

    async def _watch_once(self, resource_version: str) -> bool:
        """Follow one watch request to its end, keeping `resource_version` up to date.

        True when the watch was worth its request: it delivered something, or the
        server kept it open until its timeout.
        """
        started = asyncio.get_running_loop().time()
        timeout_seconds = round(jittered(self.watch_timeout, 1.0))
        delivered = False
        try:
            async for event in self.kube.watch(
                self.path,
                resource_version=resource_version,
                timeout_seconds=timeout_seconds,
                read_timeout=READ_TIMEOUT_SECONDS,
                query=self.query,
            ):
                self.resource_version = self._deliver(event, self.resource_version or "")
                if not delivered:  # a watch that delivers is healthy, however it ends
                    self.backoff.reset()
                delivered = True
        except KubeError as error:
            if error.gone:
                raise _ExpiredError from error
            raise
        return delivered or asyncio.get_running_loop().time() - started >= 1.0

    def _deliver(self, event: JsonObject, last_version: str) -> str:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _ExpiredError
            raise KubeError(int(obj.get("code") or 500), str(obj.get("reason")), str(obj))
        new_version = resource_version(obj) or last_version
        if kind == "BOOKMARK":
            return new_version
        key = object_key(obj)
        if kind == "DELETED":
            self.known.pop(*key)
            relevant = self.sink.remove(obj)
        else:
            self.known.put(*key, True)
            relevant = self.sink.upsert(slim(obj))
        if relevant:
            self.on_change()
        return new_version
