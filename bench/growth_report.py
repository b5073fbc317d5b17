"""bench/results/growth.json as a table and a plot in docs/performance.md.

The table goes between the markers of growth.json (as bench/report.py does for the
end-to-end results), and the plot, four panels of cost against cluster size, to
docs/images/cost-growth.png.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: the plot only goes to a file

import matplotlib.pyplot as plt

from bench.sections import DOCS, ROOT, begin_marker, end_marker, replace_section

NAME = "growth.json"
RESULTS = ROOT / "bench" / "results" / NAME
PLOT = DOCS.parent / "images" / "cost-growth.png"

# (key in a row, what it is, its unit) for each panel of the plot and column of the table.
MEASURES = (
    ("operator_cpu_s_per_1000_pods", "operator CPU per 1,000 pods", "s"),
    ("api_requests_per_pod", "operator API requests per pod", "requests"),
    ("engine_ms_per_cycle", "engine time per cycle (mean)", "ms"),
    ("peak_rss_mib", "operator peak RSS", "MiB"),
)


def cost(nodes: int, jobs: int, pods: int, figures: Mapping[str, Any]) -> dict[str, Any]:
    """One size's row, from the figures bench/e2e.py measured for it."""
    row: dict[str, Any] = {"nodes": nodes, "jobs": jobs, "pods": pods}
    if "not_measured" in figures:
        return {**row, "not_measured": figures["not_measured"]}
    operator = figures["operator"]
    cycles = operator.get("scheduling_cycles") or {}
    return {
        **row,
        "pods_bound": figures["pods_bound"],
        "throughput_pods_bound_per_s": figures["throughput_pods_bound_per_s"],
        "p99_time_to_all_bound_s": figures["time_to_all_bound_s"]["p99"],
        "partially_started_jobs_max": figures["partially_started_jobs"]["max_at_once"],
        "operator_cpu_s_per_1000_pods": round(operator["cpu_seconds"] / pods * 1000, 2),
        "api_requests_per_pod": round(operator["api_requests"] / pods, 2),
        "engine_cycles": cycles.get("cycles"),
        "engine_ms_per_cycle": (
            None if cycles.get("mean_s") is None else round(cycles["mean_s"] * 1000, 1)
        ),
        "peak_rss_mib": operator["peak_rss_mib"],
        "rollbacks": operator.get("rollbacks"),
        "api_requests_by_call": operator.get("api_requests_by_call"),
        "ended_because": figures["ended_because"],
    }


def table(rows: list[Mapping[str, Any]]) -> str:
    header = [
        "nodes",
        "Jobs",
        "pods",
        "pods/s",
        "p99 to all bound (s)",
        *(f"{title} ({unit})" for _, title, unit in MEASURES),
        "partial Jobs",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if "not_measured" in row:
            cells = [f"{row['nodes']:,}", f"{row['jobs']:,}", f"{row['pods']:,}"]
            cells += [f"not measured: {row['not_measured']}"] + [""] * (len(header) - 4)
        else:
            cells = [
                f"{row['nodes']:,}",
                f"{row['jobs']:,}",
                f"{row['pods']:,}",
                f"{row['throughput_pods_bound_per_s']:g}",
                f"{row['p99_time_to_all_bound_s']:g}",
                *(_cell(row.get(key)) for key, _, _ in MEASURES),
                str(row["partially_started_jobs_max"]),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def render(results: Mapping[str, Any]) -> str:
    machine = results["machine"]
    return "\n".join(
        [
            begin_marker(NAME),
            "",
            f"Measured {results['date']} on {machine['cpus']} x {machine['cpu_model']}, "
            f"Kubernetes {machine['kubernetes']}, KWOK {machine['kwok']}: the default burst "
            "with its Jobs scaled with the nodes (demand 39% of capacity at every size).",
            "",
            table(results["sizes"]),
            "",
            f"![Cost against cluster size]({PLOT.relative_to(DOCS.parent)})",
            "",
            end_marker(NAME),
        ]
    )


def plot(rows: list[Mapping[str, Any]], path: Path = PLOT) -> None:
    """Four panels, one per measure, against the number of nodes."""
    measured = [row for row in rows if "not_measured" not in row]
    figure, axes = plt.subplots(2, 2, figsize=(9, 6), constrained_layout=True)
    for axis, (key, title, unit) in zip(axes.flat, MEASURES, strict=True):
        points = [(row["nodes"], row[key]) for row in measured if row.get(key) is not None]
        axis.plot([x for x, _ in points], [y for _, y in points], marker="o")
        axis.set_xscale("log")
        axis.set_xticks([row["nodes"] for row in rows], [f"{row['nodes']:,}" for row in rows])
        axis.minorticks_off()
        axis.set_title(title)
        axis.set_xlabel("nodes")
        axis.set_ylabel(unit)
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
    figure.suptitle("Muster's cost as the cluster grows (the default burst, scaled)")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write(results: Mapping[str, Any], docs: Path = DOCS, image: Path = PLOT) -> None:
    """The section of growth.json in `docs`, and its plot."""
    replace_section(NAME, render(results), docs)
    plot(results["sizes"], image)
