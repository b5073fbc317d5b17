"""The operator's page asks the API server on a client of its own, and guards its
routes."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import aiohttp
from devtools.ports import free_port

from muster.client.connection import connect
from muster.operator.config import OperatorConfig
from muster.operator.dashboard.serving import serve_dashboard
from muster.operator.metrics import Metrics
from tests.unit.client.kubeconfig import token_kubeconfig


async def test_the_page_has_a_connection_pool_of_its_own_and_no_unguarded_route(
    tmp_path: Path,
) -> None:
    credentials = str(token_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:9"))
    operator = await connect(credentials)  # as the operator connects, for its Lease too
    port = free_port()
    config = OperatorConfig(kubeconfig=credentials, dashboard_port=port, identity="r-1")
    served = await serve_dashboard(config, Metrics())
    try:
        own = served.kube.api_client.rest_client.pool_manager
        assert own is not operator.api_client.rest_client.pool_manager
        assert served.feed.kube is served.kube
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/") as response,
        ):
            assert response.status == 401
    finally:
        served.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await served.task
        await served.close()
        await operator.close()
