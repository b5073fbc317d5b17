"""/healthz while the loop runs, /readyz as the replica says, /metrics from its own
registry."""

from __future__ import annotations

import aiohttp
from aiohttp.test_utils import TestClient, TestServer
from devtools.ports import free_port

from muster.operator.health import build_app, serve
from muster.operator.metrics import Metrics


async def test_the_probes_and_the_metrics_answer() -> None:
    metrics = Metrics()
    metrics.admissions.inc(3)
    ready = False
    app = build_app(metrics.registry, lambda: ready)
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/healthz")).status == 200
        not_yet = await client.get("/readyz")
        assert (not_yet.status, await not_yet.text()) == (503, "not ready")
        ready = True
        assert (await client.get("/readyz")).status == 200
        scraped = await client.get("/metrics")
        assert scraped.content_type == "text/plain"
        assert "muster_gangs_admitted_total 3.0" in await scraped.text()


async def test_serve_listens_on_the_given_address() -> None:
    port = free_port()
    runner = await serve(build_app(Metrics().registry, lambda: True), "127.0.0.1", port)
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/healthz") as answer,
        ):
            assert (answer.status, await answer.text()) == (200, "ok")
    finally:
        await runner.cleanup()
