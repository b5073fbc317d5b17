"""List-then-watch of one resource, delivering every change to a sink, forever.

The classic informer protocol: list (paginated) to get a resourceVersion, watch from
it with bookmarks so the version stays fresh while nothing changes, resume the watch
from the last version seen when the server ends it, and relist only when the server
says the version is too old (410 Gone). After a relist, objects that vanished in
between are reported as deleted, so the sink never keeps a ghost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from muster.operator.kube import JsonObject, Kube, KubeError

logger = logging.getLogger(__name__)

WATCH_TIMEOUT_SECONDS = 300
RETRY_DELAY_SECONDS = 1.0


class Sink(Protocol):
    """Receives one resource's objects as they change; says whether scheduling cares."""

    def upsert(self, obj: JsonObject) -> bool: ...

    def remove(self, obj: JsonObject) -> bool: ...


def object_key(obj: JsonObject) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace", "")), str(metadata.get("name", ""))


def slim(obj: JsonObject) -> JsonObject:
    """Drop managedFields: the largest part of most objects, and nobody here reads it."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


class _ExpiredError(Exception):
    """The watch's resourceVersion is too old: only a relist can continue."""


class Informer:
    """Keeps a sink in step with one collection of the API server."""

    def __init__(
        self,
        kube: Kube,
        path: str,
        sink: Sink,
        *,
        on_change: Callable[[], None],
        label_selector: str | None = None,
    ) -> None:
        self.kube = kube
        self.path = path
        self.sink = sink
        self.query = {"labelSelector": label_selector} if label_selector else {}
        self.on_change = on_change
        self.synced = asyncio.Event()
        self.known: set[tuple[str, str]] = set()

    async def run(self) -> None:
        """List, then watch; relist on expiry; retry forever on errors (until cancelled)."""
        while True:
            try:
                resource_version = await self._relist()
                while True:
                    resource_version = await self._watch_once(resource_version)
            except _ExpiredError:
                logger.info("watch of %s expired; relisting", self.path)
            except (TimeoutError, KubeError, OSError, ValueError) as error:
                logger.warning("watch of %s failed (%s); relisting", self.path, error)
                await asyncio.sleep(RETRY_DELAY_SECONDS)

    async def _relist(self) -> str:
        listed: set[tuple[str, str]] = set()
        resource_version = ""
        async for items, version in self.kube.list_pages(self.path, query=self.query):
            resource_version = version
            for item in items:
                listed.add(object_key(item))
                self.sink.upsert(slim(item))
        for namespace, name in self.known - listed:
            self.sink.remove({"metadata": {"namespace": namespace, "name": name}})
        self.known = listed
        self.synced.set()
        self.on_change()
        return resource_version

    async def _watch_once(self, resource_version: str) -> str:
        """Follow one watch request to its end; return the last resourceVersion seen."""
        try:
            async for event in self.kube.watch(
                self.path,
                resource_version=resource_version,
                timeout_seconds=WATCH_TIMEOUT_SECONDS,
                query=self.query,
            ):
                resource_version = self._deliver(event, resource_version)
        except KubeError as error:
            if error.gone:
                raise _ExpiredError from error
            raise
        return resource_version

    def _deliver(self, event: JsonObject, resource_version: str) -> str:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _ExpiredError
            raise KubeError(int(obj.get("code") or 500), str(obj.get("reason")), str(obj))
        new_version = str((obj.get("metadata") or {}).get("resourceVersion") or resource_version)
        if kind == "BOOKMARK":
            return new_version
        key = object_key(obj)
        if kind == "DELETED":
            self.known.discard(key)
            relevant = self.sink.remove(obj)
        else:
            self.known.add(key)
            relevant = self.sink.upsert(slim(obj))
        if relevant:
            self.on_change()
        return new_version
