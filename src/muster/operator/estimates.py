"""Start-time estimates for `status.estimatedStartTime` and `status.estimate`, on a budget.

A forecast runs the engine forward in time, many cycles, so it never runs on the
event loop: the loop hands it a copy of the state (`ClusterState.copy`, taken between
two events, so consistent) and it runs in a thread. It pauses whenever the scheduling
loop's own cycle decides, so decisions are not slowed by it; it is stopped after
`--estimate-budget` seconds of its own work; and it runs only when the cluster or the
queue changed since the last one (pods, held capacity, waiting gangs), never more
often than every `--estimate-interval` seconds. Between forecasts the START column is
refreshed from the last one as time passes (`EstimateBook` says when).

This is the one writer of the estimate fields, and it writes nothing else: each write
is the status as stored with those fields replaced, at the version it was read, so a
decision written meanwhile wins (409) and the estimate waits for the next round.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Iterator

from muster.api.constants import CONDITION_SCHEDULED
from muster.operator.cache import LiveCache
from muster.operator.config import OperatorConfig
from muster.operator.events import NORMAL, EventRecorder, reference
from muster.operator.writer import StatusWriter
from muster.scheduler import ClusterState, EngineConfig
from muster.scheduler.estimate_book import EstimateBook, Update
from muster.scheduler.forecast import forecast
from muster.scheduler.results import GroupKey
from muster.scheduler.status import condition, with_estimate

logger = logging.getLogger(__name__)


class Allowance:
    """A forecast's time budget, counting only the time it ran: asked before each of
    its cycles, it waits while the scheduling loop decides, then says whether time is
    left."""

    def __init__(self, seconds: float, idle: threading.Event) -> None:
        self.left = seconds
        self.idle = idle
        self.since = time.monotonic()

    def __call__(self) -> bool:
        self.left -= time.monotonic() - self.since
        self.idle.wait()
        self.since = time.monotonic()
        return self.left > 0


class EstimateWriter:
    """Runs forecasts beside the scheduling loop and writes what the book asks for."""

    def __init__(
        self,
        *,
        cache: LiveCache,
        writer: StatusWriter,
        events: EventRecorder,
        config: OperatorConfig,
        engine_config: EngineConfig,
    ) -> None:
        self.cache = cache
        self.writer = writer
        self.events = events
        self.config = config
        self.engine_config = engine_config
        self.book = EstimateBook()
        self.idle = threading.Event()
        self.idle.set()
        self.cycled = asyncio.Event()
        self.last_at = float("-inf")
        self.fingerprint: object = None
        self.forecasts = 0

    @contextlib.contextmanager
    def deciding(self) -> Iterator[None]:
        """Around the loop's engine call: a forecast in flight pauses meanwhile."""
        self.idle.clear()
        try:
            yield
        finally:
            self.idle.set()

    def cycle_ended(self) -> None:
        """The loop finished a cycle: the cluster or the queue may have changed."""
        self.cycled.set()

    async def run(self) -> None:
        """A round after each cycle, and when a throttled forecast falls due."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.cycled.wait(), timeout=self.config.estimate_interval)
            self.cycled.clear()
            try:
                await self.round(time.time())
            except Exception:
                logger.exception("start-time estimates failed; retrying after the next cycle")

    async def round(self, now: float) -> None:
        """A forecast when one is due, then the writes the book asks for."""
        state = self.cache.state
        fingerprint = _fingerprint(state)
        if fingerprint != self.fingerprint and now - self.last_at >= self.config.estimate_interval:
            self.last_at, self.fingerprint = now, fingerprint
            snapshot = state.copy()
            topology = {key: snapshot.groups[key].topology_key for key in snapshot.unadmitted_gangs}
            ahead = await asyncio.to_thread(
                forecast,
                snapshot,
                now=now,
                config=self.engine_config,
                horizon=self.config.estimate_horizon,
                keep_going=Allowance(self.config.estimate_budget, self.idle),
                owned=True,
            )
            self.forecasts += 1
            self.book.take(ahead, topology)
        for key, update in self.book.updates(time.time()).items():
            await self._write(key, update)

    async def _write(self, key: GroupKey, update: Update) -> None:
        pod_group = self.cache.pod_groups.get(key)
        if pod_group is None:
            return
        status = pod_group.get("status") or {}
        scheduled = condition(status, CONDITION_SCHEDULED) or {}
        if scheduled.get("status") == "True":
            return  # admitted since the forecast: the estimate is over
        version = str((pod_group.get("metadata") or {}).get("resourceVersion") or "")
        desired = with_estimate(status, update.fields)
        if await self.writer.write(key, desired, version=version) and update.moved is not None:
            await self.events.record(reference(pod_group), NORMAL, "EstimateMoved", update.moved)


def _fingerprint(state: ClusterState) -> object:
    """What a forecast depends on, cheaply: pods, capacity held, the waiting gangs."""
    return (len(state.pods), int(state.held.sum()), frozenset(state.unadmitted_gangs))
