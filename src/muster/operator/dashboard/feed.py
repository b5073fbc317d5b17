"""The cluster as the dashboard watches it, and the latest board of it.

The watches are those of the operator's snapshot (`scheduling_sources`: what
`muster explain` lists once), into a `LiveCache` of the dashboard's own, read-only,
on the dashboard's own client (in the operator, never the one its Lease is renewed
on). After a change the engine runs again, in a forked child process as the
operator's start-time estimates do (`forecast_process`: at scale a forecast is
seconds of CPU that would otherwise stall the pages), on the same budget; the child
renders the board's pages too (`rendering`) and sends back the board and its pages.
Boards are made one at a time, at most every `spacing` seconds, and at least every
`refresh` seconds, so that the words "~12m" follow the clock. Each board is handed the
last one's finished gangs (`Board.finished`, bounded), which it remembers on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from functools import partial

from jinja2 import Environment

from muster.api.constants import POD_GROUP_KIND
from muster.api.keys import GroupKey
from muster.api.wire import JsonObject
from muster.client import paths
from muster.client.kube import Kube
from muster.client.object_references import owner_references
from muster.operator.config import OperatorConfig, engine_config
from muster.operator.controller import informer_of, scheduling_sources
from muster.operator.dashboard.board import Board, Finished, board_of
from muster.operator.dashboard.rendering import Shown, shown, templates
from muster.operator.execution.forecast_process import Budget, Request, forecast_elsewhere
from muster.operator.intake.cache import LiveCache
from muster.operator.metrics import Metrics
from muster.scheduler import ClusterState

logger = logging.getLogger(__name__)

SPACING_SECONDS = 1.0
REFRESH_SECONDS = 15.0


class Feed:
    """Watches the cluster and keeps `shown` (the latest board, numbered, and its pages)
    up to date."""

    def __init__(
        self,
        kube: Kube,
        config: OperatorConfig,
        *,
        metrics: Metrics | None = None,
        spacing: float = SPACING_SECONDS,
        refresh: float = REFRESH_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.kube = kube
        self.config = config
        self.cache = LiveCache()
        self.spacing = spacing
        self.refresh = refresh
        self.clock = clock
        self.changed = asyncio.Event()
        self.informers = [
            informer_of(kube, source, config, metrics or Metrics(), on_change=self.changed.set)
            for source in scheduling_sources(self.cache)
        ]
        self.environment = templates()
        self.shown = shown(None, 0, self.environment)

    async def run(self) -> None:
        """Watch, and make boards, until cancelled."""
        async with asyncio.TaskGroup() as tasks:
            for informer in self.informers:
                tasks.create_task(informer.run(), name=f"dashboard informer {informer.path}")
            await asyncio.gather(*(informer.synced.wait() for informer in self.informers))
            tasks.create_task(self._boards(), name="dashboard boards")

    async def _boards(self) -> None:
        while True:
            self.changed.clear()
            try:
                self.shown = await self.make_board(self.shown.version + 1)
            except Exception:
                logger.exception("the dashboard's board failed; trying again after a change")
            await asyncio.sleep(self.spacing)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), timeout=self.refresh)

    async def make_board(self, version: int) -> Shown:
        """The board of the cluster as watched now, numbered `version`, and its pages,
        made in a child process."""
        request = Request(
            now=self.clock(),
            config=engine_config(self.config),
            horizon=self.config.estimate_horizon,
            budget=self.config.estimate_budget,
        )
        board = self.shown.board
        work = partial(
            shown_in_child,
            version=version,
            environment=self.environment,
            finished=() if board is None else board.finished,
        )
        return await forecast_elsewhere(self.cache.state, request, work)

    async def events(self, key: GroupKey) -> list[JsonObject]:
        """The gang's events, oldest first (read when its page is asked for): those of
        its PodGroup and of the Job that owns it, where the operator tells a Job's
        gang what happens to it."""
        pod_group = self.cache.pod_groups.get(key) or {}
        targets = [(POD_GROUP_KIND, key.name)]
        targets += [("Job", owner["name"]) for owner in owner_references(pod_group, "Job")]
        items: list[JsonObject] = []
        for kind, name in targets:
            selector = f"involvedObject.kind={kind},involvedObject.name={name}"
            found, _ = await self.kube.list_all(
                paths.namespaced(paths.EVENTS, key.namespace), query={"fieldSelector": selector}
            )
            items += found
        return sorted(items, key=_event_time)


def shown_in_child(
    state: ClusterState,
    request: Request,
    *,
    version: int,
    environment: Environment,
    finished: tuple[Finished, ...] = (),
) -> Shown:
    """The child's work: the board, and its pages rendered (off the parent's loop)."""
    return shown(board_in_child(state, request, finished), version, environment)


def board_in_child(
    state: ClusterState, request: Request, finished: tuple[Finished, ...] = ()
) -> Board:
    """The child's work: the board, the forecast on the child's own state; `finished`,
    the last board's finished gangs."""
    return board_of(
        state,
        now=request.now,
        config=request.config,
        horizon=request.horizon,
        keep_going=Budget(request.budget),
        owned=True,
        finished_before=finished,
    )


def _event_time(event: JsonObject) -> str:
    for field in ("lastTimestamp", "eventTime", "firstTimestamp"):
        value = event.get(field)
        if isinstance(value, str) and value:
            return value
    return str(event.get("metadata", {}).get("creationTimestamp", ""))
