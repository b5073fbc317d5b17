"""Who gets an answer from the dashboard's pages: aiohttp middlewares over every route.

`reviewed` for the page the operator serves: a request is answered only when the API
server accepts its bearer token and lets its user `get` PodGroups in every namespace
(`access`, `reviewer`); otherwise 401 or 403 with one line that says why, and nothing
of the board. `addressed` for `muster dashboard`: only requests whose Host header is
the dashboard's own address (`hosts`), 403 otherwise. Both guard the static files
too, so that no route answers unguarded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from aiohttp import hdrs, web
from aiohttp.typedefs import Handler, Middleware

from muster.client.kube import KubeError
from muster.operator.dashboard.access import UNAUTHENTICATED
from muster.operator.dashboard.hosts import allowed_host
from muster.operator.dashboard.pages import HEADERS
from muster.operator.dashboard.reviewer import Reviewer

logger = logging.getLogger(__name__)

CHALLENGE = 'Bearer realm="muster-dashboard"'
RETRY_SECONDS = 5


def reviewed(reviewer: Reviewer) -> Middleware:
    """Answer only requests whose bearer token the API server grants the board."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            verdict = await reviewer.verdict(request.headers.get(hdrs.AUTHORIZATION))
        except KubeError as error:
            logger.warning("the dashboard could not have a request's token reviewed: %s", error)
            return _refused(
                503,
                "the API server could not review this request's token; try again",
                {"Retry-After": str(RETRY_SECONDS)},
            )
        if verdict.allowed:
            return await handler(request)
        logger.debug("dashboard request refused (%d): %s", verdict.status, verdict.reason)
        challenge = {"WWW-Authenticate": CHALLENGE} if verdict.status == UNAUTHENTICATED else {}
        return _refused(verdict.status, verdict.reason, challenge)

    return guard


def addressed(address: str, extra: Iterable[str] = ()) -> Middleware:
    """Answer only requests addressed to the dashboard's own address (or to `extra`)."""
    names = tuple(extra)

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get(hdrs.HOST)
        if allowed_host(host, address, names):
            return await handler(request)
        return _refused(
            403,
            f"muster dashboard answers only to its own address ({address}), not to the "
            f"host {host!r}: a page of another site may have been pointed at it (DNS "
            "rebinding). To reach it by that name, start it with --allowed-host NAME.",
        )

    return guard


def _refused(status: int, reason: str, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        text=f"{reason}\n",
        content_type="text/plain",
        headers={**HEADERS, **(headers or {})},
    )
