"""Keys of objects to work on, as client-go's workqueue holds them.

A key waits at most once, however often its object changes before a worker takes it,
and no two workers hold the same key: one added while it is being worked on waits
until that work is done, and is then queued again. Workers look the object up when
the key's turn comes, so they always work on its latest version.

Holding each key once is what lets a standby watch from its start: its workers do
not run until it leads, and its queue holds each changed object once, not once for
every update it has seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    """Keys waiting (each once) and keys being worked on (each by one worker)."""

    def __init__(self) -> None:
        self._order: asyncio.Queue[K] = asyncio.Queue()
        self._waiting: set[K] = set()
        self._working: set[K] = set()

    def add(self, key: K) -> None:
        """Work on `key` (again): queued unless it waits already, or once its current
        work is done."""
        if key in self._waiting:
            return
        self._waiting.add(key)
        if key not in self._working:
            self._order.put_nowait(key)

    async def take(self) -> K:
        """The next waiting key, now being worked on until `done`."""
        key = await self._order.get()
        self._waiting.discard(key)
        self._working.add(key)
        return key

    def done(self, key: K) -> None:
        """The work on `key` ended; queued again if it was added meanwhile."""
        self._working.discard(key)
        if key in self._waiting:
            self._order.put_nowait(key)

    def __len__(self) -> int:
        """Keys waiting."""
        return len(self._waiting)
