"""The page as the operator serves it (`--dashboard-port`): guarded, on a client of its own.

Everything the page asks of the API server (its watches, a gang's events, the
reviews of each request's token) goes through a client connected for it alone: its
own connection pool and session. The operator renews its Lease on its own client;
a page opened by many, or a flood of requests with made-up tokens, then waits for
the dashboard's connections, never for the ones a renewal needs. Every request is
reviewed (`guards.reviewed`): the board is shown only to a user the API server lets
`get` PodGroups in every namespace.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiohttp import web

from muster.client.connection import connect
from muster.client.kube import Kube
from muster.operator.config import OperatorConfig
from muster.operator.dashboard.feed import Feed
from muster.operator.dashboard.guards import reviewed
from muster.operator.dashboard.pages import build_app
from muster.operator.dashboard.reviewer import Reviewer
from muster.operator.health import serve
from muster.operator.metrics import Metrics


@dataclass
class ServedDashboard:
    """The page being served: its client, its feed's task and its HTTP server."""

    kube: Kube
    feed: Feed
    task: asyncio.Task[None]
    runner: web.AppRunner

    async def close(self) -> None:
        """Stop serving and close the client (the feed's task is the caller's to end)."""
        await self.runner.cleanup()
        await self.kube.close()


async def serve_dashboard(config: OperatorConfig, metrics: Metrics) -> ServedDashboard:
    """Connect the dashboard's own client, serve the guarded page on
    `config.dashboard_host:dashboard_port`, and start watching."""
    kube = await connect(config.kubeconfig, user_agent=f"muster-dashboard/{config.identity}")
    try:
        feed = Feed(kube, config, metrics=metrics)
        app = build_app(feed, [reviewed(Reviewer(kube))])
        runner = await serve(app, config.dashboard_host, config.dashboard_port)
    except BaseException:
        await kube.close()
        raise
    return ServedDashboard(kube, feed, asyncio.create_task(feed.run(), name="dashboard"), runner)
