"""The dashboard's pages: GET only, from the latest board.

`/` is the overview; `/board?version=N` its live part alone, or 204 while the board
is still number N (what the page's small script polls): both are sent as rendered
once per board (`rendering`), never rendered per request. `/gangs/NS/NAME` is one
gang: its pods and their nodes from the watched cluster, its conditions, its events
read when asked, and `explain`'s tables from the board's verdict. Every page sets a
Content-Security-Policy of its own origin: nothing is fetched from elsewhere, no
inline script runs. Who may ask is the caller's `guards` to say (`build_app`'s
middlewares): a bearer token reviewed by the API server in the operator, the Host
header for `muster dashboard`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from muster.api.keys import GroupKey
from muster.client.kube import KubeError
from muster.operator.dashboard.feed import Feed
from muster.scheduler import member_entries

STATIC = Path(__file__).parent / "static"
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'",
    "Cache-Control": "no-store",
}
FEED: web.AppKey[Feed] = web.AppKey("feed", Feed)


def build_app(feed: Feed, middlewares: Iterable[Middleware] = ()) -> web.Application:
    """The pages of `feed`'s boards; every request passes `middlewares` first."""
    app = web.Application(middlewares=middlewares)
    app[FEED] = feed
    app.router.add_get("/", overview)
    app.router.add_get("/board", live_board)
    app.router.add_get("/gangs/{namespace}/{name}", gang)
    app.router.add_static("/static", STATIC)
    return app


def render(request: web.Request, template: str, **values: Any) -> str:
    return request.app[FEED].environment.get_template(template).render(**values)


async def overview(request: web.Request) -> web.Response:
    return _html(request.app[FEED].shown.overview)


async def live_board(request: web.Request) -> web.Response:
    shown = request.app[FEED].shown
    if request.query.get("version") == str(shown.version):
        return web.Response(status=204, headers=HEADERS)
    return _html(shown.live)


def _html(page: bytes) -> web.Response:
    return web.Response(body=page, content_type="text/html", charset="utf-8", headers=HEADERS)


async def gang(request: web.Request) -> web.Response:
    feed = request.app[FEED]
    key = GroupKey(request.match_info["namespace"], request.match_info["name"])
    pod_group = feed.cache.pod_groups.get(key)
    if pod_group is None:
        text = render(request, "missing.html", key=key)
        return web.Response(status=404, text=text, content_type="text/html", headers=HEADERS)
    try:
        events, events_error = await feed.events(key), ""
    except KubeError as error:
        events, events_error = [], str(error)
    board = feed.shown.board
    rows = (
        (None, None, None)
        if board is None
        else tuple(
            next((row for row in rows if row.group == key), None)
            for rows in (board.waiting, board.running, board.finished)
        )
    )
    text = render(
        request,
        "gang.html",
        key=key,
        status=pod_group.get("status") or {},
        pods=pods_of(feed, key),
        events=events,
        events_error=events_error,
        explanation=None if board is None else board.explanation(key),
        waiting=rows[0],
        running=rows[1],
        finished=rows[2],
        now=time.time(),
    )
    return web.Response(text=text, content_type="text/html", headers=HEADERS)


def pods_of(feed: Feed, key: GroupKey) -> list[Mapping[str, str]]:
    """The gang's member pods: their node (bound, or planned and reserved), phase, gate."""
    state = feed.cache.state
    rows: list[Mapping[str, str]] = []
    for entry in member_entries(state, key):
        record = entry.record
        name = record.key.name
        node = record.node_name or (f"{entry.reserved_on} (reserved)" if entry.reserved_on else "")
        rows.append(
            {
                "name": name,
                "node": node or "none yet",
                "phase": record.phase,
                "gated": "yes" if record.gated else "no",
            }
        )
    return rows
