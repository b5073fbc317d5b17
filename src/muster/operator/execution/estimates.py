"""Start-time estimates for `status.estimatedStartTime` and `status.estimate`, on a budget.

A forecast runs the engine forward in time, many cycles, so it never runs in the
operator's process: at a moment between two events the state is forked into a child
process that runs the forecast and sends back the estimates (`forecast_process`), so
the scheduling loop's cycles are not slowed by it. A forecast is stopped after
`--estimate-budget` seconds of its own CPU time, and one runs only when the book says
it is due: the cluster or the queue changed since the last one, and not more often
than every `--estimate-interval` seconds. Between forecasts the START column is
refreshed from the last one as time passes (`EstimateBook` says when).

This is the one writer of the estimate fields, and it writes nothing else: each write
is the status as stored with those fields replaced, at the version it was read, so a
decision written meanwhile wins (409) and the estimate waits for the next round.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from muster.api.keys import GroupKey, resource_version
from muster.client.object_references import reference
from muster.operator.config import OperatorConfig
from muster.operator.execution.events import NORMAL, EventRecorder
from muster.operator.execution.forecast_process import Request, forecast_elsewhere
from muster.operator.execution.writer import StatusWriter
from muster.operator.intake.cache import LiveCache
from muster.scheduler import EngineConfig, EstimateBook, Update, group_records, with_estimate
from muster.scheduler.decisions import NOTHING_CARRIED, Carried

logger = logging.getLogger(__name__)


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
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cache = cache
        self.writer = writer
        self.events = events
        self.config = config
        self.engine_config = engine_config
        self.clock = clock
        self.book = EstimateBook()
        self.cycled = asyncio.Event()
        self.carried = NOTHING_CARRIED
        self.forecasts = 0

    def cycle_ended(self, carried: Carried) -> None:
        """The loop finished a cycle (which handed on `carried`): the cluster or the
        queue may have changed."""
        self.carried = carried
        self.cycled.set()

    async def run(self) -> None:
        """A round after each cycle, and when a throttled forecast falls due."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.cycled.wait(), timeout=self.config.estimate_interval)
            self.cycled.clear()
            try:
                await self.round(self.clock())
            except Exception:
                logger.exception("start-time estimates failed; retrying after the next cycle")

    async def round(self, now: float) -> None:
        """A forecast when the book says one is due, then the writes it asks for (as of
        the end of the forecast, which took its time)."""
        state = self.cache.state
        if self.book.forecast_due(state, now=now, interval=self.config.estimate_interval):
            request = Request(
                now=now,
                config=self.engine_config,
                horizon=self.config.estimate_horizon,
                budget=self.config.estimate_budget,
                carried=self.carried,
            )
            told = await forecast_elsewhere(state, request)
            self.forecasts += 1
            self.book.take(told.forecast, told.words)
        for key, update in self.book.updates(self.clock()).items():
            await self._write(key, update)

    async def _write(self, key: GroupKey, update: Update) -> None:
        record = group_records(self.cache.state).get(key)
        if record is None or record.admitted:
            return  # admitted since the forecast (or gone): the estimate is over
        pod_group = self.cache.pod_groups.get(key)
        if pod_group is None:
            return
        desired = with_estimate(pod_group.get("status") or {}, update.fields)
        written = await self.writer.write(key, desired, version=resource_version(pod_group))
        if written and update.moved is not None:
            await self.events.record(reference(pod_group), NORMAL, "EstimateMoved", update.moved)
