"""/metrics, /healthz and /readyz over plain HTTP, on every replica.

`/healthz` answers as long as the event loop runs (a wedged process fails it and gets
restarted). `/readyz` is true once the webhooks serve, with every resource their
handlers need discovered (:mod:`muster.webhooks.served_resources`), and, on the
leader, once every informer has listed: a replica that is not ready yet would
otherwise reject pods at admission or schedule on an empty snapshot.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


def build_app(registry: CollectorRegistry, ready: Callable[[], bool]) -> web.Application:
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="not ready")

    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app


async def serve(app: web.Application, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
