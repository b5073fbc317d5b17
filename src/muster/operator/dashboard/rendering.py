"""The overview and its live part, rendered once per board.

A board changes at most once a second, and every open page asks for the live part
every two seconds: rendering per request would render the same board again and
again, on the event loop that serves the operator (at 5,000 nodes the overview is
1.1 MB of HTML, tens of milliseconds of CPU). So both are rendered once, in the child
process that made the board (`feed`), and every request is sent the same text. A
gang's page is rendered per request: it shows the events read for it then. For the
same reason the namespace filter is the page's: the board carries a link per
namespace and each row its namespace, and the page's script shows the rows of the
namespace its address names (`?namespace=NS`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from muster.api.times import rfc3339
from muster.operator.dashboard.board import Board
from muster.operator.dashboard.pictures import SHOWN_BARS, domain_bars, timeline
from muster.scheduler import clock_time, format_duration, nodes_line


@dataclass(frozen=True, slots=True)
class Shown:
    """A board (None before the first), its number, and its two pages as sent (UTF-8)."""

    board: Board | None
    version: int
    overview: bytes
    live: bytes


def templates() -> Environment:
    environment = Environment(
        loader=PackageLoader("muster.operator.dashboard", "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["clock"] = lambda moment: "" if moment is None else clock_time(moment)
    environment.filters["rfc3339"] = lambda moment: "" if moment is None else rfc3339(moment)
    environment.filters["duration"] = lambda took: (
        "unknown" if took is None else format_duration(took)
    )
    environment.globals["nodes_line"] = nodes_line
    return environment


def shown(board: Board | None, version: int, environment: Environment) -> Shown:
    """The board with its overview and live part rendered."""
    values = board_values(board, version)
    return Shown(
        board,
        version,
        overview=environment.get_template("overview.html").render(**values).encode(),
        live=environment.get_template("board.html").render(**values).encode(),
    )


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
        "namespaces": namespaces(board),
        "pictures": [(level, resource, svg) for level, resource, svg in pictures if svg],
        "timeline": timeline(board.timeline, board.now, board.horizon),
        "shown_bars": min(SHOWN_BARS, len(board.timeline)),
    }


def namespaces(board: Board) -> list[tuple[str, int]]:
    """Each namespace (a team's) with gangs on the board, and how many: the filter's
    links."""
    groups = [row.group for rows in (board.waiting, board.running, board.finished) for row in rows]
    counted = Counter(group.namespace for group in groups)
    return sorted(counted.items())


def _ordered(resources: set[str]) -> list[str]:
    return sorted(resources, key=lambda r: (r == "cpu", r))
