"""The dashboard's pages: GET only, rendered on the server from the latest board.

`/` is the overview; `/board?version=N` its live part alone, or 204 while the board
is still number N (what the page's small script polls); `/gangs/NS/NAME` one gang:
its pods and their nodes from the watched cluster, its conditions, its events read
when asked, and `explain`'s tables from the board's verdict. Every page sets a
Content-Security-Policy of its own origin: nothing is fetched from elsewhere, no
inline script runs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web
from jinja2 import Environment, PackageLoader, select_autoescape

from muster.api.times import rfc3339
from muster.client.kube import KubeError
from muster.operator.dashboard.board import Board
from muster.operator.dashboard.feed import Feed
from muster.operator.dashboard.pictures import SHOWN_BARS, domain_bars, timeline
from muster.scheduler.decisions.results import GroupKey, PodKey
from muster.scheduler.forecast.estimate_words import clock_time
from muster.scheduler.placement.explain import nodes_line

STATIC = Path(__file__).parent / "static"
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'",
    "Cache-Control": "no-store",
}
FEED: web.AppKey[Feed] = web.AppKey("feed", Feed)
TEMPLATES: web.AppKey[Environment] = web.AppKey("templates", Environment)


def templates() -> Environment:
    environment = Environment(
        loader=PackageLoader("muster.operator.dashboard", "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["clock"] = lambda moment: "" if moment is None else clock_time(moment)
    environment.filters["rfc3339"] = lambda moment: "" if moment is None else rfc3339(moment)
    environment.globals["nodes_line"] = nodes_line
    return environment


def build_app(feed: Feed) -> web.Application:
    app = web.Application()
    app[FEED] = feed
    app[TEMPLATES] = templates()
    app.router.add_get("/", overview)
    app.router.add_get("/board", live_board)
    app.router.add_get("/gangs/{namespace}/{name}", gang)
    app.router.add_static("/static", STATIC)
    return app


def render(request: web.Request, template: str, **values: Any) -> str:
    return request.app[TEMPLATES].get_template(template).render(**values)


def board_values(board: Board | None, version: int) -> dict[str, Any]:
    """What the board's template reads: the board, and its pictures drawn."""
    if board is None:
        return {"board": None, "version": version}
    resources = {fill.resource for domain in board.domains for fill in domain.fills}
    pictures = [
        (level, resource, domain_bars(board.domains, resource, level))
        for level in board.levels
        for resource in (r for r in _ordered(resources) if r in resources)
    ]
    return {
        "board": board,
        "version": version,
        "pictures": [(level, resource, svg) for level, resource, svg in pictures if svg],
        "timeline": timeline(board.timeline, board.now, board.horizon),
        "shown_bars": min(SHOWN_BARS, len(board.timeline)),
    }


def _ordered(resources: set[str]) -> list[str]:
    return sorted(resources, key=lambda r: (r == "cpu", r))


async def overview(request: web.Request) -> web.Response:
    feed = request.app[FEED]
    text = render(request, "overview.html", **board_values(feed.board, feed.version))
    return web.Response(text=text, content_type="text/html", headers=HEADERS)


async def live_board(request: web.Request) -> web.Response:
    feed = request.app[FEED]
    if request.query.get("version") == str(feed.version):
        return web.Response(status=204, headers=HEADERS)
    text = render(request, "board.html", **board_values(feed.board, feed.version))
    return web.Response(text=text, content_type="text/html", headers=HEADERS)


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
    board = feed.board
    text = render(
        request,
        "gang.html",
        key=key,
        status=pod_group.get("status") or {},
        pods=pods_of(feed, key),
        events=events,
        events_error=events_error,
        explanation=None if board is None else board.explanation(key),
        waiting=None if board is None else next((w for w in board.waiting if w.group == key), None),
        running=None if board is None else next((r for r in board.running if r.group == key), None),
        now=time.time(),
    )
    return web.Response(text=text, content_type="text/html", headers=HEADERS)


def pods_of(feed: Feed, key: GroupKey) -> list[Mapping[str, str]]:
    """The gang's member pods: their node (bound, or planned and reserved), phase, gate."""
    state = feed.cache.state
    rows: list[Mapping[str, str]] = []
    for name in sorted(state.members.get(key, {})):
        entry = state.pods.get(PodKey(key.namespace, name))
        if entry is None:
            continue
        record = entry.record
        node = record.node_name or (f"{entry.taken_on} (reserved)" if entry.taken_on else "")
        rows.append(
            {
                "name": name,
                "node": node or "none yet",
                "phase": record.phase,
                "gated": "yes" if record.gated else "no",
            }
        )
    return rows
