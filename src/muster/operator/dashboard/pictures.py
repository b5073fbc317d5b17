"""The board's pictures as SVG, drawn here: no script, no library, nothing fetched.

Each picture is readable without colour: occupied capacity is solid, reserved hatched,
free left empty, and every bar carries its amounts in words (a `<title>` for the
pointer, the same words in the text beside it for everyone else); each `<svg>` has a
role and a label, so a screen reader announces it as one image with its summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

from muster.operator.dashboard.board import Bar
from muster.operator.dashboard.domains import Domain, Fill
from muster.scheduler import clock_time

ROW = 22
BAR_WIDTH = 360
LABEL_WIDTH = 220
TEXT_WIDTH = 380
SHOWN_BARS = 60
# What fits in LABEL_WIDTH; a longer name loses its beginning (names sharing a
# namespace differ at the end), and is whole in its title.
LABEL_CHARACTERS = 34
PATTERNS = (
    '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" class="reserved-bg"/>'
    '<line x1="0" y1="0" x2="0" y2="6" class="reserved-line"/></pattern></defs>'
)


def domain_bars(domains: Sequence[Domain], resource: str, level: str) -> str:
    """One bar per domain of `level`: `resource` occupied, reserved and free."""
    rows = [
        (d, fill)
        for d in domains
        if d.level == level
        for fill in d.fills
        if fill.resource == resource
    ]
    if not rows:
        return ""
    height = ROW * len(rows) + 4
    width = LABEL_WIDTH + BAR_WIDTH + TEXT_WIDTH
    summary = f"{resource} per {level}: " + "; ".join(f"{d.value}: {f.words()}" for d, f in rows)
    parts = [
        f'<svg class="domains" role="img" aria-label="{escape(summary)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        PATTERNS,
    ]
    for index, (domain, fill) in enumerate(rows):
        parts.append(_domain_row(domain, fill, index * ROW + 2))
    parts.append("</svg>")
    return "".join(parts)


def _domain_row(domain: Domain, fill: Fill, y: int) -> str:
    total = max(fill.allocatable, 1)
    occupied = BAR_WIDTH * min(fill.occupied, total) / total
    reserved = BAR_WIDTH * min(fill.reserved, total - min(fill.occupied, total)) / total
    words = escape(fill.words())
    label = escape(_fitted(f"{domain.value} ({domain.nodes} nodes)"))
    x = LABEL_WIDTH
    return (
        f"<g><title>{label}: {words}</title>"
        f'<text x="0" y="{y + 15}" class="label">{label}</text>'
        f'<rect x="{x}" y="{y}" width="{BAR_WIDTH}" height="{ROW - 6}" class="free"/>'
        f'<rect x="{x}" y="{y}" width="{occupied:.1f}" height="{ROW - 6}" class="occupied"/>'
        f'<rect x="{x + occupied:.1f}" y="{y}" width="{reserved:.1f}" height="{ROW - 6}" '
        f'fill="url(#hatch)" class="reserved"/>'
        f'<text x="{x + BAR_WIDTH + 8}" y="{y + 15}" class="words">{words}</text></g>'
    )


def timeline(bars: Sequence[Bar], now: float, horizon: float) -> str:
    """Running gangs until they end, waiting ones from their forecast start; the axis
    from now to the last end shown (at most the horizon). The first `SHOWN_BARS`."""
    shown = list(bars[:SHOWN_BARS])
    if not shown:
        return ""
    limit = now + horizon
    last = max(min(bar.end or limit, limit) for bar in shown)
    span = max(last - now, 60.0)
    height = ROW * (len(shown) + 1) + 4
    width = LABEL_WIDTH + BAR_WIDTH + 120
    running = sum(bar.running for bar in shown)
    summary = (
        f"forecast from {clock_time(now)} to {clock_time(now + span)}: {running} running "
        f"gangs ending, {len(shown) - running} waiting gangs starting"
    )
    parts = [
        f'<svg class="timeline" role="img" aria-label="{escape(summary)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        PATTERNS,
        _axis(now, span),
    ]
    for index, bar in enumerate(shown, start=1):
        parts.append(_timeline_row(bar, now, span, limit, index * ROW + 2))
    parts.append("</svg>")
    return "".join(parts)


def _axis(now: float, span: float) -> str:
    ticks = []
    for step in range(5):
        moment = now + span * step / 4
        x = LABEL_WIDTH + BAR_WIDTH * step / 4
        when = clock_time(moment) if span >= 3600 else _seconds(moment)
        ticks.append(
            f'<line x1="{x:.1f}" y1="14" x2="{x:.1f}" y2="100%" class="tick"/>'
            f'<text x="{x:.1f}" y="12" class="axis">{when}</text>'
        )
    return "<g>" + "".join(ticks) + "</g>"


def _seconds(moment: float) -> str:
    """`10:42:05`: the axis of a forecast shorter than an hour."""
    return datetime.fromtimestamp(moment, UTC).strftime("%H:%M:%S")


def _fitted(label: str) -> str:
    if len(label) <= LABEL_CHARACTERS:
        return label
    return "…" + label[len(label) - LABEL_CHARACTERS + 1 :]


def _timeline_row(bar: Bar, now: float, span: float, limit: float, y: int) -> str:
    end = min(bar.end or limit, now + span)
    x0 = LABEL_WIDTH + BAR_WIDTH * (bar.start - now) / span
    x1 = LABEL_WIDTH + BAR_WIDTH * (end - now) / span
    state = "starts" if not bar.running else "running" if bar.end else "running, end unknown"
    until = "an unknown time" if bar.end is None else clock_time(bar.end)
    words = (
        f"{bar.group}: running until {until}"
        if bar.running
        else f"{bar.group}: starts {clock_time(bar.start)}, ends {until}"
    )
    fill = 'class="occupied"' if bar.running else 'fill="url(#hatch)" class="reserved"'
    mark = "▶ " if not bar.running else ""
    return (
        f"<g><title>{escape(words)}</title>"
        f'<text x="0" y="{y + 15}" class="label">{escape(mark + _fitted(str(bar.group)))}</text>'
        f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 2):.1f}" height="{ROW - 6}" {fill}/>'
        f'<text x="{LABEL_WIDTH + BAR_WIDTH + 8}" y="{y + 15}" class="words">{state}</text></g>'
    )
