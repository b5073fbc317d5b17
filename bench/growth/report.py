"""bench/results/growth.json as tables and a plot in docs/performance.md.

The tables go between the markers of growth.json (as bench/e2e/report.py does for the
end-to-end results), one per series with the fitted growth exponent of each measure
under it, and the plot, one row of panels per series, to docs/images/cost-growth.png.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: the plot only goes to a file

import matplotlib.pyplot as plt
from matplotlib.ticker import NullLocator

from bench.common.sections import DOCS, ROOT, begin_marker, end_marker, replace_section

NAME = "growth.json"
RESULTS = ROOT / "bench" / "results" / NAME
PLOT = DOCS.parent / "images" / "cost-growth.png"

# Each series: what varies (the key in its rows) and how it is told.
SERIES: dict[str, tuple[str, str]] = {
    "nodes": ("nodes", "nodes"),
    "waiting": ("waiting", "waiting gangs"),
}
# (key in a row, what it is, its unit) for each measure whose growth is fitted.
MEASURES = (
    ("operator_cpu_s_per_1000_pods", "operator CPU per 1,000 pods", "s"),
    ("api_requests_per_pod", "operator API requests per pod", "requests"),
    ("engine_ms_per_cycle", "engine time per cycle (mean)", "ms"),
    ("engine_p99_ms_per_cycle", "engine time per cycle (p99 at most)", "ms"),
    ("peak_rss_mib", "operator peak RSS", "MiB"),
)
# The plot's panels: the two engine times share one, on a log scale (they are an order
# of magnitude apart); the others start at zero, so that noise does not look like growth.
PANELS = (
    ("operator CPU per 1,000 pods", "s", ("operator_cpu_s_per_1000_pods",)),
    ("operator API requests per pod", "requests", ("api_requests_per_pod",)),
    ("engine time per cycle (log)", "ms", ("engine_ms_per_cycle", "engine_p99_ms_per_cycle")),
    ("operator peak RSS", "MiB", ("peak_rss_mib",)),
)


def cost(nodes: int, jobs: int, pods: int, figures: Mapping[str, Any]) -> dict[str, Any]:
    """One point's row, from the figures bench/e2e/run.py measured for it."""
    row: dict[str, Any] = {"nodes": nodes, "jobs": jobs, "pods": pods}
    if "not_measured" in figures:
        return {**row, "not_measured": figures["not_measured"]}
    operator = figures["operator"]
    cycles = operator.get("scheduling_cycles") or {}
    extra = {
        key: figures[key] for key in ("waiting_pods_bound", "waiting_set_up_in_s") if key in figures
    }
    return {
        **row,
        "pods_bound": figures["pods_bound"],
        "throughput_pods_bound_per_s": figures["throughput_pods_bound_per_s"],
        "p99_time_to_all_bound_s": figures["time_to_all_bound_s"]["p99"],
        "partially_started_jobs_max": figures["partially_started_jobs"]["max_at_once"],
        "operator_cpu_s_per_1000_pods": round(operator["cpu_seconds"] / pods * 1000, 2),
        "api_requests_per_pod": round(operator["api_requests"] / pods, 2),
        "engine_cycles": cycles.get("cycles"),
        "engine_ms_per_cycle": _ms(cycles.get("mean_s")),
        "engine_p99_ms_per_cycle": _ms(cycles.get("p99_at_most_s")),
        "peak_rss_mib": operator["peak_rss_mib"],
        "rollbacks": operator.get("rollbacks"),
        "api_requests_by_call": operator.get("api_requests_by_call"),
        "load_average_1m_at_start": figures.get("load_average_1m_at_start"),
        "ended_because": figures["ended_because"],
        **extra,
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def exponent(points: Sequence[tuple[float, float]]) -> float | None:
    """The slope of the least-squares line of log(y) on log(x): y grows as x to this
    power. None with fewer than two distinct positive points."""
    logs = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len({x for x, _ in logs}) < 2:
        return None
    mean_x = sum(x for x, _ in logs) / len(logs)
    mean_y = sum(y for _, y in logs) / len(logs)
    spread = sum((x - mean_x) ** 2 for x, _ in logs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in logs) / spread
    return round(slope, 2) + 0.0  # + 0.0: never -0


def exponents(results: Mapping[str, Any]) -> dict[str, dict[str, float | None]]:
    """Each series' growth exponent of each measure."""
    return {
        series: {key: exponent(_points(results[series], axis, key)) for key, _, _ in MEASURES}
        for series, (axis, _) in SERIES.items()
        if series in results
    }


def _points(rows: Sequence[Mapping[str, Any]], axis: str, key: str) -> list[tuple[float, float]]:
    return [
        (row[axis], row[key])
        for row in rows
        if "not_measured" not in row and row.get(key) is not None
    ]


def table(
    rows: Sequence[Mapping[str, Any]], series: str, fitted: Mapping[str, float | None]
) -> str:
    """The series' rows, and the fitted exponent of each measure under its column."""
    axis, label = SERIES[series]
    header = [
        label,
        "pods",
        "pods/s",
        "p99 to all bound (s)",
        "engine cycles",
        *(f"{title} ({unit})" for _, title, unit in MEASURES),
        "partial Jobs",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [f"{row[axis]:,}", f"{row['pods']:,}"]
        if "not_measured" in row:
            cells += [f"not measured: {row['not_measured']}"] + [""] * (len(header) - 3)
        else:
            cells += [
                f"{row['throughput_pods_bound_per_s']:g}",
                f"{row['p99_time_to_all_bound_s']:g}",
                _cell(row.get("engine_cycles")),
                *(_cell(row.get(key)) for key, _, _ in MEASURES),
                str(row["partially_started_jobs_max"]),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    growth = [_cell(fitted.get(key)) for key, _, _ in MEASURES]
    lines.append("| " + " | ".join(["growth exponent", "", "", "", "", *growth, ""]) + " |")
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def render(results: Mapping[str, Any]) -> str:
    machine = results["machine"]
    fitted = exponents(results)
    lines = [
        begin_marker(NAME),
        "",
        f"Measured {results['date']} on {machine['cpus']} x {machine['cpu_model']}, "
        f"Kubernetes {machine['kubernetes']}, KWOK {machine['kwok']}. A growth exponent "
        "k says the measure grows as (nodes or waiting gangs) to the power k: the slope "
        "of the least-squares line of log(measure) on log(nodes or waiting gangs).",
    ]
    captions = {
        "nodes": "Against nodes: the default burst with its Jobs scaled with the nodes "
        "(demand 39% of capacity at every size).",
        "waiting": "Against waiting gangs: the default burst at 500 nodes while that many "
        "gangs wait for a full pool of nodes.",
    }
    for series in SERIES:
        if series in results:
            lines += ["", captions[series], "", table(results[series], series, fitted[series])]
    lines += [
        "",
        f"![Cost against nodes and waiting gangs]({PLOT.relative_to(DOCS.parent)})",
        "",
        end_marker(NAME),
    ]
    return "\n".join(lines)


def plot(results: Mapping[str, Any], path: Path = PLOT) -> None:
    """One row of panels per series, one panel per measure, against a log-scaled axis."""
    present = [series for series in SERIES if series in results]
    figure, axes = plt.subplots(
        len(present),
        len(PANELS),
        figsize=(15, 3.6 * len(present)),
        constrained_layout=True,
        squeeze=False,
    )
    fitted = exponents(results)
    for row_axes, series in zip(axes, present, strict=True):
        axis_key, label = SERIES[series]
        rows = results[series]
        for axis, (title, unit, keys) in zip(row_axes, PANELS, strict=True):
            for key in keys:
                points = _points(rows, axis_key, key)
                name = "p99 at most" if "p99" in key else "mean" if len(keys) > 1 else "measured"
                axis.plot(
                    [x for x, _ in points],
                    [y for _, y in points],
                    marker="o",
                    label=f"{name}, k = {_cell(fitted[series].get(key))}",
                )
            axis.set_xscale("log")
            if len(keys) > 1:
                axis.set_yscale("log")
            else:
                axis.set_ylim(bottom=0)
            ticks = [row[axis_key] for row in rows]
            axis.set_xticks(ticks, [f"{tick:,}" for tick in ticks])
            axis.xaxis.set_minor_locator(NullLocator())
            axis.set_title(title)
            axis.set_xlabel(label)
            axis.set_ylabel(unit)
            axis.legend(fontsize="small")
            axis.grid(alpha=0.3)
    figure.suptitle("Muster's cost against nodes (the default burst, scaled) and waiting gangs")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write(results: Mapping[str, Any], docs: Path = DOCS, image: Path = PLOT) -> None:
    """The section of growth.json in `docs`, and its plot."""
    replace_section(NAME, render(results), docs)
    plot(results, image)
