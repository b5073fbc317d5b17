"""Dashboard benchmark: the page at the engine benchmark's size.

Run with `.venv/bin/python -m bench.dashboard`. It builds the state of
`bench/engine/run.py` (5,000 nodes, 50,000 bound pods in 2,000 running gangs and plain
pods) with its 1,000 waiting gangs, and measures, on the server:

- `board`: what the dashboard's child process does after a change (`feed.board_in_child`:
  the capacity per domain, the running gangs, and the engine's forecast on the
  operator's default budget), and the board's trip back (pickled, as the pipe sends it);
- `first_render`: the overview rendered from a board by a fresh template environment
  (the templates compiled on the way), pictures drawn, as the child renders the
  first board;
- `update`: the live part (`/board`) rendered again from a new board, as the child
  renders each board after a change, templates warm; median of several;
- the first page and a poll after a change through aiohttp over loopback, a real HTTP
  client: what a request costs the server, which sends the pages rendered once per
  board.

The page waits for no forecast and renders nothing per request: the board and its
pages are made in a child process beside the page, and every request is sent the
last ones. Writes `bench/results/dashboard.json`.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from bench.engine.cluster import NOW, PENDING_GANGS, apply, base_state, pending_gangs
from bench.engine.run import machine
from muster.operator.config import OperatorConfig, engine_config
from muster.operator.dashboard.board import Board
from muster.operator.dashboard.feed import Feed, board_in_child
from muster.operator.dashboard.pages import build_app
from muster.operator.dashboard.rendering import board_values, shown, templates
from muster.operator.execution.forecast_process import Request
from muster.operator.intake.cache import LiveCache
from muster.scheduler import ClusterState

RESULTS = Path(__file__).resolve().parents[1] / "results" / "dashboard.json"
REPEATS = 7
GOALS_MS = {"first_render": 1000.0, "update": 200.0}


def state_with_queue() -> ClusterState:
    state, _ = base_state()
    for gang in pending_gangs(PENDING_GANGS):
        apply(state, gang)
    return state


def timed_board(state: ClusterState) -> tuple[Board, dict[str, Any]]:
    """The child's work, here in-process (on a copy: it forecasts on the state it gets)."""
    config = OperatorConfig()
    request = Request(NOW, engine_config(config), config.estimate_horizon, config.estimate_budget)
    copy = state.copy()
    started = time.perf_counter()
    board = board_in_child(copy, request)
    made = time.perf_counter() - started
    started = time.perf_counter()
    sent = pickle.dumps(board)
    pickle.loads(sent)
    trip = time.perf_counter() - started
    return board, {
        "board_ms": round(made * 1e3, 1),
        "forecast_budget_cpu_s": config.estimate_budget,
        "forecast_complete": board.complete,
        "board_bytes": len(sent),
        "board_trip_ms": round(trip * 1e3, 1),
        "waiting_rows": len(board.waiting),
        "running_rows": len(board.running),
        "domains": len(board.domains),
        "timeline_bars": len(board.timeline),
    }


def first_render(board: Board) -> tuple[float, int]:
    started = time.perf_counter()
    page = templates().get_template("overview.html").render(**board_values(board, 1))
    return time.perf_counter() - started, len(page)


def update(board: Board, repeats: int) -> list[float]:
    environment = templates()
    environment.get_template("board.html").render(**board_values(board, 1))  # warm
    samples = []
    for version in range(2, repeats + 2):
        started = time.perf_counter()
        environment.get_template("board.html").render(**board_values(board, version))
        samples.append(time.perf_counter() - started)
    return samples


class _Still(Feed):
    """A feed holding one board, as a served page sees it between two changes."""

    def __init__(self, board: Board, state: ClusterState) -> None:
        self.config = OperatorConfig()
        self.cache = LiveCache()
        self.cache.state = state
        self.environment = templates()
        self.shown = shown(board, 1, self.environment)


async def over_http(board: Board, state: ClusterState, repeats: int) -> dict[str, Any]:
    feed = _Still(board, state)
    async with TestClient(TestServer(build_app(feed))) as client:
        started = time.perf_counter()
        first = await client.get("/")
        await first.read()
        first_s = time.perf_counter() - started
        samples = []
        for _ in range(repeats):
            feed.shown = shown(board, feed.shown.version + 1, feed.environment)
            started = time.perf_counter()
            fresh = await client.get(f"/board?version={feed.shown.version - 1}")
            await fresh.read()
            samples.append(time.perf_counter() - started)
    return {
        "first_page_ms": round(first_s * 1e3, 1),
        "update_ms_median": round(statistics.median(samples) * 1e3, 1),
    }


def main() -> int:
    load = os.getloadavg()
    started = time.perf_counter()
    state = state_with_queue()
    build = time.perf_counter() - started
    board, made = timed_board(state)
    first_s, size = first_render(board)
    samples = update(board, REPEATS)
    figures: dict[str, Any] = {
        "state": {
            "nodes": board.nodes,
            "pods": board.pods,
            "waiting_gangs": len(board.waiting),
            "build_s": round(build, 2),
        },
        "board": made,
        "first_render": {
            "ms": round(first_s * 1e3, 1),
            "page_bytes": size,
            "goal_ms": GOALS_MS["first_render"],
            "goal_met": first_s * 1e3 <= GOALS_MS["first_render"],
        },
        "update": {
            "ms_median": round(statistics.median(samples) * 1e3, 1),
            "ms_max": round(max(samples) * 1e3, 1),
            "repeats": REPEATS,
            "goal_ms": GOALS_MS["update"],
            "goal_met": statistics.median(samples) * 1e3 <= GOALS_MS["update"],
        },
        "over_http": asyncio.run(over_http(board, state, REPEATS)),
        "load_average_at_start": [round(x, 2) for x in load],
        "machine": machine(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
